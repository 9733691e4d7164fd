"""`stepscope.steps(loader)`: each step opens before its batch is fetched, so the wait for
data is the step's input, in stepscope and XProf alike; the README's loop says so too."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import stepscope
from stepscope.stats import build_step_db
from stepscope.vocab.profiler import END_OF_SEQUENCE_STAT
from tests.support.capture import load_run, named, run_script


def _records(n: int) -> Iterator[int]:
    for i in range(n):
        time.sleep(0.002)
        yield i


def test_steps_open_before_the_fetch_and_close_after_the_body(tmp_path: Path) -> None:
    stepscope.start(tmp_path)
    seen = []
    for step, batch in stepscope.steps(_records(7), start=3, loader_name="Source"):
        with stepscope.trace("compute"):
            seen.append((step, batch))
    profile = load_run(stepscope.stop())
    assert seen == [(3 + i, i) for i in range(7)]
    markers = named(profile, "train")
    fetches = named(profile, "IteratorGetNextOp::DoCompute")
    computes = named(profile, "compute")
    # one marker per batch (the exhausted fetch at the end is no step), each holding its fetch
    assert [m["stats"]["step_num"] for m in markers] == list(range(3, 10))
    assert len(fetches) == 8 and len(named(profile, "Iterator::Source")) == 8
    # ... and it says so: it fed no batch (decision 636)
    assert [END_OF_SEQUENCE_STAT in f["stats"] for f in fetches] == [False] * 7 + [True]
    # each step begins where the previous one ended, as a script times them (decision 637)
    assert [m["start_ns"] for m in markers[1:]] == [m["end_ns"] for m in markers[:-1]]
    for marker, fetch, compute in zip(markers, fetches, computes, strict=False):
        assert marker["start_ns"] <= fetch["start_ns"] < fetch["end_ns"] <= compute["start_ns"]
        assert compute["end_ns"] <= marker["end_ns"]
    db = build_step_db(profile)
    assert (db.category_ns()["input"] > 0).all()


def test_break_closes_the_step_and_instrumented_loaders_are_not_wrapped_twice(
    tmp_path: Path,
) -> None:
    loader = stepscope.data.instrument(range(10), name="Loader")
    stepscope.start(tmp_path)
    for step, _batch in stepscope.steps(loader):
        if step == 2:
            break
    profile = load_run(stepscope.stop())
    assert [m["stats"]["step_num"] for m in named(profile, "train")] == [0, 1, 2]
    assert len(named(profile, "Iterator::Loader")) == 3
    assert not [e for e in named(profile, "Iterator::Loader::Loader")]


@pytest.mark.parametrize("goes_on", [False, True])
def test_a_loop_left_with_its_steps_held_in_a_variable_keeps_its_last_step(
    goes_on: bool, tmp_path: Path
) -> None:
    """`it = stepscope.steps(loader)`, a `for` over it left by `break`, then `stop()`: the
    generator, still held, closed its step only when collected, after `stop()`, and the
    user's last step was lost (12 steps of 13 read). The loop's end ends it, before the code
    after the loop; a later `for` over the same steps goes on with the next batch."""
    stepscope.start(tmp_path)
    batches = stepscope.steps(range(10))
    for step, _ in batches:
        with stepscope.trace("body"):
            pass
        if step == 2:
            break
    with stepscope.trace("after the loop"):
        time.sleep(0.002)
    rest = [step for step, _ in batches] if goes_on else []
    profile = load_run(stepscope.stop())
    assert rest == (list(range(3, 10)) if goes_on else [])
    markers = named(profile, "train")
    assert [m["stats"]["step_num"] for m in markers] == list(range(10 if goes_on else 3))
    after = named(profile, "after the loop")[0]
    assert markers[2]["end_ns"] <= after["start_ns"]
    assert not goes_on or after["end_ns"] <= markers[3]["start_ns"]
    assert named(profile, "body")[2]["end_ns"] <= markers[2]["end_ns"]


def test_an_older_pass_dropped_in_a_later_loop_leaves_its_step_alone(tmp_path: Path) -> None:
    """A pass over the steps held in a variable (or a cycle the collector breaks at any
    moment), dropped inside a later loop's step, ended that step where it was dropped: the
    rest of the step's body fell in no step (decision 723)."""
    stepscope.start(tmp_path)
    batches = stepscope.steps(range(4))
    older = iter(batches)
    next(older)
    for step, _ in batches:
        if step == 2:
            del older
        with stepscope.trace("body"):
            time.sleep(0.002)
    profile = load_run(stepscope.stop())
    markers = named(profile, "train")
    assert [m["stats"]["step_num"] for m in markers] == [0, 1, 2, 3]
    body = named(profile, "body")
    assert [b["end_ns"] <= m["end_ns"] for b, m in zip(body, markers[1:], strict=True)] == [
        True
    ] * 3


