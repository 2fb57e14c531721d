"""The machine rlsim itself runs on: worker threads and cores (``threads``), other processes' load
(``machine_load``), a simulation's estimated memory and time before it starts (``footprint``) and progress lines
(``progress``).

May import: rlsim.errors.
"""
