"""Regenerate the field tables of docs/tools/<tool>.md from the tools' result metadata.

    python scripts/gen_tool_docs.py [--check]

For every tool whose result is declared with `stepscope.tools.output.out` fields, the table
between the ``<!-- fields -->`` and ``<!-- /fields -->`` markers of its page is rewritten
from the metadata (key, meaning, unit); prose outside the markers is left alone.
``--check`` changes nothing and exits 1 when a page is out of date (tests run the same
check).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stepscope.tools.field_docs import docs_out_of_date, write_field_tables

DOCS = Path(__file__).resolve().parents[1] / "docs" / "tools"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report stale pages")
    args = parser.parse_args()
    if args.check:
        stale = docs_out_of_date(DOCS)
        for name in stale:
            print(f"docs/tools/{name}.md: field table out of date (run scripts/gen_tool_docs.py)")
        return 1 if stale else 0
    for name in write_field_tables(DOCS):
        print(f"docs/tools/{name}.md: field table rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
