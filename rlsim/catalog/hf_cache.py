"""A model's config.json where the machine already has it: the local Hugging Face hub cache, or a folder beside
the launch file. Nothing is downloaded.

The cache is where huggingface_hub puts it (huggingface_hub constants.py): ``HF_HUB_CACHE`` when set (the older
``HUGGINGFACE_HUB_CACHE`` too), else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``; a model ``ORG/NAME`` lives
in ``models--ORG--NAME/snapshots/<revision>/config.json`` and ``refs/main`` names the revision a plain
``from_pretrained`` loads, which is the one read when present (else the newest snapshot).
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The hub cache folder, as huggingface_hub resolves it from the environment."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    home = os.environ.get("HF_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".cache" / "huggingface") / "hub"


def cached_config(name: str) -> Path | None:
    """The cached config.json of hub model ``name`` (``ORG/NAME``), or None."""
    parts = name.strip("/").split("/")
    if len(parts) != 2 or not all(parts):
        return None
    repo = cache_root() / f"models--{parts[0]}--{parts[1]}"
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return None
    ref = repo / "refs" / "main"
    if ref.is_file():
        pinned = snapshots / ref.read_text().strip() / "config.json"
        if pinned.is_file():
            return pinned
    found = [p for p in snapshots.glob("*/config.json") if p.is_file()]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def beside(name: str, launch_dir: Path | None) -> Path | None:
    """A config.json for ``name`` beside the launch file: ``name`` as a path relative to its folder, or a folder
    there named as the model's last part (``Qwen/Qwen3-8B`` -> ``Qwen3-8B/config.json``)."""
    if launch_dir is None:
        return None
    tail = name.rstrip("/").rsplit("/", 1)[-1]
    for cand in (launch_dir / name, launch_dir / tail):
        if (cand / "config.json").is_file():
            return cand / "config.json"
        if cand.suffix == ".json" and cand.is_file():
            return cand
    return None
