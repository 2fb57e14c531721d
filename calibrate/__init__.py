"""calibrate: fit rlsim's cost and learning models from measurements and validate its predictions.

Modules: tables (bench tables, model folders), costfit (roofline coefficients per phase with uncertainty and
held-out error), learning_fit/ (sigmoid, samples-to-target, critical batch, invariance, B_simple), importers/
(one module per framework: verl, OpenRLHF, TRL, NeMo RL logs), validate (predicted vs measured, HTML report),
vllm_check/ (vLLM's own benchmark against the engine model), cli (``rlsim-calibrate``). Never imports torch or
vLLM.
"""
