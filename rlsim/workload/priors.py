"""Priors for response lengths a source does not state: a config gives the cap (``max_response_length``), not the
mean. The prior is the clipped mean response length, in tokens, for a task family at a cap, with a plausible range.

``reasoning`` (RL with verifiable rewards on math or code: GRPO, DAPO, R1-style): the mean grows with the cap but far
more slowly, L(C) = min(0.78 C, 3,200 (C / 4,096) ** 0.66) tokens, fitted by hand to the mean generation lengths
against their caps in NeMo RL's performance tables (calibrate/published/data/rl_step_times_dev.csv, the development
set): Qwen3-30B-A3B and Qwen3-32B at a 4,096 cap 3,154-3,258 (0.78 of the cap), Qwen3-235B-A22B at 8,192 5,671-5,721
(the law: 5,060), Nemotron-3-Nano-30B-A3B at 131,072 31,599 (0.24 of the cap; the exponent's anchor). Half the cap
(rlsim's earlier assumption) is 2.1x the law at 131,072. Range: a third of L (Llama-3.1-8B-Instruct, a model that
does not think at length, at the same 4,096 cap: 1,019-1,129 tokens; runs that start from a base model begin near
1K tokens and grow: DAPO, arXiv 2503.14476, Figure 7; DeepSeek-R1-Zero, arXiv 2501.12948, Figure 3) to 1.5 L, at
most 0.9 of the cap (the tables' highest mean is 0.79 of the cap).

``instruct`` (a model that does not think at length, e.g. an instruct model on math): L = min(0.27 C, 1,100)
(Llama-3.1-8B-Instruct at 4,096: 1,019-1,129, 0.27 of the cap), range L / 2 .. 2 L, at most 0.9 of the cap.

Pure functions of the cap; no scenario needed (rlsim.frameworks' importers and rlsim.run use them).
"""

from __future__ import annotations

from dataclasses import dataclass

FAMILIES = ("reasoning", "instruct")
SOURCE = "NeMo RL performance tables' mean vs cap (calibrate/published/data/rl_step_times_dev.csv)"
MAX_SHARE = 0.9  # no mean at or above 0.9 of the cap: the tables' highest is 0.79


@dataclass(frozen=True)
class LengthPrior:
    """A prior on the clipped mean response length at a cap: the central value and the plausible range (tokens)."""

    family: str
    cap_tokens: int
    mean_tokens: float
    low_tokens: float
    high_tokens: float

    @property
    def note(self) -> str:
        """What the answer names: the prior, its range and its source."""
        return (
            f"{self.family} prior at a {self.cap_tokens} cap: mean {self.mean_tokens:.0f} "
            f"({self.low_tokens:.0f} .. {self.high_tokens:.0f}) tokens, from {SOURCE}"
        )


def response_prior(cap_tokens: int, family: str = "reasoning") -> LengthPrior:
    """The prior on the clipped mean response length for ``family`` at a response cap of ``cap_tokens``."""
    if family not in FAMILIES:
        raise ValueError(f"length prior family {family!r}: one of {', '.join(FAMILIES)}")
    cap = float(cap_tokens)
    top = MAX_SHARE * cap
    if family == "reasoning":
        mean = min(0.78 * cap, 3200.0 * (cap / 4096.0) ** 0.66)
        low, high = mean / 3.0, min(1.5 * mean, top)
    else:
        mean = min(0.27 * cap, 1100.0)
        low, high = mean / 2.0, min(2.0 * mean, top)
    return LengthPrior(family, int(cap_tokens), mean, low, min(max(high, mean), top))
