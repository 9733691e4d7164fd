"""Interned strings: event names, stat names and string stat values share one table.

Analyses work on integer ids (`np.int32` columns) and turn ids into text only for output.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property

import numpy as np


class StringTable:
    """An append-only list of unique strings with reverse lookup."""

    def __init__(self, strings: Iterable[str] = ()) -> None:
        self._strings: list[str] = list(strings)

    @cached_property
    def _index(self) -> dict[str, int]:
        return {text: i for i, text in enumerate(self._strings)}

    def __len__(self) -> int:
        return len(self._strings)

    def __getitem__(self, string_id: int) -> str:
        return self._strings[string_id]

    @property
    def strings(self) -> Sequence[str]:
        return self._strings

    def id_of(self, text: str) -> int:
        """The id of ``text``, or -1 when the profile never mentions it."""
        return self._index.get(text, -1)

    def ids_matching(self, predicate: object) -> np.ndarray:
        """Ids of all strings for which ``predicate(text)`` is true, as an int32 array."""
        check = predicate  # a callable str -> bool
        return np.array([i for i, s in enumerate(self._strings) if check(s)], dtype=np.int32)  # type: ignore[operator]

    def intern(self, text: str) -> int:
        """The id of ``text``, adding it when new (only while building a profile)."""
        index = self._index
        found = index.get(text)
        if found is None:
            found = index[text] = len(self._strings)
            self._strings.append(text)
        return found

    def lookup(self, ids: np.ndarray) -> list[str]:
        """Texts for an array of ids."""
        strings = self._strings
        return [strings[i] for i in ids.tolist()]
