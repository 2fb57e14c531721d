"""The rules that read one section alone: a model spec (the policy's, a critic's or a reward model's), the
workload's length distributions and the learning model. rlsim.scenario.validation calls them in its order (and
rlsim.scenario.build the learning rules on their own); each refusal is a :class:`ScenarioError` naming the field,
the value, the rule and the fix.
"""

from __future__ import annotations

import dataclasses
import math

from rlsim.errors import ScenarioError
from rlsim.scenario.family_rules import validate_family
from rlsim.schema.sections import Learning, LengthDist, Workload
from rlsim.schema.specs import DTYPE_BYTES, ModelSpec


def validate_model(m: ModelSpec, path: str) -> None:
    """A model spec (at ``path``) on its own: dtype, active parameters, sliding layers, heads, experts."""
    if m.dtype not in DTYPE_BYTES:
        raise ScenarioError(f"{path}.dtype", m.dtype, "is not supported", f"use one of: {', '.join(DTYPE_BYTES)}")
    if m.num_active_params > m.num_params:
        raise ScenarioError(
            f"{path}.num_active_params",
            m.num_active_params,
            f"exceeds num_params ({m.num_params})",
            "active parameters are a subset of all",
        )
    if m.sliding_window > 0 and not 0 < m.num_sliding_layers < m.num_layers:
        raise ScenarioError(
            f"{path}.num_sliding_layers",
            m.num_sliding_layers,
            f"must be between 1 and num_layers - 1 ({m.num_layers - 1}) with a sliding_window",
            "count the sliding-window layers; models whose every layer slides are not modelled",
        )
    if m.num_attention_layers + m.num_recurrent_layers > m.num_layers:
        raise ScenarioError(
            f"{path}.num_attention_layers",
            m.num_attention_layers,
            f"with num_recurrent_layers ({m.num_recurrent_layers}) exceeds num_layers ({m.num_layers})",
            "count each layer once: attention, recurrent (Mamba-2, Gated DeltaNet) or neither (an MLP block)",
        )
    if (m.recurrent_state_bytes > 0) != (m.num_recurrent_layers > 0):
        raise ScenarioError(
            f"{path}.recurrent_state_bytes",
            m.recurrent_state_bytes,
            f"is inconsistent with num_recurrent_layers ({m.num_recurrent_layers})",
            "both are 0 without recurrent layers; give the state's bytes per sequence over all of them",
        )
    if m.num_attention_heads % m.num_kv_heads:
        raise ScenarioError(
            f"{path}.num_kv_heads",
            m.num_kv_heads,
            f"must divide num_attention_heads ({m.num_attention_heads})",
            "fix the architecture",
        )
    if (m.num_experts > 0) != (m.num_experts_per_token > 0) or m.num_experts_per_token > m.num_experts:
        raise ScenarioError(
            f"{path}.num_experts_per_token",
            m.num_experts_per_token,
            f"is inconsistent with num_experts ({m.num_experts})",
            "both are 0 for a dense model; experts per token <= experts for MoE",
        )
    if m.is_moe and (m.moe_intermediate_size <= 0 or m.expert_params >= m.num_params):
        raise ScenarioError(
            f"{path}.moe_intermediate_size",
            m.moe_intermediate_size,
            "gives expert parameters inconsistent with num_params",
            "check the MoE architecture",
        )


