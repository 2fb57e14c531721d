"""The per-step metrics that real RL frameworks log, read into rlsim run-log records (:mod:`rlsim.io.records`),
for ``rlsim check`` and ``rlsim-calibrate import``.

``rlsim.frameworks.logs.read.import_log(path, fmt)`` reads a metrics dump of a verl, OpenRLHF, TRL (GRPOTrainer) or
NeMo RL run and returns an :class:`~rlsim.frameworks.logs.read.ImportResult`: one valid run-log record per training
step, plus ``problems``, the (line number, reason) of every line that could not be used. A broken line never stops
the import; it is reported and skipped. It returns data; ``rlsim-calibrate import`` writes the run log.

Modules: one per framework (``verl``, ``openrlhf``, ``trl``, ``nemo_rl``), each with its mapping table (framework
log keys -> run-log fields) at its top and the sources of those names in its docstring; ``core`` (reading lines,
grouping rows into steps, the helpers the mappings use); ``read`` (:func:`~rlsim.frameworks.logs.read.import_log`,
the one place a record is built). Each framework adapter names its module here (``Adapter.log_importer``); inside,
imports go one way: core <- the framework modules; registry <- read.

Input files
-----------
* JSON Lines: one metrics object per line, as wandb/console/file loggers dump them. Nested objects are flattened
  with ``/`` (``{"timing_s": {"gen": 1}}`` is ``timing_s/gen``). verl's ``file`` logger envelope
  ``{"step": N, "data": {...}}`` is unwrapped.
* CSV (``.csv``): a header row of metric names; empty cells are "not logged".

Rows that carry the same step number are merged (wandb, mlflow and NeMo RL log one step in several calls: train
metrics, timings, validation). A second row for a step that already has its step timer is a *duplicated step*.
Rows without any step number are attached to the next row that has one (TRL's profiling timers are logged to
wandb without a step). A file without any step key is read as one step per row, numbered 1, 2, ...
Step keys are each framework module's ``STEP_KEYS``; wandb's ``_step`` is used only for verl and NeMo RL, which
pass their trainer step to wandb (OpenRLHF and TRL call ``wandb.log`` without a step, so there ``_step`` counts
log calls). If the framework counts steps from 0 (a step-0 row with the step timer), every step is shifted by +1.
A row at or before step 0 that only holds eval metrics is the evaluation before training: it becomes
``initial_eval_metric``, also written into the first record as ``eval_metric_initial`` (as real runs log it).

Common rules
------------
* ``wall_s`` is the cumulative step time *excluding eval*. When the eval timer may run inside the step timer
  (verl ``testing``, NeMo RL validation), it is subtracted only if the step's other timers plus eval fit in the step
  time (within 2 % + 0.5 s); otherwise the step timer is taken to exclude eval already. Skipped (broken) steps add
  nothing to ``wall_s`` nor ``cumulative_samples``; their step numbers are missing from the records.
* Responses per step: the framework's logged count (or the derivation in its module, used only if it lands within
  0.1 % of an integer); else ``prompts_per_step x group_size``; prompts: ``prompts_per_step``, else responses /
  ``group_size``. If neither is known, :class:`~rlsim.errors.LogImportError` asks for both options.
* Tokens: frameworks log means only, so ``response_tokens = round(mean response length x responses)`` and
  ``prompt_tokens = round(mean prompt length x responses)`` (a prompt counts once per response, as in rlsim's own
  run logs). ``None`` when the mean is not logged.
* ``source_metrics`` keeps every numeric metric the mapping did not consume (eval keys are kept too, as
  ``eval_metric`` is a reduction of them), under its original name. Extra keys: ``step_time_s``, ``source_format``,
  ``source_line``.

May import: rlsim.frameworks.registry (which adapter reads which format), rlsim.io, rlsim.errors, rlsim.phases.
"""
