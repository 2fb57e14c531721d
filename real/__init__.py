"""real: real GRPO/PPO runs and microbenchmarks on torch and vLLM that produce rlsim's measurements (not built yet)."""