def validate_learning(lr: Learning) -> None:
    """The ``learning`` section: a metric with its target, stall batches with shares, the batch multiplier."""
    if (lr.metric is None) != (lr.target is None):
        missing = "learning.metric" if lr.metric is None else "learning.target"
        raise ScenarioError(
            missing,
            None,
            "is required when the other of learning.metric / learning.target is set",
            "give both (the metric curve and the target on it) or neither",
        )
    if lr.metric is not None and lr.target is not None:  # both or neither (above)
        lo, hi = sorted((lr.metric.initial, lr.metric.asymptote))
        if not lo < lr.target < hi:
            raise ScenarioError(
                "learning.target",
                lr.target,
                f"is not strictly between metric.initial ({lr.metric.initial}) and metric.asymptote "
                f"({lr.metric.asymptote})",
                "choose a target the curve reaches",
            )
    _validate_staleness_and_groups(lr)
    if (lr.stall_batches is None) != (lr.stall_shares is None):
        raise ScenarioError(
            "learning.stall_batches",
            lr.stall_batches,
            "and learning.stall_shares come together",
            "give both or neither",
        )
    xs, qs = lr.stall_batches, lr.stall_shares
    if xs is not None and qs is not None:  # both or neither (above)
        if len(xs) != len(qs) or not xs:
            raise ScenarioError(
                "learning.stall_batches",
                xs,
                f"needs one entry per stall share ({len(qs)})",
                "one share per batch",
            )
        if any(x <= 0 for x in xs) or any(b <= a for a, b in zip(xs, xs[1:])):
            raise ScenarioError("learning.stall_batches", xs, "must be positive and increasing", "sort by batch")
        if any(not 0 <= q < 1 for q in qs):
            raise ScenarioError("learning.stall_shares", qs, "must lie in [0, 1)", "give shares of seeds")
    _validate_ceilings(lr)
    validate_family(lr)
    if lr.stall_form == "signal_free_steps" and lr.initial_success is None:
        raise ScenarioError(
            "learning.initial_success",
            None,
            "is required for learning.stall_form signal_free_steps",
            "give the share of responses correct before training (rlsim-calibrate fit --runs measures it)",
        )
    bm, at = lr.batch_multiplier, "learning.batch_multiplier"
    need = {"invariant": (), "critical_batch": ("critical_batch",), "table": ("batches", "samples_to_target")}[bm.form]
    for key in need:
        if getattr(bm, key) is None:
            raise ScenarioError(f"{at}.{key}", None, f"is required for form {bm.form}", f"set {at}.{key}")
    if (
        bm.form == "invariant"
        and bm.batch_low is not None
        and bm.batch_high is not None
        and bm.batch_low > bm.batch_high
    ):
        raise ScenarioError(f"{at}.batch_low", bm.batch_low, f"exceeds batch_high ({bm.batch_high})", "swap them")
    if bm.form == "table":
        xs, ys = bm.batches, bm.samples_to_target
        assert xs is not None and ys is not None  # required for form table (above)
        if len(xs) != len(ys) or len(xs) < 2:
            raise ScenarioError(
                f"{at}.batches",
                xs,
                f"needs as many entries as samples_to_target ({len(ys)}), at least 2",
                "give one measured samples-to-target per batch",
            )
        if any(x <= 0 for x in xs) or any(b <= a for a, b in zip(xs, xs[1:])):
            raise ScenarioError(f"{at}.batches", xs, "must be positive and increasing", "sort the table by batch")
        if any(not 0 < y < math.inf for y in ys):
            raise ScenarioError(f"{at}.samples_to_target", ys, "must be positive and finite", "fix the table")


def _validate_ceilings(lr: Learning) -> None:
    """learning.ceiling_batches / ceilings: together, one ceiling per increasing batch, each beyond the metric's
    initial value on its asymptote's side, and at least one beyond the target (else no batch reaches it)."""
    xs, cs = lr.ceiling_batches, lr.ceilings
    if xs is None and cs is None:
        if lr.ceiling_errors is not None:
            raise ScenarioError("learning.ceiling_errors", lr.ceiling_errors, "need learning.ceilings", "give both")
        return
    if xs is None or cs is None:
        raise ScenarioError(
            "learning.ceiling_batches", xs, "and learning.ceilings come together", "give both or neither"
        )
    es = lr.ceiling_errors
    if es is not None and (len(es) != len(cs) or any(not (0 <= e < math.inf) for e in es)):
        raise ScenarioError(
            "learning.ceiling_errors", es, "must give one finite error >= 0 per ceiling", "one per ceiling, or none"
        )
    if len(xs) != len(cs) or not xs:
        raise ScenarioError("learning.ceiling_batches", xs, f"needs one entry per ceiling ({len(cs)})", "one per batch")
    if any(x <= 0 for x in xs) or any(b <= a for a, b in zip(xs, xs[1:])):
        raise ScenarioError("learning.ceiling_batches", xs, "must be positive and increasing", "sort by batch")
    if lr.metric is None or lr.target is None:
        raise ScenarioError(
            "learning.ceilings", cs, "need learning.metric and learning.target", "give the metric curve and target"
        )
    up = lr.metric.asymptote > lr.metric.initial
    if any((c > lr.metric.initial) != up or not math.isfinite(c) for c in cs):
        raise ScenarioError(
            "learning.ceilings",
            cs,
            f"must each lie {'above' if up else 'below'} metric.initial ({lr.metric.initial})",
            "give the asymptote the curve reaches at each batch",
        )
    if not any((c > lr.target) == up and c != lr.target for c in cs):
        raise ScenarioError(
            "learning.ceilings",
            cs,
            f"never get past the target ({lr.target}), so no batch reaches it",
            "lower learning.target or check the ceilings",
        )


