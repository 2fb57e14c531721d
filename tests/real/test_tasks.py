"""Tasks with verifiable rewards: splits, rewards, correctness and the registry (no torch needed)."""

import random
import subprocess
import sys
from dataclasses import dataclass
from typing import ClassVar

import pytest

from real.errors import RealError
from real.tasks import (
    CHARSET,
    Example,
    Task,
    accuracy,
    get_task,
    make_splits,
    mean_reward,
    register_task,
    split_sizes,
    task_names,
)

BUILTIN_SPECS = ["addition", "addition:digits=1", "addition:digits=3", "reversal", "sorting:length=6"]


def test_builtin_tasks_are_registered():
    assert {"addition", "first", "last", "max", "parity", "reversal", "sorting", "words"} <= set(task_names())


def test_train_help_lists_every_registered_task():
    """--help named three tasks and not parity, the one that learned: it now reads the registry."""
    import argparse

    from real.config import add_train_arguments

    parser = argparse.ArgumentParser()
    add_train_arguments(parser)
    text = parser.format_help()
    for name in task_names():
        assert name in text


@pytest.mark.parametrize(
    ("spec", "index", "prompt", "answer"),
    [
        ("addition", 4705, "47+5=", "52"),
        ("addition:digits=1", 99, "9+9=", "18"),
        ("reversal", 1234, "r1234=", "4321"),
        ("reversal:length=3", 12, "r012=", "210"),
        ("sorting", 3142, "s3142=", "1234"),
        ("last", 472, "472=", "2"),
        ("first", 472, "472=", "4"),
        ("max", 472, "472=", "7"),
        ("max:length=4", 472, "0472=", "7"),
        ("first:length=4", 472, "0472=", "0"),
        ("words", 42, "twelve = 12\nforty-two =", "42"),
        ("words", 7, "twelve = 12\nseven =", "7"),
        ("words", 90, "twelve = 12\nninety =", "90"),
        ("words:most=19", 13, "twelve = 12\nthirteen =", "13"),
    ],
)
def test_examples_by_hand(spec, index, prompt, answer):
    assert get_task(spec).example_at(index) == Example(prompt, answer)


@pytest.mark.parametrize("spec", BUILTIN_SPECS)
def test_samples_use_charset_and_are_correct(spec):
    task = get_task(spec)
    rng = random.Random(0)
    for _ in range(200):
        ex = task.sample(rng)
        assert set(ex.prompt + ex.answer) <= set(CHARSET)
        assert ex.prompt.endswith("=")
        assert len(ex.answer) <= task.max_answer_chars
    addition = get_task("addition:digits=3")
    for _ in range(50):
        ex = addition.sample(rng)
        a, b = ex.prompt[:-1].split("+")
        assert int(ex.answer) == int(a) + int(b) and int(a) < 1000 and int(b) < 1000


@pytest.mark.parametrize("spec", BUILTIN_SPECS)
def test_splits_are_deterministic_and_disjoint(spec):
    task = get_task(spec)
    train, eval_ = make_splits(task, seed=3, num_train=300, num_eval=50)
    assert (train, eval_) == make_splits(task, seed=3, num_train=300, num_eval=50)
    assert make_splits(task, seed=4, num_train=300, num_eval=50) != (train, eval_)
    train_prompts = {e.prompt for e in train}
    eval_prompts = {e.prompt for e in eval_}
    assert not train_prompts & eval_prompts
    assert len(train_prompts) == len(train) and len(eval_prompts) == len(eval_)
    assert len(eval_) == 50 and len(train) == min(300, task.num_prompts - 50)


def test_eval_split_does_not_depend_on_train_size():
    task = get_task("reversal")
    assert make_splits(task, 1, 10, 20)[1] == make_splits(task, 1, 500, 20)[1]


def test_small_space_is_partitioned_and_capped():
    task = get_task("addition:digits=1")  # 100 prompts
    assert split_sizes(100, 1000, 200) == (50, 50)
    assert split_sizes(100, 1000, 20) == (80, 20)
    assert split_sizes(100, 30, 20) == (30, 20)
    train, eval_ = make_splits(task, seed=0, num_train=1000, num_eval=200)
    assert len(train) == 50 and len(eval_) == 50
    assert {e.prompt for e in train} | {e.prompt for e in eval_} == {task.example_at(i).prompt for i in range(100)}


def test_split_sizes_must_be_positive():
    with pytest.raises(RealError, match="num_eval"):
        make_splits(get_task("addition"), 0, 10, 0)


def test_reward_exact_partial_and_garbage():
    task = get_task("sorting")
    ex = Example("s3142=", "1234")
    assert task.reward(ex, "1234") == 1.0
    assert task.reward(ex, " 1234\n") == 1.0
    assert task.reward(ex, "") == 0.0
    assert task.reward(ex, "   ") == 0.0
    assert task.reward(ex, "rrss") == 0.0
    three, two, one = task.reward(ex, "1235"), task.reward(ex, "1299"), task.reward(ex, "1999")
    assert three == pytest.approx(0.375)
    assert 1.0 > 0.5 >= three > two > one > 0.0
    assert task.reward(ex, "12345") == pytest.approx(0.4)  # a trailing character costs credit, never exact
    assert 0.0 <= task.reward(ex, "1234" * 10) < 0.5


