"""What a framework file is, from the file alone (``rlsim import-config`` without ``--format``): the entry point a
launch script runs or the keys a YAML / JSON / TOML config holds.

Each adapter recognises its own files (:meth:`~rlsim.frameworks.adapter.FrameworkAdapter.detect`, given a
:class:`Probe` of the file, returns a :class:`Found` or None); :data:`NOT_READ` recognises the frameworks rlsim does
not read, and :data:`NOT_RL` the trainers that are not RL (SFT, DPO, reward models) of every framework, so that
those are refused in one line naming what was recognised. :func:`rlsim.frameworks.registry.recognise` asks them all;
a framework that gets an adapter drops out of NOT_READ by its adapter's name (registering it is enough), and its
signs there become that adapter's default ``detect``.

Nothing is run: a script is searched as text (comments dropped, continued lines joined), a config parsed as data.
The signs, with where they were read (the mirrors' commits):

* verl (volcengine/verl@b178a3c, v0.7.0-125): ``verl.trainer.main_ppo`` (verl/trainer/main_ppo.py), the fully-async
  ``fully_async_main`` (verl/experimental/fully_async_policy/fully_async_main.py); keys under ``actor_rollout_ref``
  (verl/trainer/config/ppo_trainer.yaml). Not RL: verl/trainer/fsdp_sft_trainer.py and sft_trainer.py,
  main_generation.py (offline generation), main_eval.py.
* OpenRLHF (OpenRLHF/OpenRLHF@3c3be62, v0.11.0): openrlhf/cli/train_ppo_ray.py; its argparse dests (flat v0.9.5 or
  dotted). Not RL: openrlhf/cli/train_sft.py, train_dpo.py, train_rm.py (and train_kto / train_prm / train_kd of
  earlier releases).
* TRL (huggingface/trl, every tag v0.14.0..v1.9.0): ``trl grpo``, ``accelerate launch`` / ``torchrun`` of a GRPO
  script; GRPOConfig's own keys (rlsim/frameworks/trl/trl_defaults.yaml). Not RL: ``trl sft`` / ``dpo`` /
  ``reward`` / ``kto``, a launched ``sft.py`` / ``dpo.py``, SFTConfig / DPOConfig / RewardConfig / KTOConfig keys (the
  same file; the TRL adapter's ``detect`` returns those, a Found with ``trainer`` set).
* NeMo RL (NVIDIA-NeMo/RL@7ea279a): examples/run_grpo*.py; a recipe with ``grpo`` and ``policy`` or ``cluster`` (or a
  ``defaults:`` chain leading to one). Not RL: examples/run_sft.py, run_dpo.py, run_rm.py, run_distillation.py, a
  recipe with ``sft`` / ``dpo`` / ``rm`` / ``distillation`` beside ``policy`` and no ``grpo``.
* not read: slime (THUDM/slime@624b824: train.py / train_async.py with its dashed flags, slime/utils/arguments.py:691
  ``--rollout-batch-size``, :700 ``--n-samples-per-prompt``), SkyRL (NovaSky-AI/SkyRL@a956457:
  skyrl/train/entrypoints/main_base.py, ``skyrl_train.entrypoints`` before; ``trainer`` and ``generator``
  sections), prime-rl (PrimeIntellect-ai/prime-rl@559b447: pyproject.toml:51 the ``rl`` script, run as ``uv run rl``
  or ``rl @ X.toml``; ``[orchestrator]``), AReaL (inclusionAI/AReaL@4aef98d: areal/infra/launcher/*.py, once
  areal/launcher; areal/api/cli_args.py:2689 ``allocation_mode``, :2843 ``gconfig`` beside ``actor``), ROLL
  (alibaba/ROLL@8eb27cc: examples/start_*_pipeline.py; roll/configs/worker_config.py:119 ``device_mapping``).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rlsim.io.files import load_yaml

DATA_SUFFIXES = (".yaml", ".yml", ".json", ".toml")


@dataclass(frozen=True)
class Found:
    """A recognised file: the ``framework`` as messages name it, the ``evidence`` (an entry point, keys), the adapter
    that reads it (``fmt``; None: rlsim reads it not) and, for a trainer that is not RL, what it trains."""

    framework: str
    evidence: str
    fmt: str | None = None
    trainer: str | None = None

    def what(self) -> str:
        """``a TRL SFT training file (SFTConfig keys: packing)``: what messages call it."""
        kind = f"{self.framework} {self.trainer}" if self.trainer else self.framework
        article = "an" if kind[0] in "AEIOU" else "a"
        return f"{article} {kind} file ({self.evidence})"


@dataclass(frozen=True)
class Probe:
    """A file as detection sees it: ``commands`` (a script's text, comments dropped, continued lines joined; empty
    for a config) and ``data`` (a config's mapping; empty for a script), with its keys flattened to ``keys``."""

    path: Path
    commands: str
    data: dict[str, Any]
    keys: frozenset[str]

    @classmethod
    def of(cls, path: Path) -> Probe | None:
        """The probe of ``path``; None when it is not a readable file (the reader names that)."""
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        if path.suffix in DATA_SUFFIXES:
            try:
                if path.suffix == ".json":
                    data = json.loads(text)
                elif path.suffix == ".toml":
                    data = tomllib.loads(text)
                else:
                    data = load_yaml(text)
            except (ValueError, yaml.YAMLError) as exc:
                if "duplicate key" not in str(getattr(exc, "problem", "")) or "&" in text:
                    return None
                data = yaml.safe_load(text)  # a key given twice: what it is still shows (its reader decides)
            data = data if isinstance(data, dict) else {}
            return cls(path, "", data, frozenset(_flat_keys(data)))
        text += _sourced(path, text)
        lines = text.replace("\\\r\n", " ").replace("\\\n", " ").splitlines()
        commands = "\n".join(re.sub(r"(^|\s)#.*$", "", line) for line in lines)
        return cls(path, commands, {}, frozenset(_script_keys(commands)))

    def runs(self, *patterns: str) -> str | None:
        """The first text matching one of ``patterns`` (regular expressions) on the script's command lines."""
        for pattern in patterns:
            m = re.search(pattern, self.commands, re.MULTILINE)
            if m:
                return " ".join(m.group(0).split())
        return None

    def has(self, *sections: str) -> list[str]:
        """Those of ``sections`` the config (or the script's overrides) sets: the key or a key under it."""
        return [s for s in sections if any(k == s or k.startswith(s + ".") for k in self.keys)]


def _sourced(path: Path, text: str) -> str:
    """The text of the scripts ``text`` sources (``source X.sh`` / ``. X.sh``) that lie beside ``path``, one level:
    what they run counts as the script's (OpenRLHF's train_nonrl_slurm.sh sources train_dpo_llama.sh)."""
    out = ""
    assigned = dict(
        re.findall(r"^\s*(?:(?:export|readonly|local|declare(?:\s+-\w+)?)\s+)?(\w+)=[\"']?([\w./-]*)", text, re.M)
    )
    for word in re.findall(r"^\s*(?:source|\.)\s+([\w./${}\"'-]+)", text, re.MULTILINE):
        # a plain variable in the name (source ./${training_script}) takes the value the script assigns it
        name = re.sub(r"\$\{?(\w+)\}?", lambda m: assigned.get(m.group(1), m.group(0)), word.strip("\"'"))
        beside = path.parent / name
        if not name.endswith(".sh"):
            continue
        if beside.is_file() and beside.resolve() != path.resolve():
            out += "\n" + beside.read_text(encoding="utf-8", errors="replace")
    return out


def _flat_keys(data: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        out.append(dotted)
        if isinstance(value, dict):
            out += _flat_keys(value, dotted)
    return out


def _script_keys(commands: str) -> list[str]:
    """The keys a script's words set: Hydra ``a.b=v`` (``+`` / ``++`` stripped) and argparse ``--a_b``."""
    hydra = re.findall(r"(?:^|\s)\+{0,2}([A-Za-z_][\w]*(?:\.[\w]+)+)=", commands)
    flags = re.findall(r"(?:^|\s)--([A-Za-z][\w.\-]*)", commands)
    return hydra + flags


def _entry(framework: str, *patterns: str, trainer: str | None = None) -> Callable[[Probe], Found | None]:
    def find(probe: Probe) -> Found | None:
        hit = probe.runs(*patterns)
        return Found(framework, hit, trainer=trainer) if hit else None

    return find


def _keys(framework: str, *needed: str, trainer: str | None = None) -> Callable[[Probe], Found | None]:
    """Found when the config sets every one of ``needed`` (a key or a section)."""

    def find(probe: Probe) -> Found | None:
        got = probe.has(*needed)
        return Found(framework, f"{', '.join(got)} keys", trainer=trainer) if len(got) == len(needed) else None

    return find


def _any_key(framework: str, suffix: str) -> Callable[[Probe], Found | None]:
    def find(probe: Probe) -> Found | None:
        hits = sorted(k for k in probe.keys if k == suffix or k.endswith("." + suffix))
        return Found(framework, f"{', '.join(hits[:3])} keys") if hits else None

    return find


# frameworks rlsim does not read, by the name their adapter would register (registering one drops its entry);
# each sign: an entry point on a script's command lines, or keys of a config
_SLIME_FLAGS = r"--(?:rollout-batch-size|n-samples-per-prompt|actor-num-gpus-per-node|rollout-num-gpus)\b"
NOT_READ: dict[str, tuple[Callable[[Probe], Found | None], ...]] = {
    "slime": (
        lambda p: (
            Found("slime", f"train.py with {p.runs(_SLIME_FLAGS)}")
            if p.runs(r"\btrain(?:_async)?\.py\b") and p.runs(_SLIME_FLAGS)
            else None
        ),
    ),
    "skyrl": (
        _entry("SkyRL", r"\bskyrl(?:_train|\.train)\.entrypoints(?:\.\w+)*"),
        _keys("SkyRL", "trainer", "generator"),
    ),
    "prime-rl": (
        _entry("prime-rl", r"\buv\s+run\s+rl\b", r"(?:^|\s)rl\s+@\s*\S+\.toml"),
        _keys("prime-rl", "orchestrator"),
    ),
    "areal": (
        _entry("AReaL", r"\bareal(?:\.infra)?\.launcher(?:\.\w+)*"),
        _keys("AReaL", "allocation_mode"),
        _keys("AReaL", "gconfig", "actor"),  # inclusionAI/AReaL examples/math/gsm8k_grpo.yaml
        _keys("AReaL", "scheduler.type"),  # its example scripts: --config X.yaml scheduler.type=local
    ),
    "roll": (
        _entry("ROLL", r"\broll\.pipeline(?:\.\w+)*", r"\bstart_\w+_pipeline\.py\b"),
        _any_key("ROLL", "device_mapping"),
    ),
}


# trainers that are not RL, of every framework
NOT_RL: tuple[Callable[[Probe], Found | None], ...] = (
    _entry("verl", r"\bverl\.trainer\.(?:fsdp_sft_trainer|sft_trainer)\b", trainer="SFT training"),
    _entry("verl", r"\bverl\.trainer\.main_generation\w*", trainer="offline generation"),
    _entry("verl", r"\bverl\.trainer\.main_eval\b", trainer="evaluation"),
    _keys("verl", "model.partial_pretrain", trainer="SFT training"),
    _entry("OpenRLHF", r"\bopenrlhf\.cli\.train_sft\b", trainer="SFT training"),
    _entry("OpenRLHF", r"\bopenrlhf\.cli\.train_(?:dpo|kto)\b", trainer="preference (DPO / KTO) training"),
    _entry("OpenRLHF", r"\bopenrlhf\.cli\.train_(?:rm|prm)\b", trainer="reward-model training"),
    _entry("OpenRLHF", r"\bopenrlhf\.cli\.train_kd\b", trainer="distillation"),
    _entry("OpenRLHF", r"\bopenrlhf\.cli\.serve_rm\b", trainer="reward-model server (no training)"),
    _entry("DeepSpeed", r"\bdeepspeed\.checkpoint\.\w+", trainer="checkpoint conversion (no training)"),
    _entry("TRL", r"\btrl\s+sft\b", r"\b(?:accelerate\s+launch|torchrun)\b.*\bsft\.py\b", trainer="SFT training"),
    _entry(
        "TRL", r"\btrl\s+(?:dpo|kto)\b", r"\b(?:accelerate\s+launch|torchrun)\b.*\bdpo\.py\b", trainer="DPO training"
    ),
    _entry("TRL", r"\btrl\s+reward\b", trainer="reward-model training"),
    _entry("NeMo RL", r"\brun_sft\w*\.py\b", trainer="SFT training"),
    _entry("NeMo RL", r"\brun_dpo\w*\.py\b", trainer="DPO training"),
    _entry("NeMo RL", r"\brun_rm\w*\.py\b", trainer="reward-model training"),
    _entry("NeMo RL", r"\brun_distillation\w*\.py\b", trainer="distillation"),
    _keys("NeMo RL", "sft", "policy", trainer="SFT training"),
    _keys("NeMo RL", "dpo", "policy", trainer="DPO training"),
    _keys("NeMo RL", "rm", "policy", trainer="reward-model training"),
    _keys("NeMo RL", "distillation", "policy", trainer="distillation"),
)


def first(probe: Probe, signs: tuple[Callable[[Probe], Found | None], ...]) -> Found | None:
    for sign in signs:
        found = sign(probe)
        if found is not None:
            return found
    return None