def _validate_staleness_and_groups(lr: Learning) -> None:
    """learning.reference_group_size needs a pass-rate metric; learning.staleness_form needs a loss and three
    constants in range."""
    if lr.reference_group_size is not None and lr.metric is not None and lr.family.group is None:
        lo, hi = sorted((lr.metric.initial, lr.metric.asymptote))
        if lo < 0 or hi > 1:
            raise ScenarioError(
                "learning.reference_group_size",
                lr.reference_group_size,
                f"reads the metric curve as a pass rate, but it runs from {lr.metric.initial} to {lr.metric.asymptote}",
                "give a metric in [0, 1] (an accuracy) or leave reference_group_size unset",
            )
    if lr.reference_group_size is None:
        for name in ("prompt_concentration", "group_correlation"):
            if getattr(lr, name):
                raise ScenarioError(
                    f"learning.{name}",
                    getattr(lr, name),
                    "shapes the responses-per-prompt term, which is off while learning.reference_group_size is unset",
                    "set reference_group_size (the G of the runs the metric curve was measured at) or remove it",
                )
    if lr.staleness_form is not None:
        form = lr.staleness_form
        if lr.staleness_loss == "stretch":
            raise ScenarioError(
                "learning.staleness_form",
                form,
                "sets a loss's threshold constants, but learning.staleness_loss is stretch",
                "set learning.staleness_loss to naive_ppo or decoupled_ppo, or drop staleness_form",
            )
        if len(form) != 3 or not (form[0] >= 0 and 0 <= form[1] < 1 and form[2] > 0):
            raise ScenarioError(
                "learning.staleness_form",
                form,
                "must be [free_steps >= 0, ceiling_loss in [0, 1), half_steps > 0]",
                "e.g. [4, 0.45, 14.3] (decoupled_ppo's published constants)",
            )


def validate_lengths(w: Workload) -> None:
    """The workload's length distributions: the response phases, each distribution's keys, caps and bins."""
    phases = w.response_length_by_samples
    if phases:
        _validate_phases(w)
    for key, d, cap in (
        ("workload.prompt_length", w.prompt_length, w.max_prompt_tokens),
        ("workload.response_length", w.response_length, w.max_response_tokens),
        *(
            (f"workload.response_length_by_samples[{i}].length", p.length, w.max_response_tokens)
            for i, p in enumerate(phases)
        ),
    ):
        _validate_dist(key, d, cap)
    _validate_assumed(w)
    rmin = {"fixed": w.response_length.tokens, "uniform": w.response_length.low}.get(w.response_length.dist)
    if rmin is not None and rmin < 1:
        raise ScenarioError(
            "workload.response_length", rmin, "gives responses of 0 tokens", "every response >= 1 token"
        )


