"""The terminal text of a run and a sweep (what ``rlsim run`` and ``rlsim sweep`` print), in the human units of
rlsim.answers.answer. Strings only: the command prints them."""

from __future__ import annotations

from typing import Any

from rlsim.answers.answer import Answer, gpu_hours, hours
from rlsim.answers.answer import samples as samples_text
from rlsim.answers.thrash import thrash_text
from rlsim.io.numbers import finite
from rlsim.run.systems_error import WIDEN


def _systems_row(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The band's systems share: the cost model's measured error for this setting and where it comes from."""
    se = summary.get("systems_error")
    if not se:
        return []
    text = f"+-{se['error_pct']:.0f}% in the band: {se['basis']}"
    if se["outside"]:
        text += f"; x{WIDEN:g} for each of: " + "; ".join(se["outside"])
    return [("systems error", text)]


def _seconds(x: float | None) -> str:
    return f"{x:.2f} s" if x is not None else "refused"


def _range_line(head: str, a: dict[str, Any], over: str) -> str:
    """``head``, then the step time's ends ``over`` the assumption's range and the time to target's ends (an end
    that cannot run reads "refused")."""
    line = f"{head}; {_seconds(a['step_time_low_s'])} .. {_seconds(a['step_time_high_s'])} over {over}"
    if a.get("time_to_target_s") is not None:
        ends = [
            hours(x) if x is not None else "refused" for x in (a["time_to_target_low_s"], a["time_to_target_high_s"])
        ]
        line += f"; time to target {hours(a['time_to_target_s'])}, {ends[0]} .. {ends[1]}"
    return line


def length_line(summary: dict[str, Any]) -> str | None:
    """The length assumption and what it moves: "lengths assumed (why): step time X s at mean L; A s .. B s over
    L_lo .. L_hi" (and the time to target's ends); None unless the lengths are assumed and were priced."""
    a = summary.get("length_assumption")
    if not a:
        return None
    head = f"lengths assumed ({a['note'] or 'no note'}): step time {a['step_time_s']:.2f} s"
    head += f" at mean {a['mean_tokens']:.0f}"
    return _range_line(head, a, f"{a['low_tokens']:.0f} .. {a['high_tokens']:.0f} tokens")


def keep_line(summary: dict[str, Any]) -> str | None:
    """The keep-rate assumption and what it moves: "keep rate assumed K (source): step time X s; A s .. B s over
    K_lo .. K_hi" (and the time to target's ends); None unless the keep rate is assumed and was priced."""
    a = summary.get("keep_assumption")
    if not a:
        return None
    head = f"keep rate assumed {a['keep_rate']:.2f} ({a['source']}): step time {a['step_time_s']:.2f} s"
    return _range_line(head, a, f"keep {a['low_keep']:g} .. {a['high_keep']:g}")


def overheads_line(summary: dict[str, Any]) -> str | None:
    """Evaluation, checkpoints and start-up over the run (rlsim.run.overheads), beside time-to-target: "run
    overheads (not in the time to target): evaluation N x S = T; ...; total T (time to target + overheads: H)";
    None when the scenario sets none."""
    o = summary.get("run_overheads")
    if not o:
        return None
    parts = []
    if o["evaluations"]:
        parts.append(f"evaluation {o['evaluations']} x {o['eval_each_s']:.1f} s = {hours(o['eval_s'])}")
    if o["checkpoints"]:
        parts.append(
            f"checkpoints {o['checkpoints']} x {o['checkpoint_each_s']:.1f} s "
            f"({o['checkpoint_bytes'] / 1e9:.0f} GB each) = {hours(o['checkpoint_s'])}"
        )
    if o["startup_s"]:
        parts.append(f"start-up {o['startup_s']:.0f} s")
    line = f"run overheads over {o['steps']} steps (not in the time to target): " + "; ".join(parts or ["none"])
    line += f"; total {hours(o['total_s'])}"
    if summary.get("time_to_target_s") is not None:
        line += f" (time to target + overheads: {hours(summary['time_to_target_s'] + o['total_s'])})"
    return line


