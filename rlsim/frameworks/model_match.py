"""A model name the catalog does not hold verbatim, matched by its parts: a vision-language model refused by family
(:func:`refuse_vision_language`), a fine-tuned checkpoint resolved to the catalog model whose name it contains
(:func:`fine_tune_base`).

Names are compared as runs of dash-separated tokens, case ignored, after the organisation and any folders:
``PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT`` is the tokens ``qwen3 0.6b reverse text sft`` and contains the
catalog's ``Qwen3-0.6B`` as its first two; ``Qwen2.5-Coder-32B`` does not contain ``Qwen2.5-32B`` (a family that
may differ in shape is listed in rlsim/catalog/same_architecture.yaml with its source instead).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Any

import yaml

from rlsim import catalog
from rlsim.frameworks.adapter import ImportConfigError


def tokens(name: str) -> tuple[str, ...]:
    """The dash-separated tokens of a name's last path part, lower case."""
    tail = name.rstrip("/").rsplit("/", 1)[-1]
    return tuple(t for t in tail.lower().split("-") if t)


def _find(run: tuple[str, ...], within: tuple[str, ...]) -> int:
    """Where ``run`` starts in ``within`` as whole tokens, else -1."""
    n = len(run)
    return next((i for i in range(len(within) - n + 1) if n and within[i : i + n] == run), -1)


@cache
def _vision_language() -> dict[str, dict[str, Any]]:
    text = resources.files(catalog).joinpath("vision_language.yaml").read_text()
    return yaml.load(text, Loader=catalog.LOADER) or {}


def refuse_vision_language(name: str, key: str, forms: dict[str, str]) -> None:
    """Refuse (one line) a model of a vision-language family (rlsim/catalog/vision_language.yaml): rlsim does not
    price the vision encoder or the image tokens in prefill; names the text model of its size where the catalog
    holds one. Returns when the name is of no such family."""
    toks = tokens(name)
    for family, entry in _vision_language().items():
        start = _find(tokens(family), toks)
        if start < 0:
            continue
        text = str(entry.get("text") or "")
        rest = name.rstrip("/").rsplit("/", 1)[-1].split("-")[start + len(tokens(family)) :]
        sizes = [t for t in rest[:2] if re.fullmatch(r"A?\d+(\.\d+)?[bB]", t)]  # 7B; 30B-A3B (an MoE)
        named = [f"{text}-{'-'.join(sizes[:n])}" for n in (2, 1) if len(sizes) >= n] + [text]
        candidate = next((c for c in named if text and c in forms), "")
        hint = (
            f"to price its language model alone, --set {key}={forms[candidate]} (the text model of its family and size)"
            if candidate in forms
            else f"the catalog holds no text model of it; --set {key}=PATH with its config.json prices the language "
            "model alone"
        )
        raise ImportConfigError(
            f"{key}: {name!r} is a vision-language (multimodal) model ({family}): rlsim prices text language models "
            f"and models neither the vision encoder nor the image tokens it adds to each prefill; {hint} "
            "(rlsim/catalog/vision_language.yaml gives the source)"
        )


def fine_tune_base(name: str, key: str, forms: dict[str, str], same: dict[str, dict[str, Any]]) -> tuple[str, str]:
    """(catalog name, note) for a checkpoint whose name contains a catalog model's name or alias, or a
    same_architecture.yaml name, as a whole run of tokens (a fine-tune keeps its base's shapes); ("", "") when none
    does. A run inside a longer matching run is not a match of its own; two distinct catalog models are refused,
    naming both."""
    toks = tokens(name)
    spans: dict[tuple[int, int], tuple[str, str]] = {}  # (start, end) -> (catalog name, the form matched)
    for form, target in forms.items():
        run = tokens(form)
        start = _find(run, toks)
        if start >= 0 and len(run) >= 2:  # one token (a bare "Qwen3") names no architecture
            spans.setdefault((start, start + len(run)), (target, form))
    for known, entry in same.items():
        run = tokens(known)
        start = _find(run, toks)
        if start >= 0 and len(run) >= 2:
            spans.setdefault((start, start + len(run)), (str(entry["as"]), known))
    outer = {s: v for s, v in spans.items() if not any(o != s and o[0] <= s[0] and s[1] <= o[1] for o in spans)}
    found = {target: form for target, form in outer.values()}
    if not found:
        return "", ""
    if len(found) > 1:
        both = " and ".join(f"{t} (its {f!r})" for t, f in sorted(found.items()))
        raise ImportConfigError(
            f"{key}: {name!r} names more than one catalog model: {both}; --set {key}=NAME with the one it was "
            "fine-tuned from"
        )
    ((target, form),) = found.items()
    note = f"model: {name} simulated as catalog model {target} (its name contains {form!r}: a fine-tune keeps its "
    return target, note + "base's architecture)"
