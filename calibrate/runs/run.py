"""Real runs as calibrate reads them: the run log, the measured setup as an rlsim scenario, what was measured.

A run directory holds ``runlog.jsonl`` (the shared schema) and either ``config.json`` + ``environment.json``
from ``rlsim-real train`` or a ``scenario.yaml`` describing the run (logs imported from verl, OpenRLHF, TRL, NeMo
RL). :func:`setup_scenario` turns a run into the scenario of its *setup*: model (the architecture of the folder it
loaded), device, engine, P, G, the algorithm, the LR rule and the step budget, but none of what the run went on to
measure (its response lengths, its speed): a prediction made before a run can know only the setup, and the
lengths come from the profile's length model. ``measured`` reads what the run measured:

* step time: each gap between consecutive ``wall_s`` (eval excluded), the first step (warm-ups) left out; the run's
  step time is their mean, and :func:`measured` gives the phases' mean seconds the same way. ``span_steps``
  limits both to the run's first steps: validate compares a run over the steps its prediction covers (the steps
  to the predicted target), since response lengths change as a run learns and a seed that never reaches the
  target runs on for its whole budget with the short responses of a settled policy;
* samples-to-target: the first crossing of the target by the evaluated metric, linearly interpolated between the
  two evaluations around it (None when the run never reached it), and the ``wall_s`` interpolated at it;
* the budget: the run's ``max_steps`` x B samples, or the samples it logged when its config is unknown.

Runs are pooled (fit, validate) only when they share a setup apart from the batch: :func:`check_same_setup`
refuses runs of different tasks, models, algorithms, engines or LR rules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from calibrate import CalibrateError
from calibrate.bench.fit import MAX_NUM_SEQS_VLLM, REAL_RECOMPUTE, guess_gpu
from calibrate.bench.tables import model_spec_from_folder
from calibrate.learning.curve import samples_to_target
from rlsim.host.machine_load import load_summary
from rlsim.io.files import read_json, read_yaml_mapping
from rlsim.io.runlog import RunLogError, read_jsonl
from rlsim.phases import TIMED_PHASES
from rlsim.workload.lr_rules import lr_scale

# the config keys that make two real runs the same setup (the batch, P, and the seed may differ)
SETUP_KEYS = ("task", "algo", "engine", "lr_rule", "max_new_tokens", "kl_coef", "mini_batches", "epochs")


@dataclass(frozen=True)
class Run:
    path: Path
    records: list[dict[str, Any]]
    config: dict[str, Any]  # config.json of rlsim-real train ({} for an imported log)
    environment: dict[str, Any]
    scenario_file: dict[str, Any] | None  # an imported run's scenario.yaml

    @property
    def kind(self) -> str:
        return "imported" if self.scenario_file is not None else "real"

    @property
    def batch(self) -> int:
        return int(self.records[0]["responses"])

    @property
    def prompts(self) -> int:
        return int(self.records[0]["prompts"])

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def setup(self) -> dict[str, Any]:
        """What must agree between pooled runs."""
        if self.scenario_file is not None:
            model = self.scenario_file.get("model")
            algo = (self.scenario_file.get("algorithm") or {}).get("name", "grpo")
            return {"model": json.dumps(model, sort_keys=True, default=str), "algo": algo}
        return {
            "model": self.environment.get("model_dir"),
            **{k: self.config.get(k) for k in SETUP_KEYS},
        }

    @property
    def budget_samples(self) -> float:
        """Samples the run could spend: ``max_steps`` x B, or what it logged when its budget is unknown."""
        steps = self.config.get("max_steps")
        return float(steps * self.batch) if steps else float(self.records[-1]["cumulative_samples"])

    @property
    def load(self) -> dict[str, Any]:
        return load_summary(self.records)


def load_run(path: str | Path) -> Run:
    p = Path(path)
    log = p / "runlog.jsonl" if p.is_dir() else p
    if not log.is_file():
        raise CalibrateError(f"{p}: no runlog.jsonl; give run directories of rlsim-real train or imported logs")
    p = log.parent
    try:
        records = list(read_jsonl(log))
    except RunLogError as exc:
        raise CalibrateError(str(exc)) from None
    if len(records) < 3:
        raise CalibrateError(f"{log}: {len(records)} step(s); a run needs at least 3 to be compared")
    if len({int(r["responses"]) for r in records}) > 1:
        raise CalibrateError(f"{log}: the batch changes within the run; split it into one run per batch size")
    if (p / "scenario.yaml").is_file():
        raw = read_yaml_mapping(p / "scenario.yaml", "fix it: a mapping of scenario sections describing the run")
        return Run(p, records, {}, {}, raw)
    if (p / "config.json").is_file() and (p / "environment.json").is_file():
        fix = "rerun the run or restore the file"
        cfg, env = read_json(p / "config.json", fix), read_json(p / "environment.json", fix)
        missing = [k for k in (*SETUP_KEYS, "lr0", "reference_batch", "seed", "max_steps") if k not in cfg]
        if missing:
            raise CalibrateError(f"{p}/config.json lacks {', '.join(missing)}; is it from rlsim-real train?")
        if "model_dir" not in env:
            raise CalibrateError(f"{p}/environment.json has no model_dir; rerun with this version of rlsim-real")
        return Run(p, records, cfg, env, None)
    raise CalibrateError(
        f"{p}: needs config.json and environment.json (from rlsim-real train) or a scenario.yaml describing the run"
    )


def check_same_setup(runs: list[Run], what: str) -> None:
    """Refuse to pool runs of different setups (task, model, algorithm, engine, LR rule, ...)."""
    first = runs[0]
    for run in runs[1:]:
        diff = [k for k in first.setup if first.setup[k] != run.setup.get(k)]
        if diff:
            k = diff[0]
            raise CalibrateError(
                f"{what}: {run.name} and {first.name} differ in {k} ({run.setup.get(k)!r} vs {first.setup[k]!r}); "
                "runs of one setup only: give the runs of each task, model and algorithm separately"
            )


def setup_scenario(run: Run, gpu: str | None = None, prompts_per_step: int | None = None) -> dict[str, Any]:
    """The scenario (a dict) of the run's setup, at ``prompts_per_step`` (default: the run's P).

    Lengths are placeholders here (prompt and response of the run's caps): :func:`calibrate.runs.fit.fit_runs` fits
    the length model and the profile puts it in. An imported run's scenario.yaml is its setup, with the log's P and
    G put in.
    """
    p = prompts_per_step or run.prompts
    g = max(1, run.batch // max(1, run.prompts))
    if run.scenario_file is not None:
        raw = json.loads(json.dumps(run.scenario_file))
        raw.setdefault("workload", {}).update({"prompts_per_step": p, "group_size": g})
        return raw
    cfg = run.config
    prompt_cap = max(1, max(int(r["prompt_tokens"]) // max(1, int(r["responses"])) for r in run.records))
    engine: dict[str, Any] = {"gpu_memory_utilization": 0.9}
    if cfg["engine"] == "hf":
        # transformers' generate: the whole step in one batch, decoded to its longest response, no paging
        engine.update(
            max_num_seqs=65536,
            static_batching=True,
            block_size=1,
            chunked_prefill=False,
            prefix_caching=False,
            max_num_batched_tokens=100_000_000,
        )
    else:
        engine["max_num_seqs"] = int(run.environment.get("engine_max_num_seqs") or MAX_NUM_SEQS_VLLM)
    # the engine that was measured: only vLLM on a GPU sleeps around training (real/engines/vllm_engine.py,
    # enable_sleep_mode); transformers' generate and vLLM on a CPU keep their weights where they are, so the
    # colocated sleep / wake (host copies and rlsim's default 2 s per step) does not exist for them
    sleeps = cfg["engine"] == "vllm" and not str(run.environment.get("device", "cpu")).startswith("cpu")

    return {
        "name": f"{Path(str(cfg.get('task', 'run'))).name.replace(':', '_')}_{cfg['algo']}_{cfg['engine']}",
        "model": model_spec_from_folder(run.environment["model_dir"]),
        "hardware": {
            "gpu": gpu or guess_gpu(str(run.environment.get("device", "cpu"))),
            "num_gpus": 1,
            "placement": "colocated",
        },
        "engine": engine,
        "workload": {
            "prompts_per_step": p,
            "group_size": g,
            "prompt_length": {"dist": "fixed", "tokens": prompt_cap},
            "response_length": {"dist": "fixed", "tokens": int(cfg["max_new_tokens"])},
            "max_prompt_tokens": prompt_cap,
            "max_response_tokens": int(cfg["max_new_tokens"]),
        },
        "algorithm": {
            "name": cfg["algo"],
            "mini_batches_per_step": cfg["mini_batches"],
            "epochs_per_step": cfg["epochs"],
            "kl_reference": cfg["kl_coef"] > 0,
        },
        "schedule": {"mode": "sync-colocated"},
        "learning": {
            # lr0 at the run's batch: the learning section's reference batch is the batch its curve was measured at
            "lr0": cfg["lr0"] * lr_scale(cfg["lr_rule"], run.batch, cfg["reference_batch"]),
            "reference_batch": run.batch,
            "lr_rule": cfg["lr_rule"],
        },
        "run": {"steps": len(run.records), "max_steps": int(cfg["max_steps"]), "seed": 0},
        "weight_sync": {"engine_sleeps": sleeps},
        # rlsim-real's trainer pads the step's batch to its longest sequence (real/update.py batch_tensors)
        # and keeps every activation (no checkpointing)
        "training": {"sequence_packing": False, "pad_to_longest": True, "activation_recompute": REAL_RECOMPUTE},
    }


def step_times(run: Run, span_steps: int | None = None) -> np.ndarray:
    """The run's step times: gaps between consecutive ``wall_s``, the first step (warm-ups) left out; with
    ``span_steps``, those of steps 2..span_steps only (at least one)."""
    gaps = np.diff(np.array([r["wall_s"] for r in run.records], float))
    return gaps[: max(1, span_steps - 1)] if span_steps is not None else gaps


def eval_points(run: Run) -> tuple[np.ndarray, np.ndarray]:
    pts = [(r["cumulative_samples"], r["eval_metric"]) for r in run.records if r.get("eval_metric") is not None]
    if not pts:
        return np.zeros(0), np.zeros(0)
    xs, ys = zip(*pts)
    return np.array(xs, float), np.array(ys, float)


def measured(run: Run, target: float | None, span_steps: int | None = None) -> dict[str, Any]:
    steps = step_times(run, span_steps)
    recs = run.records[1 : 1 + len(steps)]
    out: dict[str, Any] = {
        "step_time_s": float(steps.mean()),
        "steps_compared": len(steps),
        "samples_per_s": run.batch / float(steps.mean()),
        "phase_time_s": {
            p.value: float(np.mean([r["timing_s"].get(p.value, 0.0) for r in recs])) for p in TIMED_PHASES
        },
        "samples_to_target": None,
        "time_to_target_s": None,
        "budget_samples": run.budget_samples,
        "load": run.load,
    }
    if target is not None:
        xs, ys = eval_points(run)
        n = samples_to_target(xs, ys, target) if xs.size else None
        if n is not None:
            cum = np.array([r["cumulative_samples"] for r in run.records], float)
            walls = np.array([r["wall_s"] for r in run.records], float)
            out["samples_to_target"] = float(n)
            out["time_to_target_s"] = float(np.interp(n, cum, walls))
    return out