def _validate_assumed(w: Workload) -> None:
    """workload.length_range_tokens: low <= high inside (0, cap); assumed lengths: one fixed or lognormal form, the
    one rlsim.run.length_range moves over the range."""
    at = "workload.length_range_tokens"
    rng = w.length_range_tokens
    if rng is not None and not (len(rng) == 2 and 0 < rng[0] <= rng[1] < w.max_response_tokens):
        raise ScenarioError(at, list(rng), "is not [low, high] with 0 < low <= high < max_response_tokens", "fix it")
    if w.length_source != "assumed":
        return
    if w.response_length.dist not in ("fixed", "lognormal"):
        raise ScenarioError(
            "workload.response_length.dist",
            w.response_length.dist,
            "cannot be moved over an assumed range",
            "give assumed lengths as fixed or lognormal",
        )
    if w.response_length_by_samples or w.response_length_drift is not None:
        raise ScenarioError(
            "workload.length_source",
            "assumed",
            "is a single assumed distribution, not a growth",
            "set length_source: stated for lengths that grow as a source states them",
        )


def _validate_phases(w: Workload) -> None:
    """workload.response_length_by_samples: not with a drift, until_samples increasing and null for the last."""
    phases = w.response_length_by_samples
    at = "workload.response_length_by_samples"
    if w.response_length_drift is not None:
        raise ScenarioError(f"{at}", "[...]", "cannot be combined with response_length_drift", "give one of the two")
    ends = [p.until_samples for p in phases]
    if ends[-1] is not None or any(e is None for e in ends[:-1]):
        raise ScenarioError(
            f"{at}[{len(ends) - 1}].until_samples",
            ends[-1],
            "must be null for the last phase only",
            "give until_samples to every phase but the last",
        )
    cuts = [e for e in ends[:-1] if e is not None]  # every phase's but the last's (above)
    if any(b <= a for a, b in zip(cuts, cuts[1:])):
        raise ScenarioError(f"{at}", ends, "until_samples must increase", "sort the phases by samples")


def _validate_dist(key: str, d: LengthDist, cap: int) -> None:
    """One length distribution (at ``key``): the keys its dist takes and no others, its cap, its bins."""
    need = {
        "fixed": ("tokens",),
        "uniform": ("low", "high"),
        "lognormal": ("mean_tokens", "sigma"),
        "empirical": ("bin_edges", "weights"),
    }[d.dist]
    for k in need:
        if getattr(d, k) is None:
            raise ScenarioError(f"{key}.{k}", None, f"is required for dist {d.dist}", f"set {key}.{k}")
    extra = [
        f.name
        for f in dataclasses.fields(d)
        if f.name != "dist" and f.name not in need and getattr(d, f.name) is not None
    ]
    if extra:
        raise ScenarioError(
            f"{key}.{extra[0]}",
            getattr(d, extra[0]),
            f"is not used by dist {d.dist}",
            f"remove it; dist {d.dist} takes {', '.join(need)}",
        )
    if d.dist == "fixed":
        assert d.tokens is not None  # required for dist fixed (above)
        if d.tokens > cap:
            raise ScenarioError(f"{key}.tokens", d.tokens, f"exceeds the maximum ({cap})", "lower it or raise the max")
    if d.dist == "uniform":
        assert d.low is not None and d.high is not None  # required for dist uniform (above)
        if not d.low <= d.high:
            raise ScenarioError(f"{key}.low", d.low, f"must not exceed high ({d.high})", "swap low and high")
    if d.dist == "empirical":
        edges, weights = d.bin_edges, d.weights
        assert edges is not None and weights is not None  # required for dist empirical (above)
        if len(edges) != len(weights) + 1 or len(weights) < 1:
            raise ScenarioError(
                f"{key}.bin_edges",
                edges,
                f"needs one more edge than weights ({len(weights)})",
                "give n+1 edges for n weights",
            )
        if any(b <= a for a, b in zip(edges, edges[1:])) or edges[0] < 0:
            raise ScenarioError(f"{key}.bin_edges", edges, "must be non-negative and increasing", "sort them")
        if any(x < 0 for x in weights) or not 0 < sum(weights) < math.inf:
            raise ScenarioError(
                f"{key}.weights", weights, "must be non-negative with a finite positive sum", "fix the histogram counts"
            )
