"""The docs read as reference: every relative link and anchor in README.md, CHANGELOG.md and docs/ resolves; docs/
without its generated results and tables stays within 2,000 lines and design.md within 250; no dated session
narration outside CHANGELOG.md and docs/results/; every results page opens with the command, date and machine that
produced it. Each checker is tried on a case it must refuse, so the test can fail."""

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCS = ROOT / "docs"
RESULTS = DOCS / "results"
BUDGET_LINES = 2000  # docs/*.md without docs/results/ and without the code-generated tables in them
GENERATED = re.compile(r"^<!-- generated: [^>]*-->\n.*?^<!-- /generated -->\n?", re.S | re.M)
DESIGN_LINES = 250
SESSION = re.compile(
    r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|last|this|next)"
    r" session",
    re.IGNORECASE,
)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
# the command, then the date, then the machine it ran on
HEADER = re.compile(
    r"^(Written by|Recorded from) `[^`]+`.*\b\d{4}-\d{2}-\d{2}\b.*\b(CPU|VM|GPU|cores|H100|H200)\b", re.S
)
# a path of the project in inline code: it must exist (research notes cite other repositories' paths)
CODE_PATH = re.compile(r"`((?:rlsim|calibrate|real|scripts|tests|scenarios)/[\w./-]*[\w/])`")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]


def _prose(text: str) -> str:
    """``text`` without fenced code blocks and inline code (links there are examples, not links)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(text: str) -> set[str]:
    """GitHub's anchors for the headings of a markdown page: lower case, punctuation dropped, spaces as hyphens,
    a repeated heading numbered."""
    seen: dict[str, int] = {}
    out = set()
    for line in re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m[1].lower().replace("`", "")).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def broken_links(path: Path, text: str) -> list[str]:
    """The relative links of ``text`` (a page at ``path``) whose file or anchor does not exist."""
    bad = []
    for m in LINK.finditer(_prose(text)):
        target = m[1] or m[2]
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            bad.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
            bad.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    return bad


def written_lines(text: str) -> int:
    """Lines of a page less its code-generated blocks (``<!-- generated: X -->`` .. ``<!-- /generated -->``)."""
    return len(GENERATED.sub("", text).splitlines())


def budget_lines() -> dict[str, int]:
    """Written lines of every docs/ page outside docs/results/, by path."""
    files = [p for p in DOCS.rglob("*.md") if RESULTS not in p.parents]
    return {str(p.relative_to(ROOT)): written_lines(p.read_text()) for p in files}


def session_narration(pages: dict[Path, str]) -> list[str]:
    """The pages of ``pages`` (path: text) outside CHANGELOG.md and docs/results/ that narrate by session."""
    return [
        str(p.relative_to(ROOT))
        for p, text in pages.items()
        if p.name != "CHANGELOG.md" and RESULTS not in p.parents and SESSION.search(text)
    ]


def header_paragraph(text: str) -> str:
    """A results page's first paragraph after its title, on one line."""
    return " ".join(text.split("\n\n")[1].split())


def test_every_relative_link_and_anchor_resolves():
    bad = [b for p in markdown_files() for b in broken_links(p, p.read_text())]
    assert not bad, "\n".join(bad)


def test_the_link_checker_finds_a_missing_file_and_a_missing_heading():
    page = DOCS / "design.md"
    text = "[a](scaling.md) [b](no_such.md) [c](scaling.md#what-the-work-is) [d](scaling.md#nowhere) `[e](x.md)`"
    assert broken_links(page, text) == [
        "docs/design.md: no_such.md (no such file)",
        "docs/design.md: scaling.md#nowhere (no such heading)",
    ]
    assert anchors("# A `b` c\n## Q&A: one, two\n## Q&A: one, two\n```\n# not a heading\n```\n") == {
        "a-b-c",
        "qa-one-two",
        "qa-one-two-1",
    }


