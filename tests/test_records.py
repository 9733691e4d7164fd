"""`record` classes behave as the dataclasses they replace: the same eq, hash, repr, frozen
guard, field options and class-body overrides, checked against `dataclasses.dataclass`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from stepscope.records import record


def _pair(frozen: bool) -> tuple[Any, Any]:
    """The same class made by dataclass and by record."""

    def body() -> dict[str, Any]:
        return {
            "__annotations__": {"a": "int", "b": "str", "c": "list[int]", "d": "float"},
            "b": "x",
            "c": field(default_factory=list, compare=False),
            "d": field(default=0.5, repr=False),
        }

    made = dataclass(frozen=frozen)(type("Row", (), body()))
    mine = record(frozen=frozen)(type("Row", (), body()))
    return made, mine


@pytest.mark.parametrize("frozen", [True, False])
def test_record_matches_dataclass(frozen: bool) -> None:
    made, mine = _pair(frozen)
    for a, b, c, d in [(1, "x", [1], 0.5), (1, "x", [2], 0.5), (2, "y", [], 1.5)]:
        left, right = made(a, b, c, d), mine(a, b, c, d)
        assert repr(left) == repr(right)
        assert [f.name for f in dataclasses.fields(right)] == ["a", "b", "c", "d"]
        assert dataclasses.asdict(left) == dataclasses.asdict(right)
    assert (mine(1, "x", [1]) == mine(1, "x", [2])) is (made(1, "x", [1]) == made(1, "x", [2]))
    assert (mine(1, "x", d=1.0) == mine(1, "x")) is False
    assert mine(1) != made(1)  # another class: NotImplemented both ways, not equal
    assert mine(1).__eq__(made(1)) is NotImplemented
    if frozen:
        assert hash(mine(1, "x", [3], 2.0)) == hash(made(1, "x", [4], 2.0)) == hash((1, "x", 2.0))
        with pytest.raises(dataclasses.FrozenInstanceError):
            mine(1).a = 2
        assert dataclasses.replace(mine(1), a=3) == mine(3)
    else:
        assert mine.__hash__ is None and made.__hash__ is None
        with pytest.raises(TypeError):
            hash(mine(1))
    row = mine(7, "z", [1, 2])
    assert dataclasses.astuple(row) == (7, "z", [1, 2], 0.5)


def test_single_field_compares_as_a_tuple() -> None:
    """One compared field still compares through a one-item tuple, as the generated method:
    arrays of one element compare, identical arrays are equal by identity."""

    @record
    class Holder:
        values: Any

    shared = np.arange(3)
    assert Holder(shared) == Holder(shared)
    assert Holder(np.array([1])) == Holder(np.array([1]))
    assert Holder(1) != Holder(2)
    assert hash(Holder(5)) == hash((5,))

    @record
    class Empty:
        pass

    assert Empty() == Empty() and hash(Empty()) == hash(()) and repr(Empty()).endswith(".Empty()")


def test_class_body_methods_are_kept() -> None:
    @record
    class Own:
        a: int

        def __eq__(self, other: object) -> bool:
            return True

        def __repr__(self) -> str:
            return "own"

    @record
    class OwnHash:
        a: int

        def __hash__(self) -> int:
            return 42

    assert Own(1) == Own(2) and repr(Own(1)) == "own"
    assert hash(Own(3)) == hash((3,))  # __eq__ alone: the fields' hash, as dataclass does
    assert hash(OwnHash(1)) == 42


def test_recursive_repr_stops() -> None:
    @record(frozen=False)
    class Node:
        child: Any = None

    node = Node()
    node.child = node
    assert repr(node).endswith(".Node(child=...)")
    assert repr(Node(Node())).endswith(
        ".Node(child=test_recursive_repr_stops.<locals>.Node(child=None))"
    )


def test_frozen_guards_match_dataclass() -> None:
    # the guards are closures, not exec'd code (decision 203): same rule, errors and messages
    made, mine = _pair(True)
    made_sub = type("Sub", (made,), {})
    mine_sub = type("Sub", (mine,), {})

    def outcome(action: Any, row: Any) -> str:
        try:
            action(row)
        except dataclasses.FrozenInstanceError as exc:
            return f"frozen: {exc}"
        return "allowed"

    for make in (lambda c: c(1), lambda c: c(1, "y")):
        for left, right in ((make(made), make(mine)), (make(made_sub), make(mine_sub))):
            for action in (
                lambda r: setattr(r, "a", 2),
                lambda r: setattr(r, "extra", 2),
                lambda r: delattr(r, "b"),
            ):
                assert outcome(action, left) == outcome(action, right)
    sub = mine_sub(1)
    sub.extra = 5  # a subclass that is not a dataclass may add attributes, as with dataclass
    assert sub.extra == 5
    assert mine.__setattr__.__qualname__ == "Row.__setattr__"
    assert dataclasses._frozen_get_del_attr.__module__ == "dataclasses"  # put back
