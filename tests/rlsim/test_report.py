"""`rlsim report`: a self-contained HTML file, with no external URL, that renders in headless Chromium."""

import re
import subprocess
import sys

import pytest
import yaml

import rlsim
from rlsim.answers.report import find_chrome
from tests.conftest import SCENARIOS
from tests.rlsim.test_sweep import LEARNING


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    raw = rlsim.load_scenario(SCENARIOS / "small_1gpu.yaml", LEARNING).to_dict()
    raw["model"], raw["hardware"]["gpu"] = raw["model"]["name"], raw["hardware"]["gpu"]["name"]
    (root / "s.yaml").write_text(yaml.safe_dump(raw))
    out = root / "sweep"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlsim.cli",
            "sweep",
            str(root / "s.yaml"),
            "-o",
            str(out),
            "--grid",
            "workload.prompts_per_step=16,32,64",
            "--grid",
            "learning.lr_rule=sqrt,none",
            "--workers",
            "1",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def report(sweep_dir):
    proc = subprocess.run(
        [sys.executable, "-m", "rlsim.cli", "report", str(sweep_dir), "-o", str(sweep_dir / "r.html")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return sweep_dir / "r.html"


EXTERNAL = [
    r"<script[^>]+src\s*=",  # any script loaded from elsewhere
    r"<link[^>]+href\s*=\s*[\"']?(https?:)?//",  # stylesheets, fonts, icons
    r"@import\s+url\(\s*[\"']?(https?:)?//",
    r"@font-face[^}]*url\(\s*[\"']?(https?:)?//",
    r"<img[^>]+src\s*=\s*[\"']?(https?:)?//",
]


def test_report_is_self_contained(report):
    text = report.read_text()
    for pattern in EXTERNAL:
        assert not re.search(pattern, text, flags=re.I), pattern
    assert "Plotly.newPlot" in text and text.count("Plotly.newPlot") == 5  # five figures, JS embedded once
    for heading in (
        "Time-to-target vs batch",
        "throughput gain vs samples penalty",
        "Metric vs samples",
        "Phase breakdown",
        "Generation throughput vs concurrency",
        "Provenance",
    ):
        assert heading.lower() in text.lower(), heading
    scn = yaml.safe_load((report.parent / "scenario.resolved.yaml").read_text())
    digest = rlsim.from_dict(scn).digest()
    assert digest in text and rlsim.__version__ in text and "Assumptions of the scenario" in text


def test_detector_catches_external_resources():
    for bad in (
        '<script src="https://cdn.plot.ly/plotly.min.js"></script>',
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css">',
        "<style>@import url('//example.com/a.css');</style>",
    ):
        assert any(re.search(p, bad, flags=re.I) for p in EXTERNAL), bad


def _console_lines(path):
    chrome = find_chrome()
    proc = subprocess.run(
        [
            chrome,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={path.parent / 'chrome-profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return [line for line in proc.stderr.splitlines() if "CONSOLE" in line], proc.stdout


@pytest.mark.skipif(find_chrome() is None, reason="Chromium is not installed (Debian: apt-get install chromium)")
def test_report_renders_in_headless_chromium_without_console_errors(report, tmp_path):
    console, dom = _console_lines(report)
    assert console == []
    assert dom.count('class="main-svg"') >= 5  # plotly drew every figure
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><script>notDefined();</script></body></html>")
    assert _console_lines(broken)[0], "the console check must see a JS error"


def test_run_directory_report(tmp_path):
    out = tmp_path / "run"
    assert (
        subprocess.run(
            [
                sys.executable,
                "-m",
                "rlsim.cli",
                "run",
                str(SCENARIOS / "paper_grpo.yaml"),
                "--set",
                "run.steps=4",
                "-o",
                str(out),
            ],
            capture_output=True,
        ).returncode
        == 0
    )
    proc = subprocess.run([sys.executable, "-m", "rlsim.cli", "report", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = (out / "report.html").read_text()
    assert "Phase breakdown per step" in text and "Provenance" in text


def test_report_on_a_directory_without_results(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "rlsim.cli", "report", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "neither sweep.csv" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_png_export_or_clear_message(sweep_dir, tmp_path):
    env_path = tmp_path / "r.html"
    proc = subprocess.run(
        [sys.executable, "-m", "rlsim.cli", "report", str(sweep_dir), "-o", str(env_path), "--png"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if find_chrome() is None:
        assert proc.returncode == 1 and "needs Chrome or Chromium" in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
        pngs = sorted(tmp_path.glob("fig*.png"))
        assert len(pngs) == 5 and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert env_path.is_file()  # the HTML is written either way


def test_png_export_without_chrome_says_how_to_fix(sweep_dir, tmp_path):
    env = {"PATH": "/nonexistent", "BROWSER_PATH": "/nonexistent/chrome", "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "rlsim.cli", "report", str(sweep_dir), "-o", str(tmp_path / "x.html"), "--png"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 1
    assert "apt-get install chromium" in proc.stderr and "BROWSER_PATH" in proc.stderr
    assert (tmp_path / "x.html").is_file()


def test_report_on_an_incomplete_sweep_directory(tmp_path):
    (tmp_path / "sweep.csv").write_text("config\n0\n")
    proc = subprocess.run([sys.executable, "-m", "rlsim.cli", "report", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "sweep.json" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "name, content, words",
    [
        ("summary.json", b"", "summary.json: not valid JSON"),
        ("summary.json", bytes(range(256)), "is a binary file"),
        ("scenario.resolved.yaml", b"", "expected a YAML mapping"),
        ("scenario.resolved.yaml", b"a: [1,\n", "not valid YAML"),
        ("steps.csv", b"", "not a readable table"),
        ("steps.csv", b"step,wall_s\n1,0.5\n", "lacks column(s) cumulative_samples"),
    ],
)
def test_report_on_a_broken_run_directory(tmp_path, name, content, words):
    """Each file of a run directory emptied, binary, invalid or with wrong columns: one line, exit 2."""
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "rlsim.cli", "run", str(SCENARIOS / "small_1gpu.yaml"), "--set", "run.steps=3"]
    assert subprocess.run([*argv, "-o", str(out)], capture_output=True).returncode == 0
    (out / name).write_bytes(content)
    proc = subprocess.run([sys.executable, "-m", "rlsim.cli", "report", str(out)], capture_output=True, text=True)
    assert proc.returncode == 2 and words in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert not (out / "report.html").exists()


def test_report_refuses_a_truncated_steps_table_and_wrong_curves(tmp_path):
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "rlsim.cli", "run", str(SCENARIOS / "small_1gpu.yaml"), "--set", "run.steps=3"]
    assert subprocess.run([*argv, "-o", str(out)], capture_output=True).returncode == 0
    lines = (out / "steps.csv").read_text().splitlines()
    (out / "steps.csv").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:5])  # the last row cut short
    proc = subprocess.run([sys.executable, "-m", "rlsim.cli", "report", str(out)], capture_output=True, text=True)
    assert proc.returncode == 2 and "truncated" in proc.stderr, proc.stderr
    sweep = tmp_path / "sweep"
    argv = [sys.executable, "-m", "rlsim.cli", "sweep", str(SCENARIOS / "small_1gpu.yaml"), "--set", "run.steps=2"]
    argv += ["--grid", "workload.prompts_per_step=16,32", "-o", str(sweep)]
    assert subprocess.run(argv, capture_output=True).returncode == 0
    (sweep / "curves.csv").write_text("a,b\n1,2\n")
    proc = subprocess.run([sys.executable, "-m", "rlsim.cli", "report", str(sweep)], capture_output=True, text=True)
    assert proc.returncode == 2 and "curves.csv: lacks column(s)" in proc.stderr, proc.stderr


def test_every_timed_phase_has_a_colour():
    """The report colours phases by their Phase names: every phase a run times gets one, and nothing else does."""
    from rlsim.answers.figures import PHASE_COLORS
    from rlsim.phases import TIMED_PHASES

    assert list(PHASE_COLORS) == [p.value for p in TIMED_PHASES]
    assert len(set(PHASE_COLORS.values())) == len(PHASE_COLORS)
