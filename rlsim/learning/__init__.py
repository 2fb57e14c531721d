"""The learning side: samples-to-target from the learning model (``model``: the sigmoid curve in samples, the
batch and LR-rule multipliers, staleness, stalls) and time-to-target with its band on a timeline (``target``). Pure
functions of the scenario's learning section and numbers; nothing here simulates.

May import: rlsim.schema, rlsim.catalog, rlsim.engine, rlsim.io, rlsim.workload, rlsim.errors, rlsim.phases.
"""
