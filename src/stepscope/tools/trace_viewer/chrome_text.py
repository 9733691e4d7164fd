"""Columnar JSON text for the Chrome-trace writer: numpy string arrays, no per-event Python.

Numpy selects and orders the pieces of a chunk (string ids to their JSON text, stats to
their event, commas); Python's C-level ``%`` formatting, driven by ``map`` over whole columns,
fills each event's template, and one ``join`` writes the chunk.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from stepscope.model import Profile
from stepscope.xspace.wire import KIND_BYTES, KIND_DOUBLE, KIND_INT, KIND_STR, KIND_UINT


def objects(values: list[Any]) -> np.ndarray:
    """A 1-D object array of ``values`` (numpy would nest lists or pick a string dtype)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class StringTexts:
    """JSON text (quoted, escaped) of interned strings, looked up by id for whole columns."""

    def __init__(self, profile: Profile, cache: dict[int, str]) -> None:
        self.profile = profile
        self.cache = cache

    def of(self, ids: np.ndarray) -> np.ndarray:
        """Object array of the JSON text of each string id in ``ids``."""
        unique, inverse = np.unique(ids, return_inverse=True)
        cache, strings = self.cache, self.profile.strings
        found = []
        for string_id in unique.tolist():
            shown = cache.get(string_id)
            if shown is None:
                shown = cache[string_id] = json.dumps(strings[string_id])
            found.append(shown)
        return objects(found)[inverse]


def stat_values(kind: np.ndarray, value: np.ndarray, strings: StringTexts) -> np.ndarray:
    """Object array of stat values as ``%s`` spells them in JSON: ints, or JSON text."""
    out = np.empty(len(kind), dtype=object)
    signed = kind == KIND_INT
    out[signed] = value[signed].tolist()
    unsigned = kind == KIND_UINT
    out[unsigned] = value[unsigned].view(np.uint64).tolist()
    textual = (kind == KIND_STR) | (kind == KIND_BYTES)
    if textual.any():
        out[textual] = strings.of(value[textual])
    double = kind == KIND_DOUBLE
    if double.any():
        # Python's float repr is the JSON spelling the reference writer uses.
        numbers = value[double].view(np.float64).tolist()
        out[double] = [json.dumps(x) if math.isfinite(x) else f'"{x}"' for x in numbers]
    return out


def interleave(heads: list[str], items: list[str], owner: np.ndarray, tails: list[str]) -> str:
    """``heads[i]``, then the items owned by record ``i`` (``owner`` sorted), then ``tails[i]``."""
    n = len(heads)
    before = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=before[1:])
    out = np.empty(2 * n + len(items), dtype=object)
    records = np.arange(n)
    out[2 * records + before[:-1]] = heads
    out[2 * owner + 1 + np.arange(len(items))] = items
    out[2 * records + 1 + before[1:]] = tails
    return "".join(out.tolist())