def test_is_correct_and_accuracy():
    task = get_task("addition")
    ex = Example("47+5=", "52")
    assert task.is_correct(ex, "52") and task.is_correct(ex, " 52 ")
    assert not task.is_correct(ex, "520") and not task.is_correct(ex, "5") and not task.is_correct(ex, "")
    assert not task.is_correct(ex, "52=")
    assert accuracy(task, [ex, ex, ex, ex], ["52", "53", "", "52"]) == 0.5
    assert mean_reward(task, [ex, ex], ["52", ""]) == 0.5
    with pytest.raises(RealError, match="2 examples but 1 completions"):
        accuracy(task, [ex, ex], ["52"])
    with pytest.raises(RealError, match="no examples"):
        accuracy(task, [], [])


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope", "unknown task 'nope'; known tasks: addition, .*reversal, .*sorting"),
        ("addition:width=3", "unknown parameter 'width' for task 'addition'; known parameters: digits"),
        ("addition:digits=0", r"digits=0 must be an integer in \[1, 9\]"),
        ("addition:digits=two", "digits='two' must be an integer"),
        ("reversal:length", "bad parameter 'length'"),
    ],
)
def test_registry_errors(spec, message):
    with pytest.raises(RealError, match=message) as info:
        get_task(spec)
    assert "\n" not in str(info.value)


def test_spec_round_trip():
    task = get_task(" sorting : length = 5 ")
    assert task.spec == "sorting:length=5"
    assert get_task(task.spec) == task


def test_user_registered_task():
    @register_task("test-copy")
    @dataclass(frozen=True)
    class Copy(Task):
        length: int = 3
        name: ClassVar[str] = "test-copy"

        def sample(self, rng):
            digits = "".join(rng.choice("0123456789") for _ in range(self.length))
            return Example(f"r{digits}=", digits)

    assert "test-copy" in task_names()
    task = get_task("test-copy:length=5")
    assert task.spec == "test-copy:length=5"
    train, eval_ = make_splits(task, seed=0, num_train=40, num_eval=10)
    assert len(train) == 40 and len(eval_) == 10
    assert not {e.prompt for e in train} & {e.prompt for e in eval_}
    assert task.reward(train[0], train[0].answer) == 1.0

    @register_task("test-tiny")
    def tiny() -> Task:
        return Copy(length=1)

    with pytest.raises(RealError, match="too few distinct prompts"):
        make_splits(get_task("test-tiny"), seed=0, num_train=20, num_eval=5)
    with pytest.raises(RealError, match="unknown parameter 'length' for task 'test-tiny'; known parameters: none"):
        get_task("test-tiny:length=2")


def test_import_is_cheap():
    code = "import sys, real.tasks; assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_parity_task():
    from real.tasks import get_task, make_splits

    task = get_task("parity:length=3")
    assert task.example_at(472).prompt == "472=" and task.example_at(472).answer == "0"
    assert task.example_at(7).prompt == "007=" and task.example_at(7).answer == "1"
    train, held_out = make_splits(task, 0, 500, 100)
    assert not {e.prompt for e in train} & {e.prompt for e in held_out}
    assert all(e.answer == str(int(e.prompt[-2]) % 2) for e in train + held_out)


def test_words_task_spells_every_number_and_needs_a_pretrained_model():
    """``words``: the English name of 0..most, answered in digits. Its prompts are words, outside the tiny model's
    character set (so real.train refuses the tiny model), and every number has its own name."""
    task = get_task("words")
    assert task.pretrained and not get_task("parity").pretrained
    names = [task.example_at(i).prompt for i in range(task.num_prompts)]
    assert len(set(names)) == 100 and task.num_prompts == 100
    assert all(task.example_at(i).answer == str(i) for i in range(100))
    assert not set("".join(names)) <= set(CHARSET)
    assert task.max_answer_chars == 2 and get_task("words:most=9").max_answer_chars == 1
    with pytest.raises(RealError, match=r"most=100 must be an integer in \[1, 99\]"):
        get_task("words:most=100")


def test_one_digit_tasks_can_drop_partial_credit():
    import random

    from real.errors import RealError

    exact = get_task("last:partial=0")
    e = exact.sample(random.Random(0))
    assert exact.spec == "last:length=3,partial=0"
    assert exact.reward(e, e.answer) == 1.0 and exact.reward(e, e.answer + "1") == 0.0
    assert get_task("last").reward(e, e.answer + "1") == 0.25  # the default keeps partial credit
    with pytest.raises(RealError, match="partial=2 must be 1"):
        get_task("last:partial=2")
