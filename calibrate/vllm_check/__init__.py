"""A check nobody here tuned: vLLM's own ``vllm bench throughput`` against rlsim's engine model on this machine.

``python -m calibrate.vllm_check -o DIR [--model tiny|smollm2|FOLDER] [--quick] [--repeats N]``

1. **Fit.** The project's generation bench (``rlsim-real bench generation --engine vllm``) on its own grid of
   (concurrency, prompt, response) lengths, fitted with ``calibrate.bench.fit.fit_profile`` (phase ``rollout``).
2. **Measure.** vLLM's own offline benchmark, ``vllm bench throughput --dataset-name random`` (fixed lengths:
   ``--random-range-ratio 0``; EOS ignored, as that benchmark always does), at points whose concurrency, prompt
   and output lengths are all off the bench grid, between and beyond its values. vLLM's defaults are kept except
   that the engine runs in-process, as the project's engine does (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), in
   float32 and eager mode; ``--max-num-seqs`` and ``--max-num-batched-tokens`` are passed at the values vLLM
   itself picks on a CPU for the offline ``LLM`` class (256 and 4096,
   ``EngineArgs.get_batch_defaults``), so that the prediction uses the same numbers. Each point is repeated
   ``--repeats`` times, the repeats interleaved round by round (a slow drift of the shared machine spreads over
   every point).
3. **Predict.** Each point with rlsim's engine model under the fitted profile: one replica receiving the N
   requests at once (``rlsim.engine.replica.simulate_replica``), ``max_num_seqs`` as above and the KV capacity that
   ``VLLM_CPU_KVCACHE_SPACE`` gives (whole 128-token blocks, vLLM's CPU block size).
4. **Compare.** Output tokens per second, measured = N x output length / vLLM's ``elapsed_time`` (what vLLM prints
   as "output tokens/s"; its JSON's ``tokens_per_second`` counts prompt tokens too), predicted = the same tokens /
   the predicted seconds; error = predicted / measured - 1. DIR gets ``check.csv``, ``summary.json`` (median
   |error|, per-point errors, the bench grid, provenance), the bench table, ``profile.json``, vLLM's raw JSON per
   run and the logs.

Statistic of the repeats (``--estimator``), the same for the bench configurations the profile is fitted on and
for the check points: ``min`` (default), the fastest repeat, because on a shared machine other work only ever adds
time (a burst of it slowed single runs here 5-20x, enough to move a least-squares fit on every repeat); or
``median``. ``summary.json`` and ``check.csv`` report the other statistic too. With either, the profile sees the
project's bench alone.

vLLM runs only in subprocesses (``measure``): this package never imports torch or vllm.

Modules: ``plan`` (the bench grid, the check points, vLLM's CPU settings), ``measure`` (the project's bench and
vLLM's benchmark in subprocesses, vLLM's JSON), ``predict`` (rlsim's prediction of a point, the comparison, the
error statistics), ``cli`` (the options and the run: ``rlsim-calibrate vllm-check``, and ``python -m
calibrate.vllm_check`` runs its ``main``).

May import: calibrate, calibrate.bench, rlsim
"""
