"""What a configuration's KV-cache thrash costs and what stops it: the part of ``rlsim run``'s answer that says when
the engine preempts (issue 32).

A vLLM engine admits requests while their blocks fit; when a running request needs a block and none is free it
preempts the newest running request, frees its blocks and later prefills its prompt and tokens so far again
(recompute). At the paper's largest batches every replica does this many times per response. In simulated time
the recompute is cheap (a prefill is compute-bound and fast), but the thrash shapes memory, latency tails and what
``engine.max_num_seqs`` or ``gpu_memory_utilization`` would change, so the answer says:

* ``preemptions_per_response`` and ``recomputed_tokens_per_response`` over the steady steps;
* ``recompute_share``: the recomputes' share of the engine's seconds (each replica's prefill seconds in proportion
  to its recomputed share of the tokens it prefilled, over the replicas' makespans);
* ``max_num_seqs_without_preemption``: the largest ``engine.max_num_seqs`` at which the same steps preempt no
  request (found by bisection over short runs of the same scenario: preemptions do not grow as fewer requests may
  run at once), and the step time there against the step time as configured, on the same short runs
  (``step_time_change``: positive when capping the batch costs time, as it does where decode is bandwidth-bound),
  and the generation phase's change alone (``rollout_change``: an async schedule or separate pools may hide it
  behind training, as at the paper scenario's P = 8192).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlsim.host.footprint import SEARCH_STEPS  # steps of each short run of the search (after an async fill)
from rlsim.scenario import with_overrides

if TYPE_CHECKING:
    from rlsim.run.profile import Profile
    from rlsim.run.result import SimResult
    from rlsim.schema import Scenario


def _short(scenario: Scenario, max_num_seqs: int) -> Scenario:
    steps = SEARCH_STEPS + 2 * scenario.schedule.staleness
    return with_overrides(
        scenario,
        {"engine.max_num_seqs": max_num_seqs, "run.steps": min(scenario.run.steps, steps), "run.until_target": False},
    )


def thrash_free(scenario: Scenario, profile: Profile | None = None) -> dict[str, Any]:
    """The largest ``engine.max_num_seqs`` at which short runs of ``scenario`` preempt nothing, and the step time there
    against the configured one on the same short runs (module docstring). ``scenario`` as rlsim.run.simulation.configure
    built it."""
    # here, not at the top: it loads numpy, simpy (start-up time)
    from rlsim.run.simulation import predict
    from rlsim.run.timeline import Timelines

    timelines = Timelines()

    def run(m: int) -> SimResult:
        return predict(_short(scenario, m), profile, timelines=timelines)

    def preempts(res: SimResult) -> bool:
        return any(r.get("num_preemptions") for r in res.steady_records)

    configured = run(scenario.engine.max_num_seqs)
    if not preempts(configured):  # only later steps preempt (their lengths drift): nothing to search on
        return {"max_num_seqs_without_preemption": scenario.engine.max_num_seqs, "runs": 1}
    lo, hi, runs = 0, scenario.engine.max_num_seqs, 1  # lo: no preemption (0: none found yet), hi: preempts
    best: SimResult | None = None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        res = run(mid)
        runs += 1
        if preempts(res):
            hi = mid
        else:
            lo, best = mid, res
    if best is None:  # even one request at a time preempts: a response longer than the cache
        return {"max_num_seqs_without_preemption": None, "runs": runs}
    at, base = best.steady_step_time_s, configured.steady_step_time_s
    return {
        "max_num_seqs_without_preemption": lo,
        "step_time_s_without_preemption": at,
        "step_time_s_as_configured_short_run": base,
        "step_time_change": at / base - 1.0,
        # the generation phase alone: under an async schedule or on separate pools training may hide it
        "rollout_change": _rollout_s(best) / _rollout_s(configured) - 1.0,
        "runs": runs,
    }


def _rollout_s(res: SimResult) -> float:
    steady = res.steady_records
    return sum(r["timing_s"]["rollout"] for r in steady) / len(steady)


def thrash_text(thrash: dict[str, Any] | None, max_num_seqs: int) -> str | None:
    """One line for the run table, or None where nothing was preempted."""
    if not thrash:
        return None
    line = (
        f"{thrash['preemptions_per_response']:.2f} preemptions/response, "
        f"{thrash['recomputed_tokens_per_response']:.0f} tokens recomputed/response, "
        f"{thrash['recompute_share']:.1%} of engine time"
    )
    if thrash.get("thrash_model") == "fast":
        line += " (fast thrash model: preemptions and recomputed tokens within about 10% of exact's)"
    stop = thrash.get("max_num_seqs_without_preemption")
    if "max_num_seqs_without_preemption" not in thrash:
        return line
    if stop is None:
        return line + "; it preempts even at max_num_seqs 1 (a response outgrows the KV cache)"
    if stop >= max_num_seqs:
        return line + f"; the first {SEARCH_STEPS} steps preempt nothing (later steps' lengths do)"
    change = thrash["step_time_change"]
    return (
        line + f"; none at max_num_seqs {stop} (now {max_num_seqs}): step time {change:+.1%} "
        f"({thrash['step_time_s_without_preemption']:.2f} s vs {thrash['step_time_s_as_configured_short_run']:.2f} s "
        f"over {SEARCH_STEPS} steps), generation {thrash['rollout_change']:+.1%}"
    )
