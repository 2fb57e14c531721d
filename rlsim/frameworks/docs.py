"""The generated parts of docs/import-config.md: each adapter's mapping table
(:meth:`~rlsim.frameworks.adapter.FrameworkAdapter.docs_table`) between ``<!-- generated: NAME -->`` and
``<!-- /generated -->`` markers. The library returns the text; ``python scripts/framework_docs.py`` writes the file
and a test checks that it is up to date."""

from __future__ import annotations

import re

from rlsim.frameworks import registry

MARK = re.compile(r"<!-- generated: (?P<name>[\w-]+) -->\n.*?<!-- /generated -->", re.S)


def render_docs(text: str) -> str:
    """``text`` with every ``<!-- generated: NAME -->`` block replaced by adapter NAME's table."""
    return MARK.sub(
        lambda m: f"<!-- generated: {m['name']} -->\n{registry.get(m['name']).docs_table()}\n<!-- /generated -->", text
    )
