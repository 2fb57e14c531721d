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

It also records which releases have each of GRPOConfig's own options (``options``: every field the tag's
GRPOConfig and its TRL base config declare, less transformers' TrainingArguments fields, which every release
accepts), so that a config's keys say which releases it fits, and the TrainingArguments field names
(``training_arguments``, parsed from the installed transformers' ``training_args.py``, or ``--training-args``),
and the options of TRL's trainers that are not RL (``other_trainers``: SFTConfig, DPOConfig, RewardConfig, KTOConfig
over the same tags, less TrainingArguments' fields), so that an SFT or DPO config is told apart from a GRPO one.
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


def class_fields(source: str, names: tuple[str, ...]) -> set[str]:
    """The names of every annotated field declared in the classes ``names``, with a default or without."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name in names:
            out |= {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
    return out


def _sources(repo: Path, tag: str) -> tuple[str, str]:
    grpo = _show(repo, tag, "trl/trainer/grpo_config.py")
    if grpo is None:
        raise SystemExit(f"{tag}: has no trl/trainer/grpo_config.py")
    return grpo, _show(repo, tag, "trl/trainer/base_config.py") or ""  # BaseConfig (0.2x), _BaseConfig (1.x)


BASES = ("BaseConfig", "_BaseConfig")


def options_at(repo: Path, tag: str, training_arguments: set[str]) -> set[str]:
    """GRPOConfig's own options at ``tag``: its fields and its TRL base config's, less TrainingArguments'."""
    grpo, base = _sources(repo, tag)
    return (class_fields(base, BASES) | class_fields(grpo, ("GRPOConfig",))) - training_arguments


def option_ranges(by_release: dict[str, set[str]]) -> dict[str, list[str]]:
    """Option -> the runs of consecutive releases that have it, as "FIRST-LAST" (releases in order)."""
    order = list(by_release)
    out: dict[str, list[str]] = {}
    for option in sorted(set().union(*by_release.values())):
        runs: list[list[str]] = []
        for i, version in enumerate(order):
            if option not in by_release[version]:
                continue
            if runs and order.index(runs[-1][1]) == i - 1:
                runs[-1][1] = version
            else:
                runs.append([version, version])
        out[option] = [f"{a}-{b}" for a, b in runs]
    return out


OTHER_TRAINERS = {"SFTConfig": "sft_config", "DPOConfig": "dpo_config", "RewardConfig": "reward_config"}
OTHER_TRAINERS["KTOConfig"] = "kto_config"


def other_trainer_options(repo: Path, tags: list[str], training_arguments: set[str]) -> dict[str, list[str]]:
    """Config class -> its own options at any of ``tags`` (trl/trainer/<name>.py), less TrainingArguments'."""
    out: dict[str, list[str]] = {}
    for cls, module in OTHER_TRAINERS.items():
        fields: set[str] = set()
        for tag in tags:
            source = _show(repo, tag, f"trl/trainer/{module}.py")
            if source is not None:
                base = _show(repo, tag, "trl/trainer/base_config.py") or ""
                fields |= class_fields(source, (cls,)) | class_fields(base, BASES)
        out[cls] = sorted(fields - training_arguments)
    return out


def training_argument_names(path: Path | None) -> tuple[set[str], str]:
    """transformers' TrainingArguments field names (``training_args.py`` parsed) and where they were read."""
    if path is None:
        import importlib.util

        spec = importlib.util.find_spec("transformers")
        if spec is None or spec.origin is None:
            raise SystemExit("transformers is not installed: give its training_args.py with --training-args")
        path = Path(spec.origin).with_name("training_args.py")
        import importlib.metadata

        where = f"transformers {importlib.metadata.version('transformers')} training_args.py"
    else:
        where = str(path)
    return class_fields(path.read_text(), ("TrainingArguments",)), where


def defaults_at(repo: Path, tag: str) -> dict[str, object]:
    grpo, base = _sources(repo, tag)
    declared = class_defaults(base, BASES)
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
    parser.add_argument("--training-args", type=Path, help="transformers' training_args.py (default: installed)")
    args = parser.parse_args(argv)
    tags = release_tags(args.trl_git_dir)
    if not tags:
        print(f"{args.trl_git_dir}: no release tags from v0.14.0 on; clone TRL with its tags", file=sys.stderr)
        return 2
    versions = {".".join(map(str, v)): defaults_at(args.trl_git_dir, tag) for v, tag in tags}
    training_args, where = training_argument_names(args.training_args)
    options = option_ranges({".".join(map(str, v)): options_at(args.trl_git_dir, t, training_args) for v, t in tags})
    header = (
        "# GRPOConfig defaults at each TRL release, generated by scripts/trl_defaults.py from huggingface/trl's tags\n"
        "# (trl/trainer/grpo_config.py and base_config.py, parsed, never run); a key a release lacks is absent.\n"
        f"# TrainingArguments defaults where GRPOConfig does not override them: {TRAINING_ARGUMENTS}\n"
        f"# Tags read: {', '.join(t for _, t in tags)}.\n"
        "# options: the releases that have each of GRPOConfig's own options (fields less TrainingArguments');\n"
        f"# training_arguments: TrainingArguments' field names ({where}), accepted by every release;\n"
        "# other_trainers: the options of TRL's SFT, DPO, reward and KTO configs at those tags.\n"
    )
    others = other_trainer_options(args.trl_git_dir, [t for _, t in tags], training_args)
    data = {"versions": versions, "options": options, "training_arguments": sorted(training_args)}
    data["other_trainers"] = others
    args.output.write_text(header + yaml.safe_dump(data, sort_keys=False, width=120))
    print(f"wrote {args.output}: {len(versions)} releases, {tags[0][1]} .. {tags[-1][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
