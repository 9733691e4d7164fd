"""The interned stat encoding of the Kineto importer's columnar lines (`columns.ColumnLine`):
stat names and strings interned once per trace, each event's stats as (key, kind, value) rows,
and a plan per (stat names, value types) signature so that the common events encode without
looking at each value's type twice."""

from __future__ import annotations

from array import array

from stepscope.xspace.builder import INT64_MAX, Stats, StatValue
from stepscope.xspace.wire import KIND_DOUBLE, KIND_INT, KIND_STR, KIND_UINT

_UINT64_LIMIT = 1 << 64
_MAX_PLANS = 1 << 16  # distinct (stat names, value types) signatures remembered
# (key rows as bytes, kind rows as bytes, whether every value is an int)
_Plan = tuple[bytes, bytes, bool]


class StatCodec:
    """Stat names, string values and float values of one trace, interned."""

    def __init__(self) -> None:
        self.keys: dict[str, int] = {}
        self.key_names: list[str] = []
        self.strings: dict[str, int] = {}
        self.string_list: list[str] = []
        self.floats = array("d")
        self._plans: dict[tuple[tuple[str, ...], tuple[type, ...]], _Plan] = {}

    def key_id(self, key: str) -> int:
        found = self.keys.get(key)
        if found is None:
            found = self.keys[key] = len(self.key_names)
            self.key_names.append(key)
        return found

    def string_id(self, text: str) -> int:
        found = self.strings.get(text)
        if found is None:
            found = self.strings[text] = len(self.string_list)
            self.string_list.append(text)
        return found

    def encode(self, stats: Stats, keys: array, kinds: array, values: array) -> int:
        """Append the rows of ``stats``; returns how many. On error nothing is appended."""
        rows = len(keys)
        try:
            return self._encode_fast(stats, keys, kinds, values)
        except BaseException as exc:
            del keys[rows:], kinds[rows:], values[rows:]
            if not isinstance(exc, OverflowError):
                raise
        # An integer beyond int64: uint64 (XSpace's other integer type), or an error.
        try:
            return self._encode_wide(stats, keys, kinds, values)
        except BaseException:
            del keys[rows:], kinds[rows:], values[rows:]
            raise

    def _encode_fast(self, stats: Stats, keys: array, kinds: array, values: array) -> int:
        """Append the rows of ``stats``; returns how many.

        Events of one op carry the same stat names with values of the same types, so the key
        and kind rows are prepared once per (names, types) signature and appended as bytes;
        for all-integer stats the values go in with one C call.
        """
        signature = (tuple(stats), tuple(map(type, stats.values())))
        plan = self._plans.get(signature)
        if plan is None:
            plan = self._plan(signature)
        key_rows, kind_rows, all_ints = plan
        if all_ints:
            values.extend(stats.values())
        else:
            self._encode_values(stats, kind_rows, values)
        keys.frombytes(key_rows)
        kinds.frombytes(kind_rows)
        return len(stats)

    def _encode_wide(self, stats: Stats, keys: array, kinds: array, values: array) -> int:
        """`encode` for stats with integers beyond int64 (stored as uint64, as protobuf)."""
        for key, value in stats.items():
            if type(value) is int and value > INT64_MAX:
                if value >= _UINT64_LIMIT:
                    raise OverflowError(f"stat {key} = {value} does not fit 64 bits")
                kinds.append(KIND_UINT)
                values.append(value - _UINT64_LIMIT)
                keys.append(self.key_id(key))
            else:
                self._encode_fast({key: value}, keys, kinds, values)
        return len(stats)

    def _plan(self, signature: tuple[tuple[str, ...], tuple[type, ...]]) -> _Plan:
        names, types = signature
        kinds = array("b")
        for name, kind in zip(names, types, strict=True):
            if kind is int or kind is bool:
                kinds.append(KIND_INT)
            elif kind is str:
                kinds.append(KIND_STR)
            elif kind is float:
                kinds.append(KIND_DOUBLE)
            else:
                raise TypeError(f"unsupported stat value type {kind.__name__} for {name}")
        plan = (
            array("i", [self.key_id(name) for name in names]).tobytes(),
            kinds.tobytes(),
            all(kind is int for kind in types),
        )
        if len(self._plans) < _MAX_PLANS:
            self._plans[signature] = plan
        return plan

    def _encode_values(self, stats: Stats, kind_rows: bytes, values: array) -> None:
        string_get = self.strings.get
        for kind, value in zip(kind_rows, stats.values(), strict=True):
            if kind == KIND_STR:
                string_index = string_get(value)  # type: ignore[arg-type]
                if string_index is None:
                    string_index = self.string_id(value)  # type: ignore[arg-type]
                values.append(string_index)
            elif kind == KIND_DOUBLE:
                values.append(len(self.floats))
                self.floats.append(value)  # type: ignore[arg-type]
            else:
                values.append(value)

    def decode(self, keys: array, kinds: array, values: array, lo: int, hi: int) -> dict:
        """The stats dict of rows ``lo:hi``."""
        stats: dict[str, StatValue] = {}
        for row in range(lo, hi):
            kind, value = kinds[row], values[row]
            decoded: StatValue
            if kind == KIND_STR:
                decoded = self.string_list[value]
            elif kind == KIND_DOUBLE:
                decoded = self.floats[value]
            elif kind == KIND_UINT:
                decoded = value + _UINT64_LIMIT
            else:
                decoded = value
            stats[self.key_names[keys[row]]] = decoded
        return stats