def run_table(summary: dict[str, Any]) -> str:
    """A run's summary as the terminal shows it: the answer first, then what it is made of, then the phases."""
    rows = [
        ("scenario", f"{summary['scenario']} ({summary['scenario_hash']})"),
        (
            "model / hardware",
            f"{summary['model']} on {summary['num_gpus']} x {summary['gpu']}, {summary['schedule']}"
            + (f" k={summary['max_staleness']}" if summary["max_staleness"] else ""),
        ),
        (
            "batch",
            f"P={summary['prompts_per_step']} x G={summary['group_size']} = {summary['responses_per_step']} "
            "responses/step",
        ),
        ("steps simulated", f"{summary['steps']} ({summary['steady_state_steps']} steady state)"),
        (
            "step time",
            f"{summary['step_time_s']:.2f} s (p10 {summary['step_time_p10_s']:.2f}, "
            f"p90 {summary['step_time_p90_s']:.2f})",
        ),
        ("samples/s", f"{summary['samples_per_s']:.2f}"),
        ("generation tokens/s", f"{summary['generation_tokens_per_s']:.0f}"),
        ("tokens/s/GPU", f"{summary['tokens_per_s_per_gpu']:.0f}"),
        ("mean response", f"{summary['mean_response_tokens']:.0f} tokens"),
        (
            "lengths",
            f"{summary.get('length_source', 'stated')}" + (f": {n}" if (n := summary.get("length_note")) else ""),
        ),
        (
            "decode batch (mean)",
            f"{summary['mean_decode_batch']:.1f} seqs/iteration/replica, "
            f"{summary['preemptions_per_step']:.0f} preemptions/step",
        ),
    ]
    thrash = thrash_text(summary.get("thrash"), summary.get("max_num_seqs", 0))
    if thrash is not None:
        rows.append(("KV-cache thrash", thrash))
    for pool, u in summary["utilization"].items():
        rows.append((f"utilization {pool}", f"{u * 100:.1f}% of {summary['gpus_per_pool'][pool]} GPUs"))
    if summary.get("time_to_target_s") is not None:
        answer = Answer.of(summary)
        rows += [
            ("target", f"{summary['target']:g}"),
            ("samples to target", f"{samples_text(summary['samples_to_target'])} (median over seeds)"),
            ("time to target", answer.time_text),
            *_systems_row(summary),
            ("GPU-hours to target", gpu_hours(summary["gpu_hours_to_target"])),
            (
                "seeds reaching it",
                f"{summary['probability_reaching_target']:.0%} within {samples_text(summary['budget_samples'])} "
                f"samples; those in {samples_text(summary['samples_to_target_if_reached'])} samples, "
                f"{hours(summary['time_to_target_if_reached_s'])}",
            ),
        ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    if (length := length_line(summary)) is not None:  # what the answer rests on, before the details
        lines = [length, "", *lines]
    if (keep := keep_line(summary)) is not None:
        lines = [keep, "", *lines]
    if (overheads := overheads_line(summary)) is not None:  # beside the answer, not in it
        lines = [overheads, "", *lines]
    if summary.get("time_to_target_s") is not None:  # the answer first, then what it is made of
        lines = [f"answer: {Answer.of(summary).sentence()}", "", *lines]
    step = summary["step_time_s"]
    lines.append("")
    lines.append(f"{'phase':<{width}}  {'s/step':>9}  {'share':>6}")
    shares = {phase: sec / step for phase, sec in summary["phase_time_s"].items() if sec > 0}
    for phase, share in shares.items():
        lines.append(f"{phase:<{width}}  {share * step:9.2f}  {share * 100:5.1f}%")
    if sum(shares.values()) > 1.005:
        lines.append(
            f"(the shares add up to {sum(shares.values()):.0%}: a share is the phase's seconds per step over the "
            "step time, and phases that run at the same time, as generation and training do under an async "
            "schedule or on separate GPU pools, overlap within a step)"
        )
    return "\n".join(lines)  # warnings go to stderr once (cmd_run), not into the table


def any_set(table: Any, col: str) -> bool:
    """Whether a sweep table has column ``col`` with a value set in any row (an error, an extrapolated row): a
    column of nothing says nothing, so the tables shown leave it out."""
    return col in table and bool(table[col].dropna().astype(bool).any())


def yes_no(values: Any) -> list[str]:
    """A flag column as a person reads it (a failed row's missing flag is no)."""
    return ["yes" if x is True else "no" for x in values]


def extrapolated_rows(table: Any) -> tuple[list[int], str]:
    """The configurations of a sweep table whose time to target was extrapolated (rlsim.answers.sweep), and the
    steps they simulated (``40`` or ``40/42``)."""
    if "extrapolated" not in table:
        return [], ""
    rows = table[table["extrapolated"].eq(True)]
    return [int(c) for c in rows["config"]], "/".join(str(int(n)) for n in sorted(set(rows["simulated_steps"])))


def thrashed_again(table: Any, resimulated: Any) -> list[int]:
    """Of the configurations a sweep simulated again, those that preempted (column thrash_model set)."""
    if "thrash_model" not in table:
        return list(resimulated)
    thrashed = {int(c) for c, m in zip(table["config"], table["thrash_model"]) if isinstance(m, str)}
    return [c for c in resimulated if c in thrashed]


def sweep_table(table: Any, grid: dict[str, list[Any]]) -> str:
    """The sweep's table as the terminal shows it: the grid's keys and each row's answer in human units."""
    keys = ("config", *grid, "samples_per_s", "samples_to_target", "time_to_target_s", "gpu_hours_to_target")
    view = [c for c in keys if c in table] + [c for c in ("extrapolated", "error") if any_set(table, c)]
    shown = table[view].copy()
    if "extrapolated" in shown:  # a screened sweep's rows (rlsim.answers.sweep)
        shown["extrapolated"] = yes_no(shown["extrapolated"])
    if "time_to_target_s" in shown:  # each row's answer as run, decide and plan print it (rlsim.answers.answer)
        answers = [Answer.of(row) for _, row in table.iterrows()]
        shown["time_to_target_s"] = [a.time_text if a.time_to_target_s is not None else "-" for a in answers]
        shown = shown.rename(columns={"time_to_target_s": "time_to_target (band)"})
    for col in ("samples_to_target", "gpu_hours_to_target"):
        if col in shown:
            shown[col] = [samples_text(finite(x)) for x in shown[col]]
    return shown.to_string(index=False, float_format=lambda x: f"{x:,.2f}")


def thrash_screen_note(table: Any, screen: str | None, resimulated: tuple[int, ...], finalists: int) -> str | None:
    """What a sweep says under its table when rows thrashed under the fast thrash model: which, and which of the
    best were simulated again with the scenario's own model (rlsim.answers.sweep); None when no row did."""
    if screen is None or "thrash_model" not in table:
        return None
    fast = [int(c) for c, m in zip(table["config"], table["thrash_model"]) if m == screen]
    again = ", ".join(map(str, thrashed_again(table, resimulated))) or "none"
    if not fast and again == "none":
        return None
    return (
        f"KV-cache thrash: config(s) {', '.join(map(str, fast)) or 'none'} simulated with the {screen} thrash "
        f"model (step time within about 1% of exact, docs/design.md); of the best {finalists}, config(s) {again} "
        "again with the scenario's own (column thrash_model). --screen-thrash exact simulates every row exactly."
    )


def extrapolation_note(table: Any, resimulated: tuple[int, ...], finalists: int) -> str | None:
    """What a screened sweep says under its table (rlsim.answers.sweep): the rows whose time to target was
    extrapolated from their band's window, and which of the best were simulated in full; None when none was."""
    configs, steps = extrapolated_rows(table)
    if not configs and not resimulated:
        return None
    window = f"their first {steps} steps" if steps else "their band's window"
    return (
        f"Screened: config(s) {', '.join(map(str, configs)) or 'none'} simulated for {window} "
        "and extrapolated to their target at the steady step time (column extrapolated; within 0.5% of full runs "
        f"on the paper sweep, docs/design.md); of the best {finalists}, config(s) "
        f"{', '.join(map(str, resimulated)) or 'none'} simulated in full. --full simulates every row to its target."
    )
