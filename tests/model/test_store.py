"""The store (`stepscope.store`): one location policy, keys by kind and version, and value
entries that round-trip stepscope's intermediates exactly and can never run code."""

from __future__ import annotations

import enum
import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from stepscope.model.profile import Plane
from stepscope.model.strings import StringTable
from stepscope.stats.events import EventType
from stepscope.store import location, values
from stepscope.vocab.opnames import Op


def _same(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray)
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple))
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if hasattr(a, "__dict__") and not isinstance(a, enum.Enum):
        return _same(vars(a), vars(b))
    return bool(a == b) or (a != a and b != b)  # NaN


def test_values_round_trip_exactly() -> None:
    strings = StringTable(["a", "b"])
    assert strings.id_of("b") == 1  # fills the cached reverse index, which is not stored
    plane = Plane(0, 7, "/host:CPU", {"n": 1, "b": b"\x01", "t": "x"}, 0, 2)
    value = {
        "row": (plane, np.arange(5, dtype=np.int64), {3: (1.5, None), ("k", 1): {"x"}}),
        "rows": [plane, np.zeros((2, 3), dtype=np.float32)],
        "scalars": (np.int64(7), np.float64(0.1), float("nan"), float("-inf"), 2**70, True),
        "misc": (b"\xff", frozenset({1}), EventType.HOST_COMPUTE, Op("TF", "f", "C"), "ü\udcff"),
        "strings": strings,
        "empty": np.array([], dtype=np.uint8),
        "text": np.array(["ab", "c"]),
    }
    back = values.loads(values.dumps(value))
    assert _same(value["row"], back["row"]) and _same(value["rows"], back["rows"])
    assert _same(value["scalars"], back["scalars"]) and _same(value["misc"], back["misc"])
    assert _same(value["empty"], back["empty"]) and _same(value["text"], back["text"])
    assert back["strings"].strings == ["a", "b"] and back["strings"].id_of("b") == 1
    assert type(back["scalars"][0]) is np.int64 and type(back["misc"][3]) is Op
    assert back["row"][0] == plane and back["misc"][2] is EventType.HOST_COMPUTE


@pytest.mark.parametrize(
    "unstorable",
    [lambda: 1, np.array([object()]), io.BytesIO(), {"nested": [Path("/x")]}],
    ids=["function", "object array", "foreign object", "nested foreign object"],
)
def test_values_that_need_pickle_are_refused(unstorable: object, tmp_path: Path) -> None:
    with pytest.raises(values.UnstorableValue):
        values.dumps(unstorable)
    assert not values.write_value(tmp_path / "x.npz", unstorable)
    assert not (tmp_path / "x.npz").exists()


class _Boom:
    def __reduce__(self) -> tuple[object, ...]:
        return (Path.touch, (Path(_Boom.marker),))

    marker = ""


def _entry(tree: object) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, tree=np.frombuffer(json.dumps(tree).encode(), dtype=np.uint8))
    return buffer.getvalue()


def test_a_crafted_entry_never_runs_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    _Boom.marker = str(marker)
    path = tmp_path / "entry.npz"
    path.write_bytes(pickle.dumps(_Boom()))  # what a pickle cache would have executed
    assert values.read_value(path) is None and not marker.exists()
    for tree in (
        {"o": "os:system", "v": {}},  # only stepscope's classes are ever looked up
        {"o": "subprocess:Popen", "v": {}},
        {"e": "stepscope.model.strings:StringTable", "v": 1},  # not an enum
        {"q": 1, "r": 2},
    ):
        path.write_bytes(_entry(tree))
        assert values.read_value(path) is None
    # An object member pickled inside the .npz is never unpickled either.
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("tree.npy", pickle.dumps(_Boom()))
    path.write_bytes(buffer.getvalue())
    assert values.read_value(path) is None and not marker.exists()


def test_a_damaged_entry_reads_as_missing(tmp_path: Path) -> None:
    path = tmp_path / "v.npz"
    assert values.write_value(path, {"steps": np.arange(1000)})
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))
    assert values.read_value(path) is None
    path.write_bytes(bytes(data[:100]))
    assert values.read_value(path) is None
    assert values.read_value(tmp_path / "missing.npz") is None


def test_location_and_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(location.ENV_VAR, str(tmp_path / "env"))
    assert (
        location.root() == tmp_path / "env"
        and location.root(tmp_path / "given") == tmp_path / "given"
    )
    name = location.key("summaries", 3, "digest", ("tool",))
    assert name != location.key("summaries", 4, "digest", ("tool",))
    assert name != location.key("trace_index", 3, "digest", ("tool",))
    assert location.entry("summaries", name, suffix=".npz") == (
        tmp_path / "env" / "summaries" / name[:2] / f"{name}.npz"
    )
