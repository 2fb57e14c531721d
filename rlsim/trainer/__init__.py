"""The trainer side: seconds of each training, log-prob and reference pass under FSDP or Megatron layouts
(``training``), what the trainer holds in GPU memory (``memory``) and the weight sync to the engines (``sync``).

May import: rlsim.schema, rlsim.workload, rlsim.errors, rlsim.phases. The scenario's validation asks
the memory model whether a layout fits. The times read their
coefficients from the scenario's ``costs`` section only; a calibrated profile's are folded into the scenario first.
"""
