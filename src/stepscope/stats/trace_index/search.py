"""Search by event name across the whole trace.

Built once: the events grouped by name (CSR over the distinct event names), each group sorted
by start time, with each name's longest duration. A query matches the distinct names
(case-insensitive substring; there are far fewer names than events), then takes its events
from the matching groups: the total count is a sum of group sizes, the first results in time
order come from merging the heads of the groups, and the matches inside a window are found
with one binary search per group.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from stepscope.model import Profile
from stepscope.records import record
from stepscope.stats.trace_index.segments import (
    group_starts,
    ranges_to_indices,
    segmented_search,
    stable_argsort,
)

MAX_MERGED = 2_000_000  # above this many candidate events, results come in name order


def index_dtype(n: int) -> type[np.signedinteger]:
    return np.int32 if n < (1 << 31) else np.int64


@record(frozen=False)
class NameIndex:
    name_ids: np.ndarray  # int32 string id of each distinct event name (sorted)
    offsets: np.ndarray  # int64, len(name_ids) + 1: group k is events[offsets[k]:offsets[k+1]]
    events: np.ndarray  # int32/int64 event indexes, grouped by name, by start within a group
    max_dur_ns: np.ndarray  # int64 longest event of each name
    _lower: list[str] | None = field(default=None, repr=False)

    def matching_groups(self, profile: Profile, text: str) -> np.ndarray:
        """Groups whose name contains ``text`` (case-insensitive)."""
        if self._lower is None:
            self._lower = [s.lower() for s in profile.strings.lookup(self.name_ids)]
        needle = text.lower()
        return np.array([k for k, s in enumerate(self._lower) if needle in s], dtype=np.int64)

    def sizes(self, groups: np.ndarray) -> np.ndarray:
        return self.offsets[groups + 1] - self.offsets[groups]

    def first_by_time(
        self, profile: Profile, groups: np.ndarray, offset: int, limit: int
    ) -> np.ndarray:
        """Events ``offset:offset+limit`` of the matches in start-time order."""
        take = np.minimum(self.sizes(groups), offset + limit)
        if int(take.sum()) > MAX_MERGED:  # too many to merge: name order
            lo = self.offsets[groups]
            return self.events[ranges_to_indices(lo, lo + self.sizes(groups))][
                offset : offset + limit
            ].astype(np.int64)
        lo = self.offsets[groups]
        heads = self.events[ranges_to_indices(lo, lo + take)].astype(np.int64)
        order = np.argsort(profile.start_ns[heads], kind="stable")
        return heads[order][offset : offset + limit]

    def in_window(self, profile: Profile, groups: np.ndarray, t0: int, t1: int) -> np.ndarray:
        """All matching events overlapping [t0, t1)."""
        if len(groups) == 0:
            return np.zeros(0, dtype=np.int64)
        lo, hi = self.offsets[groups], self.offsets[groups + 1]
        first = segmented_search(
            profile.start_ns, lo, hi, t0 - self.max_dur_ns[groups], "left", through=self.events
        )
        last = segmented_search(
            profile.start_ns, lo, hi, np.full(len(groups), t1), "left", through=self.events
        )
        events = self.events[ranges_to_indices(first, last)].astype(np.int64)
        end = profile.start_ns[events] + np.maximum(profile.dur_ns[events], 1)
        return events[end > t0]


def build_name_index(profile: Profile) -> NameIndex:
    n = profile.n_events
    by_time = np.argsort(profile.start_ns, kind="stable")
    events = by_time[stable_argsort(profile.name[by_time])].astype(index_dtype(n))
    names = profile.name[events]
    starts = group_starts(names)
    offsets = np.append(starts, n).astype(np.int64)
    dur = profile.dur_ns[events]
    max_dur = np.maximum.reduceat(dur, starts) if n else np.zeros(0, np.int64)
    return NameIndex(
        names[starts].astype(np.int32), offsets, events, np.asarray(max_dur, dtype=np.int64)
    )
