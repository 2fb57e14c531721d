"""The keep rate DAPO's dynamic sampling is assumed to have where a config enables the filter without one (the
share of prompt groups whose rewards differ: it depends on the data and on the model's accuracy as it trains, and no
config states it).

``ASSUMED_KEEP`` = 1/3: the DAPO authors size their generation batch for it. Their run script generates
``gen_prompt_bsz = train_prompt_bsz x 3`` prompts per round (volcengine/verl@v0.7.0
recipe/dapo/run_dapo_qwen2.5_32b.sh:29, the paper's Qwen2.5-32B run, arXiv 2503.14476), so that one round fills the
train batch when a third of the groups pass; the other recipes there size 2x or 3x (run_dapo_qwen3_14b_base_npu.sh:27
2x: a half). ``KEEP_RANGE`` (0.2, 0.6): a span around it (a factor of 1.67 below, 1.8 above) that holds both
recipes' sizings; chosen, not measured. An answer on an assumed keep rate says so and prices the range's ends
beside it (rlsim.run.keep_range).
"""

from __future__ import annotations

ASSUMED_KEEP = 1 / 3
KEEP_RANGE = (0.2, 0.6)
SOURCE = "DAPO's own sizing, gen batch = 3 x train batch (verl@v0.7.0 recipe/dapo/run_dapo_qwen2.5_32b.sh:29)"


def assumed(fields: dict) -> dict:
    """``algorithm.dynamic_sampling`` fields with the assumed keep rate, marked so."""
    return {**fields, "keep_rate": ASSUMED_KEEP, "keep_rate_source": "assumed"}


def note(flag: str) -> str:
    """The import's note for a filter enabled by ``flag`` without a keep rate."""
    return (
        f"{flag}: no keep rate in the file: keep rate assumed {ASSUMED_KEEP:.2f} unless given ({SOURCE}); the run "
        f"prices {KEEP_RANGE[0]:g} .. {KEEP_RANGE[1]:g} beside it; give yours with --scenario-set "
        "algorithm.dynamic_sampling.keep_rate=R"
    )
