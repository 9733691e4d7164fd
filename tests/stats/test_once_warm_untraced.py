"""The "Once warm" headline's untraced evidence is the warm steps' own (decision 547): its
place and the Python sampled were the whole profile's, so a warm-up's imports were named as
most of the steps' time under steps that never ran them. Synthetic profiles built in code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from stepscope.model import open_run
from stepscope.stats.host.python_samples import PythonTime
from stepscope.stats.host.untraced import GapPlace, Untraced
from stepscope.tools import output
from stepscope.tools.context import ProfileStore, ToolContext
from stepscope.tools.registry import get_tool
from stepscope.xspace.builder import XSpaceBuilder
from stepscope.xspace.io import write_xspace
from tests.support.analysis import MS
from tests.support.fetch_loop import LOOP, sampled_main

STEPS = 12  # marked: the first and the last left out (XProf's rule), step 1 the warm-up
IMPORTS = f"{LOOP};_find_and_load (<frozen importlib._bootstrap>:1)"
TOKENIZE = f"{LOOP};tokenize (text.py:9)"


def _loop() -> XSpaceBuilder:
    """Steps of a 2 ms model op, then 8 ms of untraced Python (``tokenize``, 4 samples); step
    1 first spends 90 ms untraced importing (18 samples)."""
    builder, main, samples = sampled_main()
    t = 0
    for k in range(STEPS):
        extra = 90 if k == 1 else 0
        main.event("train", t * MS, (extra + 10) * MS, {"step_num": k, "_r": 1})
        if extra:
            samples.event("_find_and_load", t * MS, extra * MS, {"stack": IMPORTS, "samples": 18})
        main.event("aten::mm", (t + extra) * MS, 2 * MS)
        at = (t + extra + 2) * MS
        samples.event("tokenize", at, 8 * MS, {"stack": TOKENIZE, "samples": 4})
        t += extra + 10
    return builder


def _page(tmp_path: Path) -> dict[str, Any]:
    run_dir = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    write_xspace(_loop().build(), run_dir / "py.xplane.pb")
    run = open_run(str(run_dir))
    ctx = ToolContext(run, run.host_names[0], ProfileStore(use_cache=False), {})
    page: dict[str, Any] = output.to_json(get_tool("overview_page").build(ctx))
    return page


def test_once_warm_the_untraced_place_and_python_are_the_warm_steps(tmp_path: Path) -> None:
    """Before, the whole profile's picture: "(... ms per step in 10 of 10 steps); Python
    sampled in the steps: ... _find_and_load ..." under 10 ms steps that import nothing."""
    page = _page(tmp_path)
    steady = page["steady_state"]
    assert steady["warmup_steps"] == [1] and steady["steps"] == 9
    headline = steady["bound_by"]["headline"]
    assert "mostly after 'aten::mm' and before '(step end)' (8.00 ms per step in 9 of 9 steps)" in (
        headline
    )
    said = "Python sampled in the steps: tokenize (text.py) 100.0% of the step time (36 of 36"
    assert said in headline
    assert "_find_and_load" not in headline


def test_all_steps_keep_the_whole_profiles_python(tmp_path: Path) -> None:
    headline = _page(tmp_path)["bound_by"]["headline"]
    assert "_find_and_load (<frozen importlib._bootstrap>) 45.8% of the step time" in headline


def test_the_places_of_some_steps_regrouped_most_time_first() -> None:
    """Steps 0-3's largest gaps: place 0 (10 ms), none, place 1 (3 ms), place 1 (4 ms); from
    step 1 on, place 1 holds 7 ms in 2 steps and comes first; the step without one stays -1."""
    whole = Untraced(
        "MainThread",
        (GapPlace("a", "b", 10 * MS, 1), GapPlace("c", "d", 7 * MS, 2)),
        place_of_step=np.array([0, -1, 1, 1], np.int32),
        host_ns_of_step=np.array([10, 0, 3, 4], np.int64) * MS,
    )
    part = whole.from_step(1, PythonTime.empty())
    assert part is not None and part.places == (GapPlace("c", "d", 7 * MS, 2),)
    assert part.place_of_step.tolist() == [-1, 0, 0]
    none = whole.from_step(4, PythonTime.empty())
    assert none is not None and none.places == () and not len(none.place_of_step)
