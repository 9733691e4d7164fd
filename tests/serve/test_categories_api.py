"""Step-time categories are defined once, in Python, and served to the web UI."""

from __future__ import annotations

import re

import httpx

from stepscope.serve.routes import STATIC_DIR
from stepscope.stats.events import CATEGORY_COLORS, CATEGORY_LABELS, CATEGORY_NAMES


def test_categories_are_served_in_stacking_order(client: httpx.Client) -> None:
    response = client.get("/api/categories")
    assert response.status_code == 200
    served = response.json()["categories"]
    assert [c["key"] for c in served] == list(CATEGORY_COLORS)
    assert {c["key"] for c in served} == set(CATEGORY_NAMES)  # every category, no other
    assert all(c["label"] == CATEGORY_LABELS[c["key"]] for c in served)
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c["color"]) for c in served)
    assert served[0]["key"] == "device_compute" and served[-1]["key"] == "other"


def test_no_second_copy_of_the_categories_in_the_ui() -> None:
    names = "|".join(CATEGORY_NAMES)
    # A category given its own colour in JS: {key: 'input', label: '...', color: '#d93025'}.
    table = re.compile(rf"key:\s*'({names})'\s*,\s*label:\s*'[^']*'\s*,\s*color:\s*'#")
    copies = [path.name for path in STATIC_DIR.rglob("*.js") if table.search(path.read_text())]
    assert copies == []
