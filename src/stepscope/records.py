"""`record`: a dataclass whose comparison, hash and repr are shared functions, not code compiled
per class.

`dataclasses.dataclass` compiles six functions per frozen class (__init__, __repr__, __eq__,
__hash__, __setattr__, __delattr__), each through its own `exec`: about 0.5 ms a class, 25-30
ms for the fifty classes a cold Kineto overview creates (issue #19). A record lets the dataclass
machinery write __init__, and gives __eq__, __hash__ and __repr__ as functions written once
here, reading the field names the class keeps: the same results as the generated ones (same
field order, `compare`/`hash`/`repr` field options, NotImplemented for another class, "..."
for a recursive repr). The frozen guards (__setattr__, __delattr__) are closures made here
instead of two more `exec` calls (Python 3.10-3.12, whose `dataclasses` takes them from one
helper; 3.13 compiles all of a class's methods in one `exec` anyway): the same test, the same
error and message, `super()` of the same class (issue #30: 8-10 ms of every command's start).
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")

_running_reprs: set[tuple[int, int]] = set()

# dataclasses' helper making the frozen guards, with the (cls, fields, globals) contract of
# Python 3.10-3.12; None where it differs
_FROZEN_GUARDS = (
    getattr(dataclasses, "_frozen_get_del_attr", None) if sys.version_info < (3, 13) else None
)
_guards_lock = threading.Lock()  # one class at a time while dataclasses uses `_frozen_guards`


def _frozen_guards(cls: type[Any], fields: list[Any], _globals: Any) -> tuple[Any, Any]:
    """`dataclasses._frozen_get_del_attr` as closures: the generated functions' behaviour."""
    names = tuple(f.name for f in fields)
    frozen_error = dataclasses.FrozenInstanceError

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise frozen_error(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise frozen_error(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    __setattr__.__qualname__ = f"{cls.__qualname__}.__setattr__"
    __delattr__.__qualname__ = f"{cls.__qualname__}.__delattr__"
    return __setattr__, __delattr__


def _dataclass(cls: type, frozen: bool) -> Any:
    if not (frozen and _FROZEN_GUARDS is not None):
        return dataclasses.dataclass(cls, frozen=frozen, eq=False, repr=False)
    # Another thread making a frozen dataclass meanwhile gets the same guards as closures.
    with _guards_lock:
        dataclasses._frozen_get_del_attr = _frozen_guards  # type: ignore[attr-defined]
        try:
            return dataclasses.dataclass(cls, frozen=True, eq=False, repr=False)
        finally:
            dataclasses._frozen_get_del_attr = _FROZEN_GUARDS  # type: ignore[attr-defined]


def _key_getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A function returning the object's values of names as a tuple (attrgetter returns a bare
    value for one name: a one-item tuple compares as the generated method does, arrays too)."""
    if len(names) >= 2:
        return attrgetter(*names)
    if names:
        (only,) = names
        return lambda obj: (getattr(obj, only),)
    return lambda obj: ()


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        key = self.__class__.__record_compare__
        return key(self) == key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__class__.__record_hash__(self))


def _repr(self: Any) -> str:
    guard = (id(self), threading.get_ident())
    if guard in _running_reprs:
        return "..."
    _running_reprs.add(guard)
    try:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record_repr__)
        return f"{self.__class__.__qualname__}({shown})"
    finally:
        _running_reprs.discard(guard)


def _finish(cls: type[T], frozen: bool) -> type[T]:
    own = cls.__dict__
    explicit_hash = own.get("__hash__", dataclasses.MISSING)
    has_explicit_hash = not (
        explicit_hash is dataclasses.MISSING or (explicit_hash is None and "__eq__" in own)
    )
    made: Any = _dataclass(cls, frozen)
    fields = dataclasses.fields(made)
    made.__record_compare__ = _key_getter(tuple(f.name for f in fields if f.compare))
    made.__record_repr__ = tuple(f.name for f in fields if f.repr)
    hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    made.__record_hash__ = _key_getter(hashed)
    if "__eq__" not in own:
        made.__eq__ = _eq
    if "__repr__" not in own:
        made.__repr__ = _repr
    # dataclass(eq=True): a frozen class hashes its compared fields, a mutable one is unhashable,
    # unless the class body wrote its own __hash__.
    if not has_explicit_hash:
        made.__hash__ = _hash if frozen else None
    return made


@overload
def record(cls: type[T], /) -> type[T]: ...


@overload
def record(*, frozen: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: type[T] | None = None, /, *, frozen: bool = True) -> Any:
    """`@dataclass(frozen=True)` (or `@record(frozen=False)`: `@dataclass`), the same methods
    and behaviour, created about twice as fast."""
    if cls is None:
        return lambda inner: _finish(inner, frozen)
    return _finish(cls, frozen)
