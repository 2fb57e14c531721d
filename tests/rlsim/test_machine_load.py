"""The machine's load over a measurement: other processes' CPU share, and the warning calibrate prints."""

import os
import subprocess
import sys
import time

import pytest

from rlsim.host.machine_load import HIGH_OTHER_CPU, LoadMeter, load_summary, load_warning


def test_a_cpu_bound_neighbour_shows_up_as_other_cpu():
    """While this process sleeps, a second process spinning on one core takes about one core of the machine:
    other_cpu_fraction x cores comes out near 1 (never below a half; more if the machine is busier still)."""
    hog = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 5: pass"])
    try:
        time.sleep(0.3)  # let it start spinning
        meter = LoadMeter().start()
        time.sleep(1.0)
        load = meter.stop()
    finally:
        hog.kill()
        hog.wait()
    if load["other_cpu_fraction"] is None:
        pytest.skip("/proc/stat is not readable here")
    assert load["other_cpu_fraction"] * (os.cpu_count() or 1) > 0.5
    assert load["cpu_s"] < 0.2  # this process slept


def test_the_warning_counts_the_loaded_measurements():
    quiet = [{"other_cpu_fraction": 0.01}] * 20
    assert load_warning("bench", load_summary(quiet)) is None
    # a few slowed repeats are what the medians absorb: no warning at 10% or fewer
    assert load_warning("bench", load_summary(quiet + [{"other_cpu_fraction": 0.5}] * 2)) is None
    busy = load_summary(quiet + [{"other_cpu_fraction": 0.5}] * 10 + [{"other_cpu_fraction": None}])
    assert busy["measured"] == 30 and busy["num_high"] == 10 and busy["max_other_cpu_fraction"] == 0.5
    msg = load_warning("run P8_seed1", busy)
    assert msg.startswith("run P8_seed1: other processes took more than 20%") and "10 of 30" in msg
    assert HIGH_OTHER_CPU == 0.2
    assert load_summary([{"x": 1}])["median_other_cpu_fraction"] is None  # logs without the field
    # a bench table's empty cells come through pandas as NaN: not measurements
    assert load_summary([{"other_cpu_fraction": float("nan")}, {"other_cpu_fraction": 0.3}])["measured"] == 1
