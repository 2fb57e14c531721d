"""What each step processes, as the systems see it: the lengths of prompts and responses, how they drift and
move in phases with training progress (``lengths``), and the learning-rate rules that set a step's learning
rate from its batch (``lr_rules``, the one vocabulary of ``learning.lr_rule``). Functions of the scenario's
sections, which they take as arguments (their types are imported for annotations only).

May import: rlsim.schema, rlsim.errors, rlsim.phases.
"""
