"""--threads: torch runs one thread per core that other processes leave free (``auto``) or a given count, the
choice is recorded where calibrate reads it, and fit / validate warn when the bench and the runs differ."""

import argparse
import json
import os

import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from calibrate.bench.tables import bench_threads, threads_warning  # noqa: E402
from calibrate.loop.commands import bench_commands, train_command  # noqa: E402
from real import environment  # noqa: E402
from real.errors import RealError  # noqa: E402


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)
    environment._threads_rule = None


def test_auto_takes_one_thread_per_free_core(monkeypatch, restore_threads):
    torch.set_num_threads(2)
    monkeypatch.setattr(environment, "free_cores", lambda sample_s=0.5: (2, 1, 1.0))
    rule = environment.apply_threads("auto")
    assert torch.get_num_threads() == 1
    assert "1.0 of 2 cores busy" in rule
    env = environment.environment()
    assert env["torch_threads"] == 1 and env["threads_rule"] == rule


def test_auto_never_exceeds_torchs_default(monkeypatch, restore_threads):
    torch.set_num_threads(1)
    monkeypatch.setattr(environment, "free_cores", lambda sample_s=0.5: (4, 4, 0.0))
    environment.apply_threads("auto")
    assert torch.get_num_threads() == 1


def test_auto_measures_the_machine(restore_threads):
    cores, free, busy = environment.free_cores(0.1)
    assert 1 <= free <= cores and (busy is None or busy >= 0)


def test_a_count_is_taken_as_given_and_nonsense_is_refused(restore_threads):
    assert environment.apply_threads("1") == "--threads 1" and torch.get_num_threads() == 1
    for bad in ("0", "-2", "many"):
        with pytest.raises(RealError, match="--threads"):
            environment.apply_threads(bad)


class _Run:
    def __init__(self, threads):
        self.environment = {"torch_threads": threads} if threads is not None else {}


def test_fit_and_validate_warn_when_bench_and_runs_ran_with_other_threads():
    table = pd.DataFrame(
        {
            "phase": ["rollout", "train_actor", "train_actor"],
            "provenance": [json.dumps({"torch_threads": 1}), json.dumps({"torch_threads": 1}), None],
        }
    )
    bench = bench_threads(table)
    assert bench == {"rollout": 1, "train_actor": 1}
    warning = threads_warning(bench, [_Run(2), _Run(2)], "the reference runs")
    assert warning is not None and "2 torch thread(s)" in warning and "train_actor 1" in warning
    assert threads_warning(bench, [_Run(1)], "x") is None
    assert threads_warning(bench, [_Run(None)], "x") is None  # runs that do not record it
    assert threads_warning({}, [_Run(2)], "x") is None  # a bench that does not record it


def test_the_loop_passes_its_threads_to_every_bench_and_run(tmp_path):
    for cmd in bench_commands(tmp_path, "hf", [64, 128, 512], "1"):
        assert cmd[cmd.index("--threads") + 1] == "1"
    args = argparse.Namespace(
        task="parity:length=3", engine="hf", group_size=8, target=0.9, threads="1", max_steps=600, algo="ppo"
    )
    cmd = train_command(args, 16, 0, tmp_path / "run")
    assert cmd[cmd.index("--threads") + 1] == "1" and cmd[cmd.index("--max-steps") + 1] == "600"
    assert cmd[cmd.index("--algo") + 1] == "ppo"


def test_the_loop_decides_its_threads_once_for_every_command():
    """auto is resolved once, at the loop's start, into the one count every bench and run gets (per command it gave
    the bench and the runs different counts as the load came and went); a number is kept; a typo is refused."""
    from calibrate import CalibrateError
    from calibrate.loop.commands import resolve_threads

    n, why = resolve_threads("auto", sample_s=0.2)
    assert n.isdigit() and 1 <= int(n) <= (os.cpu_count() or 1) and why.startswith("auto")
    assert resolve_threads("2") == ("2", "--threads 2")
    with pytest.raises(CalibrateError, match="--threads 'two'"):
        resolve_threads("two")


def test_a_loop_with_a_bad_argument_stops_before_it_writes_anything(tmp_path):
    from calibrate.cli import main

    for bad in (["--held-out", "0,4"], ["--held-out", "x"], ["--threads", "tw0"], ["--max-steps", "1"]):
        assert main(["loop", *bad, "-o", str(tmp_path / "loop")]) == 2
        assert not (tmp_path / "loop").exists()
