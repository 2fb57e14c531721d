"""Files and formats: the run-log record and the bench table, each defined once (``records``), reading and
writing run logs (``runlog``), atomic writes and text inputs (``files``), and what counts as a number (``numbers``).

May import: rlsim.errors, rlsim.phases.
"""
