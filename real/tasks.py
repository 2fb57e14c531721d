"""Tasks with verifiable rewards, generated locally from a seed: no data set is downloaded.

A task turns a ``random.Random`` into an :class:`Example` (a prompt and its one correct answer) and scores a
completion against it. Prompts and answers use only the characters of :data:`CHARSET`, so the character-level
tokenizer of ``real.models`` covers every task, including tasks users register themselves, except those marked
``pretrained`` (``words``), which need a pretrained model's tokenizer and knowledge.

Built-in tasks (spec -> example):

- ``addition`` (``digits``, default 2): ``"47+5="`` -> ``"52"``; each operand has up to ``digits`` digits.
- ``reversal`` (``length``, default 4): ``"r1234="`` -> ``"4321"``.
- ``sorting`` (``length``, default 4): ``"s3142="`` -> ``"1234"``.
- ``parity`` (``length``, default 3): ``"472="`` -> ``"0"`` (``"1"`` for an odd number). The answer depends on
  one position, so a randomly initialized tiny model learns it by RL alone in well under a minute on a CPU; but
  a constant answer earns half the reward, and many seeds stall there (2 of 5 in the vLLM loop of issue 28).
- ``last``, ``first``, ``max`` (``length``, default 3): ``"472="`` -> ``"2"``, ``"4"``, ``"7"``: one digit read
  off the string, ten possible answers, so a constant answer earns a tenth. GRPO from the tiny random model on
  this project's 2-core VM (hf, B = 128, sqrt LR 1e-3, two seeds each, 2026-12-02): ``last`` reached 0.9 eval
  accuracy in 120 and 208 steps (12 and 27 s), ``first`` in 108 steps (the other seed 0.85 at 300), ``max`` in
  52 steps (the other 0.85 at 300). PPO with a critic learns ``last`` far slower (0.66 and 0.10 after 300).
  ``partial=0`` (e.g. ``last:partial=0``) drops the partial credit: the reward is then the accuracy.
- ``addition``, ``reversal``, ``sorting``: multi-digit answers; they need more steps (or a bigger model) from
  random weights.
- ``words`` (``most``, default 99): ``"twelve = 12\nforty-two ="`` -> ``"42"``: for a pretrained model
  (``--model smollm2``). SmolLM2-135M answers 0.10 of the held-out prompts exactly at first; GRPO (hf, B = 32,
  lr 2e-5, 2 threads) brought it to 0.825 after 5 steps (46 s) and 0.95 after 10 on this VM (2026-12-02).

A spec is ``name`` or ``name:key=value,key=value`` (``addition:digits=1``); integer values are parsed.

Reward (in [0, 1], :meth:`Task.reward`): 1.0 when the stripped completion equals the answer; otherwise 0.5 times
the fraction of positions that match, counted over the longer of answer and completion (so trailing characters
cost credit); 0.0 for an empty completion. An exact answer therefore always beats any partial one.
Correctness (:meth:`Task.is_correct`) is exact match after stripping whitespace; the completion is the generated
text with special tokens removed, and anything after the answer makes it wrong.

This module imports no torch, so ``import real.tasks`` stays cheap.
"""

from __future__ import annotations

import dataclasses
import inspect
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from real.errors import RealError

CHARSET = "0123456789+=rs"
"""Every character a prompt or an answer may contain (the tokenizer's vocabulary, besides special tokens)."""

_PARTIAL_CREDIT = 0.5  # the most a wrong answer can earn, so an exact answer is clearly preferred


@dataclass(frozen=True)
class Example:
    """One prompt and its only correct answer."""

    prompt: str
    answer: str


