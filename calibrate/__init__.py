"""calibrate: fit rlsim's cost and learning models from measurements and validate predictions (not built yet)."""
