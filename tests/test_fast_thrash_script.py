"""scripts/fast_thrash.py, the fast-vs-exact table of docs/results/fast_thrash.md: its row of a case is that case's
numbers (the makespan, preemptions and recompute of the two models on the recorded step), the page opens with its
command, date and machine, and bad arguments are refused."""

import pytest

from rlsim.engine.kernel import STAT_MAKESPAN_S, STAT_PREEMPTIONS, STAT_RECOMPUTED_TOKENS
from tests.conftest import load_script
from tests.rlsim.thrash_steps import recorded_step, run


@pytest.fixture(scope="module")
def script():
    return load_script("fast_thrash")


def test_a_row_gives_the_cases_numbers(script):
    cells = [c.strip() for c in script.compare("dense_colocated", 1).strip("|").split("|")]
    (_, exact), (_, fast) = (run(recorded_step("dense_colocated"), f) for f in (False, True))
    e, f = exact[0], fast[0]
    assert cells[:2] == ["dense_colocated", "512"]
    assert cells[2] == f"{f[STAT_MAKESPAN_S] / e[STAT_MAKESPAN_S] - 1:+.2%}"
    assert cells[5] == f"{f[STAT_PREEMPTIONS] / e[STAT_PREEMPTIONS]:.2f}x"
    assert cells[6] == f"{f[STAT_RECOMPUTED_TOKENS] / e[STAT_RECOMPUTED_TOKENS] - 1:+.2%}"
    assert len(cells[4].split(" / ")) == 3 and cells[7].endswith("ms)")


@pytest.mark.parametrize(
    ("argv", "says"),
    [(["--rounds", "0"], "--rounds must be at least 1, not 0"), (["--case", "paper_8192"], "invalid choice")],
)
def test_bad_arguments_exit_2(script, argv, says, capsys):
    with pytest.raises(SystemExit) as exc:
        script.main(argv)
    assert exc.value.code == 2
    assert says in capsys.readouterr().err


def test_the_page_names_its_command_date_machine_and_kernel(script):
    from tests.conftest import ROOT

    row = "| dense_colocated | 512 | -0.01% | +0.15% | +0.05 / +0.17 / +0.24% | 1.03x | +0.3% | 1.25x (1 / 2 ms) |"
    lines = script.page("python scripts/fast_thrash.py --write", [row], 9, 0.02, "2026-01-02", "A CPU, 2 cores")
    assert lines[0] == f"# {script.TITLE}"
    written = "Written by `python scripts/fast_thrash.py --write` on 2026-01-02 (A CPU, 2 cores; kernel "
    assert lines[2].startswith(written)
    assert lines[-2:] == [script.HEADER, row] and "medians of 9 interleaved runs" in lines[4]
    assert script.OUTPUT == ROOT / "docs" / "results" / "fast_thrash.md"