class Task:
    """A task with a verifiable reward. Subclasses set ``name`` and implement :meth:`sample`.

    A task whose prompt space is small and enumerable also sets :attr:`num_prompts` and implements
    :meth:`example_at`; :func:`make_splits` then partitions the enumerated space exactly.
    """

    name: str = "task"
    # True when the prompts need a pretrained model's tokenizer and knowledge (real.train refuses the tiny model)
    pretrained: ClassVar[bool] = False

    @property
    def spec(self) -> str:
        """The spec that :func:`get_task` turns back into this task (``addition:digits=2``)."""
        if not dataclasses.is_dataclass(self):
            return self.name
        params = ",".join(f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self))
        return f"{self.name}:{params}" if params else self.name

    @property
    def num_prompts(self) -> int | None:
        """How many distinct prompts the task has, or None when it is unknown (no enumeration)."""
        return None

    @property
    def max_answer_chars(self) -> int:
        """The longest answer in characters: a sensible bound for max new tokens (plus one for eos)."""
        return 16

    def example_at(self, index: int) -> Example:
        """The example with this index in ``range(num_prompts)``; only for tasks with a known ``num_prompts``."""
        raise NotImplementedError(f"task '{self.name}' does not enumerate its prompts")

    def sample(self, rng: random.Random) -> Example:
        """One example drawn with ``rng`` (uniform over the prompt space for the built-in tasks)."""
        n = self.num_prompts
        if n is None:
            raise NotImplementedError(f"task '{self.name}' must implement sample()")
        return self.example_at(rng.randrange(n))

    def reward(self, example: Example, completion: str) -> float:
        """1.0 for the exact answer, else 0.5 x the fraction of matching positions (over the longer string)."""
        text = completion.strip()
        answer = example.answer
        if not text:
            return 0.0
        if text == answer:
            return 1.0
        matched = sum(1 for a, c in zip(answer, text) if a == c)
        return _PARTIAL_CREDIT * matched / max(len(answer), len(text))

    def is_correct(self, example: Example, completion: str) -> bool:
        """Exact match of the answer after stripping whitespace; trailing characters make it wrong."""
        return completion.strip() == example.answer


