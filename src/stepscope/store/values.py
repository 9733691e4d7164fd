"""Value entries: one Python value in a ``.npz`` file that loading can never turn into code.

A value is a tree of None, bools, ints, floats, strings, bytes, lists, tuples, dicts, sets,
enums, NumPy scalars and arrays, and instances of stepscope's own classes (dataclasses or
plain objects: their attributes). The tree is JSON (member ``tree``) in which every
non-JSON node is a one-key object naming what it is (``{"t": [...]}`` a tuple,
``{"a": 3}`` the array ``a3``...); arrays are ``.npy`` members, read with
``allow_pickle=False``. Loading imports only ``stepscope`` modules, builds instances with
``__new__`` and fills their attributes (no ``__init__``, ``__setstate__`` or ``__reduce__``
of anything named in the file), so a crafted entry is an error, never code run. A value
holding anything else (a function, a foreign object, an object array) is refused when
written: `UnstorableValue`.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from stepscope import tmpfiles
from stepscope.log import module_logger
from stepscope.store import budget

logger = module_logger(__name__)

_PACKAGE = "stepscope"


class UnstorableValue(TypeError):
    """The value holds something the store cannot write without pickle."""


def _class_name(cls: type) -> str:
    module, qualname = cls.__module__, cls.__qualname__
    if not (module == _PACKAGE or module.startswith(_PACKAGE + ".")) or "<" in qualname:
        raise UnstorableValue(f"{module}.{qualname} is not a stepscope class")
    return f"{module}:{qualname}"


def _class(name: str) -> type:
    module, _, qualname = name.partition(":")
    if not (module == _PACKAGE or module.startswith(_PACKAGE + ".")):
        raise ValueError(f"class {name!r} is not stepscope's")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    if not isinstance(found, type):
        raise ValueError(f"{name!r} is not a class")
    return found


def _attributes(value: Any) -> dict[str, Any]:
    """An instance's state: its ``__dict__`` (less cached properties, which recompute) or its
    dataclass fields when it has slots."""
    cls = type(value)
    state = getattr(value, "__dict__", None)
    if state is None:
        if not dataclasses.is_dataclass(value):
            raise UnstorableValue(f"{cls.__qualname__} has no attributes to store")
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return {
        k: v
        for k, v in state.items()
        if not isinstance(getattr(cls, k, None), functools.cached_property)
    }


def _encode(value: Any, arrays: list[np.ndarray]) -> Any:
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise UnstorableValue("an array of Python objects")
        arrays.append(np.ascontiguousarray(value))
        return {"a": len(arrays) - 1}
    if isinstance(value, np.generic):
        return {"n": value.dtype.str, "v": _encode(value.item(), arrays)}
    if isinstance(value, enum.Enum):
        return {"e": _class_name(type(value)), "v": _encode(value.value, arrays)}
    kind = type(value)
    if kind is list:
        return [_encode(v, arrays) for v in value]
    if kind is tuple:
        return {"t": [_encode(v, arrays) for v in value]}
    if kind is dict:
        return {"d": [[_encode(k, arrays), _encode(v, arrays)] for k, v in value.items()]}
    if kind in (set, frozenset):
        return {"s" if kind is set else "f": [_encode(v, arrays) for v in value]}
    if kind is bytes:
        return {"b": value.hex()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple
        return {"o": _class_name(kind), "t": [_encode(v, arrays) for v in value]}
    if kind.__module__.startswith(_PACKAGE + "."):
        state = _attributes(value)
        return {"o": _class_name(kind), "v": {k: _encode(v, arrays) for k, v in state.items()}}
    raise UnstorableValue(f"a {kind.__module__}.{kind.__qualname__}")


def _decode(node: Any, arrays: dict[str, np.ndarray]) -> Any:
    if not isinstance(node, (list, dict)):
        return node
    if isinstance(node, list):
        return [_decode(v, arrays) for v in node]
    if len(node) == 1:
        ((tag, body),) = node.items()
        if tag == "a":
            return arrays[f"a{int(body)}"]
        if tag == "t":
            return tuple(_decode(v, arrays) for v in body)
        if tag == "d":
            return {_decode(k, arrays): _decode(v, arrays) for k, v in body}
        if tag in ("s", "f"):
            items = (_decode(v, arrays) for v in body)
            return set(items) if tag == "s" else frozenset(items)
        if tag == "b":
            return bytes.fromhex(body)
    if set(node) == {"n", "v"}:
        return np.dtype(node["n"]).type(_decode(node["v"], arrays))
    if set(node) == {"e", "v"}:
        cls = _class(node["e"])
        if not issubclass(cls, enum.Enum):
            raise ValueError(f"{node['e']!r} is not an enum")
        return cls(_decode(node["v"], arrays))
    if set(node) == {"o", "t"}:
        cls = _class(node["o"])
        if not issubclass(cls, tuple):
            raise ValueError(f"{node['o']!r} is not a named tuple")
        return tuple.__new__(cls, [_decode(v, arrays) for v in node["t"]])
    if set(node) == {"o", "v"}:
        cls = _class(node["o"])
        obj: Any = object.__new__(cls)
        for name, value in node["v"].items():
            object.__setattr__(obj, name, _decode(value, arrays))
        return obj
    raise ValueError(f"unknown node {sorted(node)!r}")


def dumps(value: Any) -> bytes:
    """``value`` as the bytes of a value entry; `UnstorableValue` when it cannot be stored."""
    arrays: list[np.ndarray] = []
    tree = json.dumps(_encode(value, arrays), separators=(",", ":")).encode()
    members: dict[str, Any] = {f"a{i}": a for i, a in enumerate(arrays)}
    members["tree"] = np.frombuffer(tree, dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **members)  # object arrays were refused above
    return buffer.getvalue()


def loads(data: bytes) -> Any:
    """The value of a value entry's bytes; ValueError (or KeyError, zipfile.BadZipFile) when
    they are damaged or were not written by `dumps`."""
    with np.load(io.BytesIO(data), allow_pickle=False) as members:
        arrays = {name: members[name] for name in members.files}
    tree = json.loads(arrays.pop("tree").tobytes())
    return _decode(tree, arrays)


def write_value(path: Path, value: Any) -> bool:
    """Store ``value`` at ``path`` atomically; False (logged) when it cannot be stored or the
    store is not writable: a cache that fails must never stop an analysis."""
    try:
        data = dumps(value)
        tmpfiles.write_bytes(path, data, durable=False)
    except UnstorableValue as exc:
        logger.debug("not stored in %s: it holds %s", path, exc)
        return False
    except OSError as exc:
        logger.warning("could not write cache entry %s: %s", path, exc.strerror or exc)
        return False
    budget.after_write(path, len(data))
    return True


def prepare_reads() -> None:
    """Imports what `read_value` needs (zipfile: 14-15 ms of CPU), for a process that will read
    entries while it answers: a server calls it as it starts, so that its first read (the
    steps after their child) is not also the import, beside the windows asked then (decision
    660). A command that may read nothing leaves it to the read."""
    import zipfile  # noqa: F401


def read_value(path: Path) -> Any | None:
    """The value stored at ``path``, or None when there is none or it is damaged (logged: the
    caller computes it again and overwrites the entry)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        logger.info("cache entry %s unreadable (%s); recomputing", path, exc.strerror or exc)
        return None
    # here, not at the module's import: 5-8 ms of CPU that every analysing command paid
    # (the store's module is imported by the tools) and only a stored entry's read needs
    import zipfile

    try:
        value = loads(data)
    except (
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        ImportError,
        EOFError,
        zipfile.BadZipFile,
        OSError,
        RecursionError,
    ) as exc:
        logger.info("cache entry %s damaged (%s); recomputing", path, exc)
        return None
    budget.touch(path)  # read now: evicted last
    return value