def test_the_docs_stay_within_their_budget():
    lines = budget_lines()
    assert sum(lines.values()) <= BUDGET_LINES, f"docs/ without results: {sum(lines.values())} lines, {lines}"
    assert lines["docs/design.md"] <= DESIGN_LINES, f"design.md: {lines['docs/design.md']} lines"


def test_generated_tables_are_left_out_of_the_budget_and_nothing_else():
    page = "# T\nprose\n<!-- generated: verl -->\n| a |\n| b |\n<!-- /generated -->\nmore\n"
    assert written_lines(page) == 3
    assert written_lines("# T\n<!-- generated: x -->\nno end marker\n") == 3


def test_no_session_narration_outside_the_changelog_and_results():
    assert session_narration({p: p.read_text() for p in markdown_files()}) == []
    diary = "Measured 2026-12-04 (eighth session); for the Next session: vLLM."
    pages = {DOCS / "design.md": diary, ROOT / "CHANGELOG.md": diary, RESULTS / "scaling.md": diary}
    assert session_narration(pages) == ["docs/design.md"]
    assert not SESSION.search("a sessional note, sessions of the loop")


def test_history_dates_stay_out_of_the_reference_pages():
    """A day the changelog records is history: reference pages (README.md, docs/ outside results/ and research/) do
    not date their text by it."""
    days = set(re.findall(r"^## (\d{4}-\d{2}-\d{2})", (ROOT / "CHANGELOG.md").read_text(), flags=re.MULTILINE))
    assert days
    pages = [ROOT / "README.md"] + [
        p for p in DOCS.rglob("*.md") if RESULTS not in p.parents and DOCS / "research" not in p.parents
    ]
    dated = {str(p.relative_to(ROOT)): sorted(d for d in days if d in p.read_text()) for p in pages}
    assert {k: v for k, v in dated.items() if v} == {}


@pytest.mark.parametrize("page", sorted(p.name for p in RESULTS.glob("*.md") if p.name != "README.md"))
def test_a_results_page_names_its_command_date_and_machine(page):
    text = (RESULTS / page).read_text()
    first = header_paragraph(text)
    assert text.startswith("# ") and HEADER.match(first), first
    scripts = re.findall(r"scripts/(\w+)\.py", first)
    assert all((ROOT / "scripts" / f"{s}.py").is_file() for s in scripts), scripts
    assert page in (RESULTS / "README.md").read_text(), f"docs/results/README.md does not list {page}"


def test_the_results_header_check_refuses_a_page_without_one():
    page = "# T\n\nWritten by `python scripts/scaling.py` on\n2026-01-02 (A CPU, 2 cores).\n\n| table |\n"
    assert HEADER.match(header_paragraph(page))
    assert HEADER.match("Written by `python scripts/scaling.py` on 2026-01-02 (A CPU, 2 cores).")
    assert not HEADER.match("Measured on this VM, with the numbers below.")
    assert not HEADER.match("Written by `python scripts/scaling.py` (no date).")
    assert not HEADER.match("Written by `python scripts/scaling.py` on 2026-01-02.")  # no machine


def missing_paths(text: str) -> list[str]:
    """The project paths named in inline code of ``text`` that do not exist (globs and placeholders skipped)."""
    names = (m[1].rstrip("/") for m in CODE_PATH.finditer(text))
    return [n for n in names if "*" not in n and "<" not in n and not (ROOT / n).exists()]


def test_every_project_path_the_docs_name_exists():
    pages = [ROOT / "README.md", *(p for p in sorted(DOCS.rglob("*.md")) if "research" not in p.parts)]
    missing = [f"{p.relative_to(ROOT)}: {n}" for p in pages for n in missing_paths(p.read_text())]
    assert not missing, "paths that do not exist (moved?): " + "; ".join(missing)
    assert missing_paths("see `calibrate/published.py` and `rlsim/cli.py`") == ["calibrate/published.py"]
