"""Rewrite the generated tables of docs/import-config.md from the framework adapters (rlsim.frameworks.docs).

python scripts/framework_docs.py           # rewrite the tables in place
python scripts/framework_docs.py --check   # exit 1 if they are out of date, writing nothing
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's rlsim, installed or not

from rlsim.frameworks.docs import render_docs  # noqa: E402

DOCS = ROOT / "docs" / "import-config.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the tables are out of date; write nothing")
    parser.add_argument("--docs", type=Path, default=DOCS, help=f"the page to rewrite (default: {DOCS.name})")
    args = parser.parse_args(argv)
    text = args.docs.read_text()
    rendered = render_docs(text)
    if args.check:
        if rendered != text:
            print(f"{args.docs}: generated tables are out of date; run python scripts/framework_docs.py")
            return 1
        print(f"{args.docs}: up to date")
        return 0
    if rendered != text:
        args.docs.write_text(rendered)
        print(f"wrote {args.docs}")
    else:
        print(f"{args.docs}: up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
