"""TRL's GRPOConfig defaults at each release, read from TRL's own source: writes rlsim/frameworks/trl/trl_defaults.yaml.

    python scripts/trl_defaults.py TRL_GIT_DIR [-o rlsim/frameworks/trl/trl_defaults.yaml]

TRL_GIT_DIR is a clone of https://github.com/huggingface/trl with its tags. For every release tag from v0.14.0
(the first with GRPOTrainer) the script parses ``trl/trainer/grpo_config.py`` (and ``trl/trainer/base_config.py``
where the tag has it: TRL 1.x moved some overrides of transformers' TrainingArguments there) with ``ast``, never
importing or running TRL, and records the default of every key rlsim's TRL mapping reads (``KEYS``). A key the
tag's GRPOConfig does not declare takes transformers' TrainingArguments default when it is one of those
(``TRAINING_ARGUMENTS``), and is otherwise recorded absent: that TRL release has no such option (for example
``vllm_mode`` before 0.18, or ``max_prompt_length`` after 0.28), which the importer reads as the behaviour of that
release (rlsim.frameworks.trl.releases).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

import yaml

KEYS = (
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "steps_per_generation",
    "generation_batch_size",
    "num_generations",
    "num_iterations",
    "use_vllm",
    "vllm_mode",
    "vllm_tensor_parallel_size",
    "vllm_gpu_memory_utilization",
    "vllm_importance_sampling_correction",
    "max_prompt_length",
    "max_completion_length",
    "learning_rate",
    "beta",
    "gradient_checkpointing",
)
# transformers.TrainingArguments (src/transformers/training_args.py; unchanged across the releases TRL's GRPO
# versions depend on): what a GRPOConfig inherits when it does not override the field
TRAINING_ARGUMENTS = {
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "learning_rate": 5e-5,
    "gradient_checkpointing": False,
}
FIRST = (0, 14, 0)
OUT = Path(__file__).resolve().parents[1] / "rlsim" / "frameworks" / "trl" / "trl_defaults.yaml"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _show(repo: Path, tag: str, path: str) -> str | None:
    proc = subprocess.run(["git", "-C", str(repo), "show", f"{tag}:{path}"], capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else None


def class_defaults(source: str, names: tuple[str, ...]) -> dict[str, object]:
    """``{field: default}`` of the dataclass fields declared in the classes ``names`` (later names win)."""
    out: dict[str, object] = {}
    tree = ast.parse(source)
    for name in names:
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ClassDef) and node.name == name):
                continue
            for stmt in node.body:
                if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                    continue
                value = stmt.value
                if isinstance(value, ast.Call):  # field(default=...)
                    value = next((k.value for k in value.keywords if k.arg == "default"), None)
                if value is None:
                    continue
                out[stmt.target.id] = ast.literal_eval(value)
    return out


def defaults_at(repo: Path, tag: str) -> dict[str, object]:
    grpo = _show(repo, tag, "trl/trainer/grpo_config.py")
    if grpo is None:
        raise SystemExit(f"{tag}: has no trl/trainer/grpo_config.py")
    base = _show(repo, tag, "trl/trainer/base_config.py") or ""  # BaseConfig (0.2x), _BaseConfig (1.x)
    declared = class_defaults(base, ("BaseConfig", "_BaseConfig"))
    declared.update(class_defaults(grpo, ("GRPOConfig",)))
    row: dict[str, object] = {"commit": _git(repo, "rev-list", "-n", "1", tag).strip()}
    for key in KEYS:
        if key in declared:
            row[key] = declared[key]
        elif key in TRAINING_ARGUMENTS:
            row[key] = TRAINING_ARGUMENTS[key]
    return row


def release_tags(repo: Path) -> list[tuple[tuple[int, int, int], str]]:
    tags = []
    for tag in _git(repo, "tag").split():
        m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)", tag)
        if m and tuple(map(int, m.groups())) >= FIRST:
            tags.append((tuple(map(int, m.groups())), tag))
    return sorted(tags)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trl_git_dir", type=Path, help="a clone of huggingface/trl with its tags")
    parser.add_argument("-o", "--output", type=Path, default=OUT)
    args = parser.parse_args(argv)
    tags = release_tags(args.trl_git_dir)
    if not tags:
        print(f"{args.trl_git_dir}: no release tags from v0.14.0 on; clone TRL with its tags", file=sys.stderr)
        return 2
    versions = {".".join(map(str, v)): defaults_at(args.trl_git_dir, tag) for v, tag in tags}
    header = (
        "# GRPOConfig defaults at each TRL release, generated by scripts/trl_defaults.py from huggingface/trl's tags\n"
        "# (trl/trainer/grpo_config.py and base_config.py, parsed, never run); a key a release lacks is absent.\n"
        f"# TrainingArguments defaults where GRPOConfig does not override them: {TRAINING_ARGUMENTS}\n"
    )
    args.output.write_text(header + yaml.safe_dump({"versions": versions}, sort_keys=False, width=120))
    print(f"wrote {args.output}: {len(versions)} releases, {tags[0][1]} .. {tags[-1][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