class _Boom(Exception):
    pass


@pytest.mark.parametrize("held", [True, False])
def test_an_exception_leaving_the_loop_ends_its_step_and_goes_on_unchanged(
    held: bool, tmp_path: Path
) -> None:
    stepscope.start(tmp_path)
    raised = _Boom("in step 1")
    batches = stepscope.steps(range(5))
    with pytest.raises(_Boom) as caught:
        for step, _ in batches if held else stepscope.steps(range(5)):
            if step == 1:
                raise raised
    with stepscope.trace("after the loop"):
        pass
    profile = load_run(stepscope.stop())
    assert caught.value is raised and caught.value.__traceback__ is not None
    markers = named(profile, "train")
    assert [m["stats"]["step_num"] for m in markers] == [0, 1]
    assert markers[1]["end_ns"] <= named(profile, "after the loop")[0]["start_ns"]


class _Pass:
    """An iterable whose pass begins with work of its own (a DataLoader's iter() starting its
    workers), traced so that the test can tell where it lies."""

    def __init__(self) -> None:
        self.begun = 0

    def __iter__(self) -> Iterator[int]:
        self.begun += 1
        with stepscope.trace("the pass begins"):
            time.sleep(0.001)
        return iter(range(3))


def test_the_pass_begins_in_step_0s_fetch(tmp_path: Path) -> None:
    """`stepscope.steps(loader)` called iter() before step 0's marker: a loop over a
    DataLoader with 2 workers read step 0 at 74.07 ms where the script, timing from the line
    before its `for`, measured 111.5 (the workers' start in no step). It begins inside step
    0's fetch, the wait the script counts as getting the first batch (decision 635)."""
    source = _Pass()
    stepscope.start(tmp_path)
    batches = stepscope.steps(source)
    assert source.begun == 0  # as a `for` begins it: at the first step
    for _ in batches:
        pass
    eager = _Pass()
    iter(stepscope.data.instrument(eager))  # iter() itself begins the pass at once
    assert eager.begun == 1
    profile = load_run(stepscope.stop())
    began = named(profile, "the pass begins")[0]
    step0 = min(named(profile, "train"), key=lambda e: e["start_ns"])
    fetch0 = min(named(profile, "IteratorGetNextOp::DoCompute"), key=lambda e: e["start_ns"])
    assert step0["start_ns"] <= fetch0["start_ns"] <= began["start_ns"]
    assert began["end_ns"] <= fetch0["end_ns"] <= step0["end_ns"]
    db = build_step_db(profile)
    assert db.step_num.tolist() == [0, 1, 2]
    assert int(db.category_ns()["input"][0]) >= began["end_ns"] - began["start_ns"]


@pytest.mark.integration  # a fresh interpreter: the only one whose modules show what start loads
def test_the_input_stages_are_loaded_before_the_recording(tmp_path: Path) -> None:
    """Loaded by the loop's first `steps()` call, `stepscope.capture.data` held 2.5-14 ms of
    the script's first step outside every step (decision 635): `start()` loads it."""
    script = (
        "import json, sys, stepscope\n"
        "stepscope.start(sys.argv[1])\n"
        "loaded = 'stepscope.capture.data' in sys.modules\n"
        "stepscope.stop()\n"
        "print(json.dumps({'loaded': loaded}))\n"
    )
    assert run_script(script, str(tmp_path)) == {"loaded": True}


