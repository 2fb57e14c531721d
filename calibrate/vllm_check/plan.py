"""The check's plan: the project's bench grid and the points vLLM's benchmark runs at, all off that grid.

Also vLLM's CPU settings the check runs under and predicts with (``VLLM_CPU_*``), and the plan from the command's
options (:func:`plan_for`), refused when a point lies on the grid or exceeds ``max_model_len``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from calibrate import CalibrateError

VLLM_CPU_MAX_NUM_SEQS = 256  # vllm EngineArgs.get_batch_defaults, CPU, UsageContext.LLM_CLASS
VLLM_CPU_MAX_NUM_BATCHED_TOKENS = 4096  # same place
VLLM_CPU_BLOCK_SIZE = 128  # vllm.platforms.cpu: the KV block size when none is given
DEFAULT_KV_SPACE_GIB = 1.0  # VLLM_CPU_KVCACHE_SPACE as real.engines.vllm_engine sets it by default


@dataclass(frozen=True)
class Point:
    """N requests of ``prompt_tokens`` prompt and ``response_tokens`` output tokens, all submitted at once."""

    concurrency: int
    prompt_tokens: int
    response_tokens: int

    @property
    def label(self) -> str:
        return f"N{self.concurrency}_in{self.prompt_tokens}_out{self.response_tokens}"


@dataclass(frozen=True)
class Grid:
    """The project's bench grid: every combination of the three lists."""

    concurrency: tuple[int, ...]
    prompt_tokens: tuple[int, ...]
    response_tokens: tuple[int, ...]

    def contains(self, p: Point) -> bool:
        return (
            p.concurrency in self.concurrency
            and p.prompt_tokens in self.prompt_tokens
            and p.response_tokens in self.response_tokens
        )

    def where(self, p: Point) -> dict[str, str]:
        """Per coordinate: ``on`` a grid value, ``between`` two, ``below`` or ``beyond`` the grid."""

        def rel(x: int, values: tuple[int, ...]) -> str:
            if x in values:
                return "on"
            return "below" if x < min(values) else "beyond" if x > max(values) else "between"

        return {
            "concurrency": rel(p.concurrency, self.concurrency),
            "prompt_tokens": rel(p.prompt_tokens, self.prompt_tokens),
            "response_tokens": rel(p.response_tokens, self.response_tokens),
        }


@dataclass(frozen=True)
class Plan:
    grid: Grid
    points: tuple[Point, ...]
    max_model_len: int


# Every check point's three coordinates are off its grid (between or beyond), and for the tiny model one point sends
# more requests than vLLM's max_num_seqs (continuous batching in two waves), which the project's bench never does.
# The tiny model's context is 128 positions; SmolLM2's KV blocks are 5.9 MB (1 GiB holds 182 of 128 tokens), so
# its points stay within 182 sequences of at most 128 tokens each.
PLANS: dict[tuple[str, bool], Plan] = {
    ("tiny", False): Plan(
        Grid((1, 4, 16, 64), (8, 32), (16, 64)),
        (
            Point(2, 16, 32),
            Point(3, 60, 60),
            Point(8, 24, 48),
            Point(24, 12, 24),
            Point(48, 48, 40),
            Point(96, 20, 80),
            Point(128, 4, 100),
            Point(320, 16, 24),
        ),
        128,
    ),
    ("smollm2", False): Plan(
        Grid((1, 4, 16), (16, 64), (16, 48)),
        (
            Point(2, 32, 24),
            Point(3, 96, 64),
            Point(8, 40, 32),
            Point(12, 100, 20),
            Point(24, 24, 40),
            Point(32, 8, 28),
        ),
        168,
    ),
}
# --quick: a smaller bench grid and six of the tiny model's eight points; SmolLM2's plan is already short
PLANS[("tiny", True)] = Plan(
    Grid((1, 8, 64), (8, 32), (16, 48)),
    tuple(PLANS[("tiny", False)].points[i] for i in (0, 1, 3, 4, 5, 7)),
    128,
)
PLANS[("smollm2", True)] = PLANS[("smollm2", False)]


def parse_points(text: str) -> tuple[Point, ...]:
    """``N:prompt:output,...`` -> points (CalibrateError on a malformed or non-positive entry)."""
    points = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        parts = item.split(":")
        try:
            values = [int(v) for v in parts]
        except ValueError:
            values = []
        if len(values) != 3 or min(values) < 1:
            raise CalibrateError(f"--points {item!r}: write CONCURRENCY:PROMPT:OUTPUT with integers >= 1")
        points.append(Point(*values))
    if not points:
        raise CalibrateError("--points is empty; give CONCURRENCY:PROMPT:OUTPUT,...")
    return tuple(points)


def parse_ints(text: str, flag: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise CalibrateError(f"{flag} {text!r}: give a comma-separated list of integers >= 1")
    return values


def check_plan(plan: Plan) -> None:
    """Refuse a plan that does not test anything outside the grid."""
    inside = [p.label for p in plan.points if plan.grid.contains(p)]
    if inside:
        raise CalibrateError(f"check point(s) {', '.join(inside)} lie on the bench grid; choose points outside it")
    too_long = [p.label for p in plan.points if p.prompt_tokens + p.response_tokens > plan.max_model_len]
    if too_long:
        raise CalibrateError(
            f"check point(s) {', '.join(too_long)} exceed max_model_len {plan.max_model_len}; shorten them"
        )


def plan_for(args: argparse.Namespace) -> Plan:
    key = "smollm2" if args.model == "smollm2" else "tiny" if args.model.partition(":")[0] == "tiny" else None
    if key is None and (args.points is None or args.bench_concurrency is None):
        raise CalibrateError(
            f"--model {args.model!r} has no built-in plan; give --points and --bench-concurrency, "
            "--bench-prompt-tokens, --bench-response-tokens"
        )
    base = PLANS[(key, args.quick)] if key else None
    grid = Grid(
        parse_ints(args.bench_concurrency, "--bench-concurrency") if args.bench_concurrency else base.grid.concurrency,
        parse_ints(args.bench_prompt_tokens, "--bench-prompt-tokens")
        if args.bench_prompt_tokens
        else base.grid.prompt_tokens,
        parse_ints(args.bench_response_tokens, "--bench-response-tokens")
        if args.bench_response_tokens
        else base.grid.response_tokens,
    )
    points = parse_points(args.points) if args.points else base.points
    max_len = args.max_model_len or (
        base.max_model_len if base else max(p.prompt_tokens + p.response_tokens + 8 for p in points)
    )
    plan = Plan(grid, points, max_len)
    check_plan(plan)
    return plan
