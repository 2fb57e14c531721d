"""real: real GRPO/PPO runs and microbenchmarks on torch and vLLM, producing rlsim's measurements.

Modules: tasks (seeded tasks with verifiable rewards), models (tiny Llama, local folders, SmolLM2 from GGUF),
engines (hf, vllm), algos (GRPO/PPO losses), config (the run's configuration and flags), update (log-prob passes
and the GRPO/PPO update steps), checkpoint (checkpoints and resuming), train (the loop and its run log),
records (the step-record fields every loop fills), fully_async (generation in a process of its own), offload (an
optimizer whose state lives in host buffers), stale (stale-policy runs), timing (phase timers), errors,
environment (versions and device), bench (microbenchmarks), cli (``rlsim-real``). torch, transformers and vLLM
are imported inside functions, so ``import real`` is cheap.
"""
