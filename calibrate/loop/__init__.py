"""The loop: predict before you run, on this machine (``rlsim-calibrate loop``): bench, reference runs, fit,
predictions, held-out runs and validation, each step the command a user would run, in a subprocess.

Modules: ``commands`` (the steps' command lines and running them), ``cli`` (the command, its options and the
order of its steps).

May import: calibrate, rlsim
"""