def test_steps_rejects_a_non_integer_start() -> None:
    with pytest.raises(stepscope.errors.StepscopeError, match="start must be an int"):
        stepscope.steps([1], start="0")  # type: ignore[arg-type]


@pytest.mark.parametrize("batches", [5, None, object()])
def test_steps_over_what_is_not_iterable_says_so_when_called(batches: object) -> None:
    """The pass begins at the first step (decision 635): a TypeError from inside stepscope's
    data module came then, after the loop had started, with a traceback through it."""
    said = f"stepscope.steps: the batches must be iterable .*, got {type(batches).__name__}$"
    with pytest.raises(stepscope.errors.StepscopeError, match=said):
        stepscope.steps(batches)  # type: ignore[arg-type]
    with pytest.raises(stepscope.errors.StepscopeError, match="instrument: the batches must"):
        stepscope.data.instrument(batches)  # type: ignore[arg-type]


def test_steps_takes_what_iter_takes() -> None:
    """A sequence of only ``__getitem__`` is iterable, as for ``iter()``."""

    class Old:
        def __getitem__(self, k: int) -> int:
            if k >= 2:
                raise IndexError
            return k

    assert [b for _, b in stepscope.steps(Old())] == [0, 1]


SCRIPT = """
import json, sys, time
import torch
from torch.utils.data import DataLoader, Dataset
import stepscope

class Slow(Dataset):
    def __len__(self): return 16 * 10
    def __getitem__(self, i):
        t = time.perf_counter()
        while time.perf_counter() - t < 0.001: pass   # decoding
        return torch.randn(32), torch.tensor(i % 4)

model = torch.nn.Linear(32, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Slow(), batch_size=16)
form, logdir = sys.argv[1], sys.argv[2]
fetch_start, fetch_end, body_end = [], [], []

def train(x, y):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()

stepscope.start(logdir)
if form == "readme":  # the fetch runs before the step opens
    batches = iter(stepscope.data.instrument(loader, name="Loader"))
    for step in range(len(loader)):
        fetch_start.append(time.perf_counter_ns())
        x, y = next(batches)
        fetch_end.append(time.perf_counter_ns())
        with stepscope.step(step):
            train(x, y)
        body_end.append(time.perf_counter_ns())
else:
    steps = stepscope.steps(loader, loader_name="Loader")
    for _ in range(len(loader)):
        fetch_start.append(time.perf_counter_ns())
        step, (x, y) = next(steps)
        fetch_end.append(time.perf_counter_ns())
        train(x, y)
        body_end.append(time.perf_counter_ns())
    steps.close()
run = stepscope.stop()
print(json.dumps({"run": str(run), "fetch_start": fetch_start, "fetch_end": fetch_end,
                  "body_end": body_end}))
"""


@pytest.mark.integration
@pytest.mark.parametrize("form", ["readme", "steps"])
def test_pytorch_loop_with_a_slow_loader_matches_perf_counter(form: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    measured = run_script(SCRIPT, form, str(tmp_path))
    db = build_step_db(load_run(Path(measured["run"])))
    kept = db.step_num.tolist()
    # 10 batches, all kept: stepscope's own markers are whole at both ends (decision 622)
    assert len(kept) == 10
    iteration = sum(measured["body_end"][k] - measured["fetch_start"][k] for k in kept)
    fetching = sum(measured["fetch_end"][k] - measured["fetch_start"][k] for k in kept)
    assert int(db.dur_ns.sum()) == pytest.approx(iteration, rel=0.05)
    ours = 100.0 * float(db.category_ns()["input"].sum()) / float(db.dur_ns.sum())
    assert ours == pytest.approx(100.0 * fetching / iteration, abs=5.0)
