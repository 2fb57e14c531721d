"""The machine rlsim itself runs on: worker threads and cores (``threads``), other processes' load
(``machine_load``), a simulation's estimated memory and time before it starts (``footprint``), progress lines
(``progress``), and the one executor that runs a command's tasks on local processes or Ray (``executor``, with its
local pools in ``workers_pool``), used by ``rlsim sweep`` and ``rlsim plan``.

May import: rlsim.errors, rlsim.phases.
"""
