"""The learning side: samples-to-target from the learning model (``model``: the sigmoid curve in samples, the
batch and LR-rule multipliers, staleness, stalls), the curve family that moves its midpoint, exponent and ceiling by
a knob (``family``), the presets it can be re-ranked under (``presets``) and time-to-target with its band on a
timeline (``target``). Pure functions of the scenario's learning section and numbers; nothing here simulates.

May import: rlsim.schema, rlsim.catalog, rlsim.engine, rlsim.io, rlsim.workload, rlsim.errors, rlsim.phases.
"""
