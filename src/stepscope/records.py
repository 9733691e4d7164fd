"""`record`: a dataclass whose comparison, hash and repr are shared functions, not code compiled
per class.

`dataclasses.dataclass` compiles six functions per frozen class (__init__, __repr__, __eq__,
__hash__, __setattr__, __delattr__), each through its own `exec`: about 0.5 ms a class, 25-30
ms for the fifty classes a cold Kineto overview creates (issue #19). A record gives __eq__,
__hash__ and __repr__ as functions written once here, reading the field names the class keeps:
the same results as the generated ones (same field order, `compare`/`hash`/`repr` field
options, NotImplemented for another class, "..." for a recursive repr). Its __init__ is the
one dataclasses would write (parameters, defaults, annotations, __post_init__), from a shorter
text, compiled once the class has been made `COMPILE_AFTER` times (decisions 301, 440): the
compile was 10 ms of the 17 that a first overview's 86 classes took to make, 24 of them are
never made and 54 fewer than 64 times; until then a shared __init__ assigns the fields. The
frozen guards (__setattr__, __delattr__) are closures made here instead of two more `exec`
calls (Python 3.10-3.12, whose `dataclasses` takes them from one helper; 3.13 compiles all of a
class's methods in one `exec` anyway): the same test, the same error and message, `super()` of
the same class (issue #30: 8-10 ms of every command's start).
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
    # init=False: `_lazy_init` gives the class its __init__
    if not (frozen and _FROZEN_GUARDS is not None):
        return dataclasses.dataclass(cls, frozen=frozen, eq=False, repr=False, init=False)
    # Another thread making a frozen dataclass meanwhile gets the same guards as closures.
    with _guards_lock:
        dataclasses._frozen_get_del_attr = _frozen_guards  # type: ignore[attr-defined]
        try:
            return dataclasses.dataclass(cls, frozen=True, eq=False, repr=False, init=False)
        finally:
            dataclasses._frozen_get_del_attr = _FROZEN_GUARDS  # type: ignore[attr-defined]


# what dataclasses' __init__ takes as the default of a field with a default_factory (its
# repr, ``<factory>``, shows in the signature)
_FACTORY = dataclasses._HAS_DEFAULT_FACTORY  # type: ignore[attr-defined]
_MISSING = dataclasses.MISSING


def _no_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is _MISSING and f.default_factory is _MISSING


def _init_fields(cls: type, fields: tuple[Any, ...]) -> tuple[list[Any], list[Any]]:
    """The __init__'s positional and keyword-only fields, in dataclasses' order; the
    TypeError dataclasses raises for a field without a default after one with a default.
    A record has no InitVar: its pseudo-field has no place in `dataclasses.fields`."""
    every = cls.__dataclass_fields__  # type: ignore[attr-defined]
    if any(f._field_type is dataclasses._FIELD_INITVAR for f in every.values()):  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__qualname__}: a record cannot have InitVar fields")
    plain = [f for f in fields if f.init and not f.kw_only]
    seen_default = False
    for f in plain:
        if not _no_default(f):
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
    return plain, [f for f in fields if f.init and f.kw_only]


def _make_init(
    cls: type, fields: tuple[Any, ...], frozen: bool, post_init: bool
) -> Callable[..., None]:
    """The __init__ dataclasses would write for ``cls``: the same parameters, defaults,
    annotations, assignments (`object.__setattr__` when frozen) and __post_init__ call,
    from a shorter text than dataclasses' (its compile is the cost: 10 ms of the 17 that 86
    classes took to make, decision 301)."""
    plain, keywords = _init_fields(cls, fields)
    names = {f.name for f in fields}
    me = "__dataclass_self__" if "self" in names else "self"
    scope: dict[str, Any] = {"__r_set__": object.__setattr__, "__r_factory__": _FACTORY}

    def param(f: dataclasses.Field[Any]) -> str:
        if f.default is not _MISSING:
            scope[f"__r_d_{f.name}"] = f.default
            return f"{f.name}=__r_d_{f.name}"
        return f.name if f.default_factory is _MISSING else f"{f.name}=__r_factory__"

    params = [me, *map(param, plain)]
    if keywords:
        params += ["*", *map(param, keywords)]
    body = []
    for f in fields:
        name = f.name
        if f.default_factory is not _MISSING:
            scope[f"__r_f_{name}"] = f.default_factory
            value = f"__r_f_{name}() if {name} is __r_factory__ else {name}"
            value = value if f.init else f"__r_f_{name}()"
        elif f.init:
            value = name
        else:
            continue
        body.append(f"__r_set__({me},{name!r},{value})" if frozen else f"{me}.{name}={value}")
    if post_init:
        body.append(f"{me}.__post_init__()")
    lines = "\n".join(f"  {line}" for line in body or ["pass"])
    text = (
        f"def __r_create__({', '.join(scope)}):\n"
        f" def __init__({', '.join(params)}):\n{lines}\n"
        " return __init__"
    )
    module = sys.modules.get(cls.__module__)
    namespace: dict[str, Any] = {}
    exec(text, module.__dict__ if module is not None else {}, namespace)
    init: Callable[..., None] = namespace["__r_create__"](**scope)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {f.name: f.type for f in (*plain, *keywords)} | {"return": None}
    return init


# Calls of a record class served by the shared `__init__` before its own is compiled: its
# compile is about 0.13 ms, the shared one's binding about 1 us a call more than the compiled
# (decision 440). Of the 57 record classes a first overview makes, 54 are made fewer times.
COMPILE_AFTER = 64


def _lazy_init(cls: type, fields: tuple[Any, ...], frozen: bool, post_init: bool) -> None:
    """Gives ``cls`` an __init__ that assigns its fields without a compiled text until the
    class has been made `COMPILE_AFTER` times, then the one `_make_init` writes (decision 440;
    of the 86 record classes a first overview makes, 24 are never instantiated and 54 fewer
    than 64 times, decision 301). Any call it does not bind plainly (an unknown or repeated
    argument, one too many, a required one missing) goes to the compiled __init__ at once,
    so errors are dataclasses' own. Until it is compiled, `inspect.signature` of the class
    reads the stand-in's ``(*args, **kwargs)``."""
    plain, keywords = _init_fields(cls, fields)
    positional = tuple(f.name for f in plain)
    n_positional = len(positional)
    accepted = frozenset(positional) | {f.name for f in keywords}
    required = tuple(f.name for f in (*plain, *keywords) if _no_default(f))
    # per field, in the compiled body's order: (name, takes an argument, default, factory)
    plan = tuple(
        (
            f.name,
            bool(f.init),
            f.default,
            None if f.default_factory is _MISSING else f.default_factory,
        )
        for f in fields
        if f.init or f.default_factory is not _MISSING
    )
    assign = object.__setattr__ if frozen else setattr
    made = 0

    def compiled() -> Callable[..., None]:
        init = _make_init(cls, fields, frozen, post_init)
        cls.__init__ = init  # type: ignore[misc]
        return init

    def __init__(self: Any, /, *args: Any, **kwargs: Any) -> None:
        nonlocal made
        made += 1
        if (
            made > COMPILE_AFTER
            or len(args) > n_positional
            or (kwargs and not accepted.issuperset(kwargs))
        ):
            compiled()(self, *args, **kwargs)
            return
        given = dict(zip(positional, args, strict=False))  # the first len(args) of them
        if kwargs:
            if not given.keys().isdisjoint(kwargs):  # a value twice: dataclasses' error
                compiled()(self, *args, **kwargs)
                return
            given.update(kwargs)
        for name in required:
            if name not in given:  # dataclasses' error, before any field is assigned
                compiled()(self, *args, **kwargs)
                return
        for name, takes, default, factory in plan:
            if not takes:
                value = factory()  # type: ignore[misc]
            elif name in given:
                value = given[name]
                if value is _FACTORY and factory is not None:
                    value = factory()
            elif factory is not None:
                value = factory()
            else:
                value = default
            assign(self, name, value)
        if post_init:
            self.__post_init__()

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = __init__  # type: ignore[misc]


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
    undocumented = not cls.__doc__
    if undocumented:  # written below: dataclass would read the signature before __init__ is set
        cls.__doc__ = "-"
    made: Any = _dataclass(cls, frozen)
    fields = dataclasses.fields(made)
    if "__init__" not in own:  # an __init__ of the class body stays, as dataclass leaves it
        post_init = hasattr(made, "__post_init__")
        _init_fields(made, fields)  # dataclasses' errors when the class is made, not used
        if undocumented:
            made.__init__ = _make_init(made, fields, frozen, post_init)
        else:
            _lazy_init(made, fields, frozen, post_init)
    if undocumented:  # dataclasses' docstring: the name and the __init__'s signature
        import inspect

        try:
            text = str(inspect.signature(made)).replace(" -> None", "")
        except (TypeError, ValueError):
            text = ""
        made.__doc__ = made.__name__ + text
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
