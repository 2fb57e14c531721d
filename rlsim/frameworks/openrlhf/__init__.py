"""OpenRLHF (OpenRLHF/OpenRLHF) as a framework adapter (:data:`ADAPTER`): :mod:`~rlsim.frameworks.openrlhf.args`
reads the ``train_ppo_ray`` arguments as a user has them (a launch script, an argument list, YAML / JSON; the flat
names of v0.9.5 as their dotted successors), :mod:`~rlsim.frameworks.openrlhf.mapping` maps them to a scenario (its
docstring says what was read, at which commit), :mod:`~rlsim.frameworks.openrlhf.emit` writes a planned scenario
back as arguments.

May import: rlsim.frameworks' shared modules (adapter, common, launch, sglang) and the layers below frameworks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsim.frameworks.adapter import EmitContext, FrameworkAdapter, Row, Source
from rlsim.frameworks.detect import Found, Probe
from rlsim.frameworks.openrlhf import args, emit, mapping, releases


class OpenRlhf(FrameworkAdapter):
    """OpenRLHF's ``train_ppo_ray``: argparse ``--key value`` overrides whose booleans are ``store_true`` flags,
    the flat v0.9.5 names with that release's defaults; its metrics logs read by rlsim.frameworks.logs.openrlhf."""

    name = "openrlhf"
    table = mapping.TABLE + releases.ROWS
    version_read = mapping.VERSION_READ
    overrides = "flags"
    log_importer = "rlsim.frameworks.logs.openrlhf"
    switch_flags = True
    legacy_defaults = args.LEGACY_DEFAULTS

    def detect(self, probe: Probe) -> Found | None:
        """``openrlhf.cli.train_ppo_ray``, or its arguments: the model (``pretrain``, ``actor.model_name_or_path``)
        with the actor's GPUs, samples per prompt or vLLM engines, flat (v0.9.5) or dotted (openrlhf/cli/
        train_ppo_ray.py's dests; ROLL shares pretrain and rollout_batch_size, not these)."""
        if hit := probe.runs(r"\bopenrlhf\.cli\.train_ppo_ray\b"):
            return self.found("OpenRLHF", hit)
        batch = ("actor_num_gpus_per_node", "n_samples_per_prompt", "vllm_num_engines", "actor.num_gpus_per_node")
        batch += ("rollout.n_samples_per_prompt", "vllm.num_engines")
        model = probe.has("pretrain", "actor.model_name_or_path")
        got = probe.has(*batch)
        return self.found("OpenRLHF", f"{model[0]}, {got[0]} arguments" if model and got else None)

    def read(self, path: Path) -> dict[str, Any]:
        return args.read(path)

    def canonical(self, flat: dict[str, Any], where: str) -> tuple[dict[str, Any], dict[str, str]]:
        return args.canonical(flat, where)

    def to_scenario(self, source: Source) -> tuple[dict[str, Any], list[str]]:
        return mapping.to_scenario(source)

    def table_for(self, flat: dict[str, Any]) -> tuple[Row, ...]:
        return releases.table_for(self.table, flat)  # the defaults of the release openrlhf_version names

    def emit_keys(self, ctx: EmitContext) -> dict[str, Any]:
        return emit.emit_keys(ctx)

    def docs_table(self) -> str:
        """The mapping table with each key's v0.9.5 flat name and, where the flat spelling's default differs, that
        default too."""

        def cell(value: Any) -> str:
            return "—" if value is None else f"`{value}`"

        lines = ["| framework key | flat name (v0.9.5) | default | rlsim field | rule |", "|---|---|---|---|---|"]
        for row in self.table:
            flat = ", ".join(f"`{name}`" for name, key in args.LEGACY.items() if key == row.key) or "—"
            default = cell(row.default)
            if row.key in args.LEGACY_DEFAULTS and args.LEGACY_DEFAULTS[row.key] != row.default:
                default += f" (flat: `{args.LEGACY_DEFAULTS[row.key]}`)"
            field = row.field if row.field.startswith("(") else f"`{row.field}`"
            lines.append(f"| `{row.key}` | {flat} | {default} | {field} | {row.rule} |")
        return "\n".join(lines)


ADAPTER = OpenRlhf()
