"""TRL's releases: the GRPOConfig defaults of every release from 0.14.0 (the first with GRPOTrainer), read from
TRL's source at its tags by scripts/trl_defaults.py into ``trl_defaults.yaml``; which release a config's
``trl_version`` selects, the keys a release lacks, and the table of what changes between releases
(docs/import-config.md). What a release's options mean for the mapping is in :mod:`rlsim.frameworks.trl.mapping`.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import ImportConfigError, Source
from rlsim.frameworks.common import version_tuple
from rlsim.io.files import load_yaml, read_text

DEFAULTS_FILE = Path(__file__).with_name("trl_defaults.yaml")
FIRST_GRPO = "0.14.0"


@functools.cache
def releases() -> dict[str, dict[str, Any]]:
    """TRL release -> its GRPOConfig defaults and commit (trl_defaults.yaml, by scripts/trl_defaults.py)."""
    data = load_yaml(read_text(DEFAULTS_FILE, "TRL defaults"))
    return {str(v): row for v, row in data["versions"].items()}


def release_for(version: Any) -> tuple[str, list[str]]:
    """The release whose defaults apply to ``version`` (the newest release at or below it), and notes."""
    known = sorted(releases(), key=version_tuple)
    newest = known[-1]
    if version is None:
        return newest, [
            f"trl_version: not given, so TRL {newest}'s defaults (the newest release read); --set trl_version=X.Y.Z "
            "as installed where the config runs (open-r1 pins its TRL in setup.py)"
        ]
    wanted = version_tuple(version)
    if wanted is None:
        raise ImportConfigError(f"trl_version: {version!r} is not a version; give it as 0.18.0")
    if wanted < version_tuple(FIRST_GRPO):
        raise ImportConfigError(
            f"trl_version: TRL {version} has no GRPOTrainer (it came in {FIRST_GRPO}); use a later TRL"
        )
    at_or_below = [v for v in known if version_tuple(v) <= wanted]
    chosen = at_or_below[-1]
    notes = [
        f"trl_version {version}: TRL {chosen}'s defaults (trl_defaults.yaml, commit {releases()[chosen]['commit'][:9]})"
    ]
    if wanted > version_tuple(newest):
        notes.append(f"trl_version {version} is newer than the newest release read ({newest}): its defaults assumed")
    return chosen, notes


def check_release_keys(src: Source, version: str) -> None:
    """Refuse a key the release does not have (TRL's argument parser rejects it)."""
    row = releases()[version]
    known = {k for r in releases().values() for k in r} - {"commit"}
    for key in sorted(known - set(row)):
        if src.flat.get(key) is not None:
            since = [v for v in sorted(releases(), key=version_tuple) if key in releases()[v]]
            when = f"it is in {since[0]}-{since[-1]}" if since else "no release read has it"
            raise ImportConfigError(
                f"{src.name(key)}: TRL {version} has no such option ({when}); remove it or --set trl_version to the "
                "release the config was written for"
            )


def release_changes_table() -> str:
    """Markdown: the releases at which a default rlsim reads changes, or an option comes or goes (docs/import-config.md
    holds this table; a test keeps it in step with trl_defaults.yaml)."""
    lines = ["| TRL release | what changes |", "|---|---|"]
    before: dict[str, Any] | None = None
    for version in sorted(releases(), key=version_tuple):
        row = {k: v for k, v in releases()[version].items() if k != "commit"}
        if before is None:
            text = "first GRPO release: " + ", ".join(f"`{k}` {v}" for k, v in row.items())
        else:
            parts = [f"`{k}` {before[k]} -> {v}" for k, v in row.items() if k in before and before[k] != v]
            parts += [f"`{k}` added ({v})" for k, v in row.items() if k not in before]
            parts += [f"`{k}` removed" for k in before if k not in row]
            text = ", ".join(parts)
        if text:
            lines.append(f"| {version} | {text} |")
        before = row
    return "\n".join(lines) + "\n"
