"""`record` classes behave as the dataclasses they replace: the same eq, hash, repr, frozen
guard, field options and class-body overrides, checked against `dataclasses.dataclass`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from stepscope.records import COMPILE_AFTER, record


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


def _every_kind_of_field(calls: list[str]) -> dict[str, Any]:
    """A class body with a plain field, a factory, a default, a keyword-only field, a field
    out of __init__ and a __post_init__ that notes each call in ``calls``."""
    return {
        "__annotations__": {"self": "int", "b": "list[int]", "c": "str", "d": "int", "e": "int"},
        "b": field(default_factory=list),
        "c": "x",
        "d": field(default=3, kw_only=True),
        "e": field(default_factory=lambda: 7, init=False),
        "__post_init__": lambda row: calls.append(type(row).__name__),
    }


def _twins(body: dict[str, Any], frozen: bool = True) -> tuple[Any, Any]:
    made = dataclass(frozen=frozen)(type("Twin", (), dict(body)))
    mine = record(frozen=frozen)(type("Twin", (), dict(body)))
    return made, mine


@pytest.mark.parametrize("frozen", [True, False])
def test_init_is_the_one_dataclass_writes(frozen: bool) -> None:
    """Decision 301: records write their own __init__ (on first use): the same signature,
    annotations, defaults, factories, keyword-only fields, docstring and __post_init__ call."""
    import inspect

    calls: list[str] = []
    made, mine = _twins(_every_kind_of_field(calls), frozen)
    assert mine.__doc__ == made.__doc__  # written from the signature: none in the body
    left, right = made(1), mine(1)  # the first call writes mine's
    assert str(inspect.signature(mine)) == str(inspect.signature(made))
    assert mine.__init__.__annotations__ == made.__init__.__annotations__
    assert mine.__init__.__qualname__ == "Twin.__init__"
    assert mine.__init__.__globals__ is made.__init__.__globals__
    assert dataclasses.astuple(left) == dataclasses.astuple(right) == (1, [], "x", 3, 7)
    assert right.b is not mine(2).b  # a new list each time
    assert dataclasses.astuple(mine(1, [2], "y", d=4)) == (1, [2], "y", 4, 7)
    assert calls == ["Twin"] * 4
    for args, kwargs in (((), {}), ((1, [], "x", 4), {}), ((1,), {"f": 2})):
        with pytest.raises(TypeError) as theirs:
            made(*args, **kwargs)
        with pytest.raises(TypeError) as ours:
            mine(*args, **kwargs)
        assert str(ours.value) == str(theirs.value)
    documented = {"__doc__": "Said.", "__annotations__": {"a": "int"}}
    assert _twins(documented)[1].__doc__ == "Said."


def test_init_errors_and_laziness_follow_dataclass(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    bad = {"__annotations__": {"a": "int", "b": "int"}, "a": 1}
    with pytest.raises(TypeError) as theirs:
        dataclass(type("Bad", (), dict(bad)))
    with pytest.raises(TypeError) as ours:
        record(type("Bad", (), dict(bad)))
    assert str(ours.value) == str(theirs.value)
    own = {"__doc__": "Own.", "__annotations__": {"a": "int"}, "__init__": lambda row: None}
    assert record(type("Own", (), own))().__dict__ == {}  # the body's __init__ stays
    compiled: list[object] = []
    real_exec = builtins.exec

    def counting_exec(*args: Any) -> None:
        compiled.append(args[0])
        real_exec(*args)

    monkeypatch.setattr(builtins, "exec", counting_exec)
    lazy = record(type("Lazy", (), {"__doc__": "Documented.", "__annotations__": {"a": "int"}}))
    assert compiled == []  # a documented class is not compiled when it is made
    # nor the first COMPILE_AFTER times it is called (decision 440) ...
    assert [lazy(k).a for k in range(COMPILE_AFTER)] == list(range(COMPILE_AFTER))
    assert compiled == []
    assert lazy(-1).a == -1 and lazy(-2).a == -2  # ... but once, after them
    assert len(compiled) == 1
    assert lazy.__init__.__qualname__ == "Lazy.__init__"
    assert len(compiled) == 1


@pytest.mark.parametrize("frozen", [True, False])
def test_uncompiled_init_binds_as_dataclass(frozen: bool) -> None:
    """Decision 440: before a documented record's own __init__ is compiled, the shared one
    gives the same fields, factories, keyword-only fields and __post_init__ call, and every
    call it cannot bind plainly gets dataclasses' own error."""
    import inspect

    calls: list[str] = []
    body = {"__doc__": "Documented.", **_every_kind_of_field(calls)}
    made, mine = _twins(body, frozen)
    cases: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((1,), {}),
        ((1, [2], "y"), {"d": 4}),
        ((), {"self": 5, "c": "z"}),
        ((1,), {"b": [3], "d": 0}),
    ]
    for args, kwargs in cases:
        left, right = made(*args, **kwargs), mine(*args, **kwargs)
        assert dataclasses.astuple(left) == dataclasses.astuple(right)
        assert vars(left) == vars(right)
    assert mine(1).b is not mine(1).b  # a new list each time
    assert calls == ["Twin"] * (2 * len(cases) + 2)
    assert str(inspect.signature(mine)).startswith("(*args")  # not compiled yet
    errors = [
        ((), {}),
        ((1, [], "x", 4), {}),
        ((1,), {"f": 2}),
        ((1,), {"self": 2}),
        ((), {"b": []}),
        ((1,), {"e": 2}),
    ]
    for args, kwargs in errors:
        made, mine = _twins(body, frozen)  # each error met by the uncompiled __init__
        with pytest.raises(TypeError) as theirs:
            made(*args, **kwargs)
        with pytest.raises(TypeError) as ours:
            mine(*args, **kwargs)
        assert str(ours.value) == str(theirs.value)
    # compiled at its first error: dataclasses' signature and annotations
    assert str(inspect.signature(mine)) == str(inspect.signature(made))
    assert mine.__init__.__annotations__ == made.__init__.__annotations__