def _check_positive(task: str, param: str, value: object, most: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
        raise RealError(f"task '{task}': parameter {param}={value!r} must be an integer in [1, {most}]")


@dataclass(frozen=True)
class Addition(Task):
    """``a+b=`` -> the digits of ``a+b``, each operand uniform in ``[0, 10**digits)``."""

    digits: int = 2
    name: ClassVar[str] = "addition"

    def __post_init__(self) -> None:
        _check_positive(self.name, "digits", self.digits, 9)

    @property
    def num_prompts(self) -> int:
        return 10 ** (2 * self.digits)

    @property
    def max_answer_chars(self) -> int:
        return self.digits + 1

    def example_at(self, index: int) -> Example:
        a, b = divmod(index, 10**self.digits)
        return Example(f"{a}+{b}=", str(a + b))


@dataclass(frozen=True)
class _DigitString(Task):
    """A task on a string of ``length`` digits: subclasses say how it is shown and what the answer is."""

    length: int = 4
    max_length: ClassVar[int] = 32

    def __post_init__(self) -> None:
        _check_positive(self.name, "length", self.length, self.max_length)

    @property
    def num_prompts(self) -> int:
        return 10**self.length

    @property
    def max_answer_chars(self) -> int:
        return self.length

    def example_at(self, index: int) -> Example:
        digits = str(index).zfill(self.length)
        return Example(self.prompt_for(digits), self.answer_for(digits))

    def prompt_for(self, digits: str) -> str:
        raise NotImplementedError

    def answer_for(self, digits: str) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Reversal(_DigitString):
    """``r1234=`` -> ``4321``: a string of ``length`` digits, reversed."""

    name: ClassVar[str] = "reversal"

    def prompt_for(self, digits: str) -> str:
        return f"r{digits}="

    def answer_for(self, digits: str) -> str:
        return digits[::-1]


@dataclass(frozen=True)
class Sorting(_DigitString):
    """``s3142=`` -> ``1234``: a string of ``length`` digits, sorted ascending."""

    name: ClassVar[str] = "sorting"

    def prompt_for(self, digits: str) -> str:
        return f"s{digits}="

    def answer_for(self, digits: str) -> str:
        return "".join(sorted(digits))


_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def number_words(n: int) -> str:
    """English words for ``0 <= n <= 99``: ``42`` -> ``forty-two``."""
    if not 0 <= n <= 99:
        raise ValueError(f"{n} is outside 0..99")
    if n < 20:
        return _ONES[n]
    tens, ones = divmod(n, 10)
    return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")


@dataclass(frozen=True)
class Words(Task):
    """``twelve = 12\\nforty-two =`` -> ``42``: a number from 0 to ``most`` in English words, answered in digits.

    The knowledge (which word is which number) comes from pretraining; RL teaches the answer's form (the digits
    and then the end of the sequence, where a pretrained model goes on writing). Its prompts hold letters, so the
    tiny model's character tokenizer cannot encode them: ``rlsim-real train`` refuses it there and asks for a
    pretrained model (``--model smollm2`` or a local folder)."""

    most: int = 99
    name: ClassVar[str] = "words"
    # one worked example before the question: SmolLM2-135M-Instruct then answers 13 of 100 exactly (greedy, this
    # VM, 2026-12-02), against 1 of 100 with the bare question and 72 with two examples: room to learn
    SHOT: ClassVar[str] = "twelve = 12\n"
    pretrained: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _check_positive(self.name, "most", self.most, 99)

    @property
    def num_prompts(self) -> int:
        return self.most + 1

    @property
    def max_answer_chars(self) -> int:
        return len(str(self.most))

    def example_at(self, index: int) -> Example:
        return Example(f"{self.SHOT}{number_words(index)} =", str(index))


# ---------------------------------------------------------------------------------------------------------------
# Registry

_REGISTRY: dict[str, Callable[..., Task]] = {}


def register_task(name: str) -> Callable[[Callable[..., Task]], Callable[..., Task]]:
    """Register a task factory (a Task class or a function returning a Task) under ``name``.

    The factory's keyword parameters become the spec parameters: ``name:key=value``.
    """
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise RealError(f"task name {name!r} is invalid; use letters, digits, '_' or '-'")

    def decorator(factory: Callable[..., Task]) -> Callable[..., Task]:
        _REGISTRY[name] = factory
        return factory

    return decorator


@dataclass(frozen=True)
class _OneDigit(_DigitString):
    """``472=`` -> one digit read off the ``length``-digit string: subclasses say which. ``partial=0``: no partial
    credit (reward 1 for the exact answer, else 0), so the reward is the accuracy, as on exact-match math tasks."""

    length: int = 3
    partial: int = 1
    max_length: ClassVar[int] = 9

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.partial not in (0, 1):
            raise RealError(f"task '{self.name}': partial={self.partial} must be 1 (partial credit) or 0 (exact only)")

    def reward(self, example: Example, completion: str) -> float:
        if self.partial:
            return super().reward(example, completion)
        return 1.0 if completion.strip() == example.answer else 0.0

    @property
    def max_answer_chars(self) -> int:
        return 1

    def prompt_for(self, digits: str) -> str:
        return f"{digits}="


@dataclass(frozen=True)
class Parity(_OneDigit):
    """``472=`` -> ``0``: whether the ``length``-digit number is odd (``1``) or even (``0``)."""

    name: ClassVar[str] = "parity"

    def answer_for(self, digits: str) -> str:
        return str(int(digits[-1]) % 2)


@dataclass(frozen=True)
class LastDigit(_OneDigit):
    """``472=`` -> ``2``: the last digit (ten answers, so a constant one earns a tenth, not parity's half)."""

    name: ClassVar[str] = "last"

    def answer_for(self, digits: str) -> str:
        return digits[-1]


@dataclass(frozen=True)
class FirstDigit(_OneDigit):
    """``472=`` -> ``4``: the first digit."""

    name: ClassVar[str] = "first"

    def answer_for(self, digits: str) -> str:
        return digits[0]


@dataclass(frozen=True)
class MaxDigit(_OneDigit):
    """``472=`` -> ``7``: the largest digit (every position matters)."""

    name: ClassVar[str] = "max"

    def answer_for(self, digits: str) -> str:
        return max(digits)


register_task("addition")(Addition)
register_task("first")(FirstDigit)
register_task("last")(LastDigit)
register_task("max")(MaxDigit)
register_task("parity")(Parity)
register_task("reversal")(Reversal)
register_task("sorting")(Sorting)
register_task("words")(Words)


def task_names() -> list[str]:
    """The registered task names, sorted."""
    return sorted(_REGISTRY)


def _parse_value(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text


def parse_spec(spec: str) -> tuple[str, dict[str, int | str]]:
    """Split ``name:key=value,key=value`` into the name and its parameters (ints parsed)."""
    name, _, rest = spec.strip().partition(":")
    params: dict[str, int | str] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise RealError(f"bad parameter {item!r} in spec {spec!r}; write name:key=value,key=value")
        params[key.strip()] = _parse_value(value.strip())
    return name.strip(), params


def _parameter_names(factory: Callable[..., Task]) -> list[str] | None:
    """The keyword parameters a factory accepts, or None when it takes ``**kwargs``."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return None
    names = []
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            return None
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            names.append(p.name)
    return names


def get_task(spec: str) -> Task:
    """The task a spec names: ``addition`` or ``addition:digits=1``."""
    name, params = parse_spec(spec)
    if name not in _REGISTRY:
        raise RealError(f"unknown task {name!r}; known tasks: {', '.join(task_names())}")
    factory = _REGISTRY[name]
    known = _parameter_names(factory)
    if known is not None:
        for key in params:
            if key not in known:
                accepted = ", ".join(known) or "none"
                raise RealError(f"unknown parameter {key!r} for task {name!r}; known parameters: {accepted}")
    try:
        task = factory(**params)
    except TypeError as exc:
        raise RealError(f"bad parameters {params} for task {name!r}: {exc}") from None
    if not isinstance(task, Task):
        raise RealError(f"task factory {name!r} returned {type(task).__name__}, not a real.tasks.Task")
    return task


# ---------------------------------------------------------------------------------------------------------------
# Splits and metrics


def split_sizes(num_prompts: int, num_train: int, num_eval: int) -> tuple[int, int]:
    """Train and eval sizes for a prompt space of ``num_prompts``, capped so the two stay disjoint.

    When both fit, they are kept. Otherwise eval keeps ``num_eval`` if that is at most half the space (else half)
    and train gets what is left, up to ``num_train``: addition:digits=1 (100 prompts) asked for 1000 + 200 gives
    50 + 50.
    """
    if num_train + num_eval <= num_prompts:
        return num_train, num_eval
    eval_size = min(num_eval, num_prompts // 2)
    return min(num_train, num_prompts - eval_size), eval_size


def make_splits(task: Task, seed: int, num_train: int, num_eval: int) -> tuple[list[Example], list[Example]]:
    """Train and held-out eval examples, deterministic in ``seed``; no eval prompt appears in train.

    Prompts are distinct within and across the splits. A task with an enumerable space draws indices without
    replacement (sizes capped by :func:`split_sizes` for small spaces); other tasks sample and drop repeats, and
    raise when the space runs out. Eval is drawn first, so it depends only on ``seed`` and ``num_eval``.
    """
    if num_train < 1 or num_eval < 1:
        raise RealError(f"num_train ({num_train}) and num_eval ({num_eval}) must both be at least 1")
    rng = random.Random(seed)
    n = task.num_prompts
    if n is not None:
        train_size, eval_size = split_sizes(n, num_train, num_eval)
        if train_size < 1 or eval_size < 1:
            raise RealError(f"task '{task.spec}' has only {n} prompts; too few to hold out an eval split")
        indices = rng.sample(range(n), eval_size + train_size)
        examples = [task.example_at(i) for i in indices]
        return examples[eval_size:], examples[:eval_size]

    seen: set[str] = set()
    splits: list[list[Example]] = [[], []]  # eval, train
    for split, size in zip(splits, (num_eval, num_train)):
        attempts = 0
        while len(split) < size:
            attempts += 1
            if attempts > 100 * size + 1000:
                raise RealError(
                    f"task '{task.spec}' gave too few distinct prompts for {num_eval} eval + {num_train} train;"
                    " ask for fewer examples"
                )
            example = task.sample(rng)
            if example.prompt not in seen:
                seen.add(example.prompt)
                split.append(example)
    return splits[1], splits[0]


def accuracy(task: Task, examples: Sequence[Example], completions: Sequence[str]) -> float:
    """Fraction of completions that are exactly correct (:meth:`Task.is_correct`), in [0, 1]."""
    if len(examples) != len(completions):
        raise RealError(f"accuracy got {len(examples)} examples but {len(completions)} completions; pass one each")
    if not examples:
        raise RealError("accuracy got no examples; pass at least one")
    return sum(task.is_correct(e, c) for e, c in zip(examples, completions)) / len(examples)


def mean_reward(task: Task, examples: Sequence[Example], completions: Sequence[str]) -> float:
    """Mean of :meth:`Task.reward` over the completions, in [0, 1]."""
    if len(examples) != len(completions) or not examples:
        raise RealError(f"mean_reward got {len(examples)} examples and {len(completions)} completions; pass one each")
    return sum(task.reward(e, c) for e, c in zip(examples, completions)) / len(examples)
