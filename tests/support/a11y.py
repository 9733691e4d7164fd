"""The accessibility check of the web UI's pages: axe-core (vendored, tests/support/vendor/)
run in the page, its serious and critical violations listed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
GRAVE = ("serious", "critical")


def grave_violations(page: Any) -> list[str]:
    """axe-core's serious and critical violations on the page as drawn (one line each: rule,
    impact, how many elements, the first few). The engine is evaluated through the
    DevTools protocol, which the page's Content-Security-Policy does not govern."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8") + "\n;true")
    found = page.evaluate(
        """async (grave) => {
        const r = await window.axe.run(document, {resultTypes: ['violations']});
        return r.violations.filter((v) => grave.includes(v.impact)).map((v) =>
          `${v.id} (${v.impact}, ${v.nodes.length}): ${v.help} — `
          + v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(' | '));
    }""",
        list(GRAVE),
    )
    return list(found)
