"""scripts/results_page.py: the first lines of every page under docs/results/ name the command that wrote it, the
date and the machine (CPU model and cores), and a page is written whole."""

import os
import re

from tests.conftest import load_script


def test_the_header_names_command_date_and_machine():
    page = load_script("results_page")
    lines = page.header("Title", page.command("scaling", ["--repeats", "3", "-o", "a b.md"]))
    assert lines[0] == "# Title"
    match = re.match(r"Written by `(.*)` on (\d{4}-\d{2}-\d{2}) \((.*)\)\. Rerun the command", lines[2])
    assert match, lines[2]
    assert match[1] == "python scripts/scaling.py --repeats 3 -o 'a b.md'"
    assert match[3] == page.machine() and f"{os.cpu_count()} cores" in match[3]
    assert page.cpu_model() in match[3] and page.cpu_model()


def test_a_page_is_written_whole(tmp_path):
    page = load_script("results_page")
    path = tmp_path / "results" / "x.md"
    page.write(path, ["# new", "", "table"])
    path.write_text(path.read_text() + "added by hand\n")
    page.write(path, ["# new", "", "table", ""])
    assert path.read_text() == "# new\n\ntable\n"
