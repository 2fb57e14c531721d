"""Bash as launch scripts use it, parsed with bash's grammar and evaluated, never run: :mod:`.parse` (the grammar,
and why this one), :mod:`.expand` (words, parameter expansion, arithmetic), :mod:`.evaluate` (statements,
branches, functions, ``source``). :mod:`rlsim.frameworks.launch` is the adapters' entry (``framework_command``).
"""
