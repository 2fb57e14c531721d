"""Framework configurations in and out of rlsim scenarios: one module per framework, each with its mapping table."""
