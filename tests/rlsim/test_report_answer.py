"""Each report leads with the answer (issue 30, must-show 1): the run, sweep and plan pages of the paper scenario
state the time-to-target in hours with its band (and the plan page the change to make and the framework patch),
in the page's text as a browser renders it. Without a Chromium the same check runs on the HTML's text."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import pytest

from rlsim.answers.answer import Answer
from rlsim.answers.report import find_chrome
from rlsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAPER = str(ROOT / "scenarios" / "paper_grpo.yaml")


def _page_text(page: Path) -> str:
    """The text a reader sees: Chromium's rendered DOM where one is installed, else the HTML with tags removed."""
    chrome = find_chrome()
    source = page.read_text()
    if chrome is not None:
        proc = subprocess.run(
            [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode == 0 and proc.stdout:
            source = proc.stdout
    body = re.sub(r"<script.*?</script>", " ", source, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def _answer_part(text: str) -> str:
    """The page from its Answer heading to the next section: the answer must be there, not buried below."""
    start = text.index("Answer")
    return text[start : start + 1500]


def test_run_report_states_the_answer_first(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", PAPER, "-o", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert main(["report", str(out), "-o", str(out / "report.html")]) == 0
    text = _answer_part(_page_text(out / "report.html"))
    answer = Answer.of(summary)
    assert answer.sentence() in text  # "time-to-target 11.84 h (band 8.70 h .. 16.30 h, systems +-20% in it), ..."
    assert re.search(r"time-to-target \d+\.\d\d h \(band \d+\.\d\d h \.\. \d+\.\d\d h, systems \+-\d+% in it\)", text)
    assert "GPU-h" in text and "42297" not in text  # human units, no raw seconds


def test_sweep_report_names_the_fastest_configuration(tmp_path):
    out = tmp_path / "sweep"
    argv = ["sweep", PAPER, "--grid", "workload.prompts_per_step=128,1024", "--grid", "learning.lr_rule=sqrt,none"]
    assert main([*argv, "-o", str(out)]) == 0
    assert main(["report", str(out), "-o", str(out / "report.html")]) == 0
    text = _answer_part(_page_text(out / "report.html"))
    m = re.search(r"Fastest to the target: P=(\d+), LR (\w+).*?time-to-target (\d+\.\d\d) h \(band", text)
    assert m is not None, text[:600]
    assert (m.group(1), m.group(2)) == ("1024", "sqrt")  # the paper's answer: P=1024 retuned beats P=128
    assert "needs 11.84 h" in text  # the scenario's own configuration, for comparison
    assert "None" not in text  # no column of empty errors


def test_plan_report_gives_the_change_and_the_patch(tmp_path):
    out = tmp_path / "plan"
    argv = [
        "plan", PAPER, "--grid", "workload.prompts_per_step=128,512", "--grid", "learning.lr_rule=sqrt",
        "--schedules", "async-1", "--grid", "engine.tensor_parallel_size=2", "--finalists", "2",
        "-o", str(out), "--emit", "verl",
    ]  # fmt: skip
    assert main(argv) == 0
    text = _answer_part(_page_text(out / "report.html"))
    assert re.search(r"Run P=512, .*time-to-target \d+\.\d\d h \(band .*against your \d+\.\d\d h \(band", text)
    assert "The change to make" in text and "workload.prompts_per_step 128 512" in text
    assert "--set workload.prompts_per_step=512" in text
    assert "verl overrides for the winner" in text and "data.train_batch_size=" in text


@pytest.mark.skipif(find_chrome() is None, reason="needs a Chromium (apt-get install chromium)")
def test_the_reports_render_in_a_browser(tmp_path):
    """A screenshot from headless Chromium is a real page (not an error page): a PNG of some size."""
    out = tmp_path / "run"
    assert main(["run", PAPER, "--set", "run.until_target=false", "-o", str(out)]) == 0
    assert main(["report", str(out), "-o", str(out / "report.html")]) == 0
    png = tmp_path / "shot.png"
    subprocess.run(
        [find_chrome(), "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={png}", "--window-size=1280,900",
         (out / "report.html").resolve().as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
