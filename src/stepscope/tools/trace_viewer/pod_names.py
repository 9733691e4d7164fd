"""One name numbering for a multi-host timeline, kept for the life of the pod.

Each host has its own string table, so the same op name has a different id on every host.
A window needs them in one numbering. Looking the names up per window (a sort of the
window's name ids per host, then a dict lookup per distinct name) cost about a fifth of a
coarse window over 7 hosts; here each host's string ids are mapped to pod-wide ids once, on
first sight, and a window only gathers through that map and renumbers the ids it uses
densely (a mark-and-count over the pod's names, no sort).
"""

from __future__ import annotations

import threading

import numpy as np

from stepscope.distinct import distinct
from stepscope.model.strings import StringTable


class PodNames:
    """Pod-wide name ids; safe to use from the server's request threads at once."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._names: list[str] = []
        self._maps: dict[int, np.ndarray] = {}  # host position -> pod id per local id (-1: unseen)
        self._lock = threading.Lock()

    def pod_ids(self, host: int, strings: StringTable, local: np.ndarray) -> np.ndarray:
        """Pod-wide ids (int32) of one host's string ids."""
        mapping = self._maps.get(host)
        if mapping is None:
            mapping = np.full(len(strings), -1, dtype=np.int32)
        found = mapping[local]
        if len(found) and int(found.min()) < 0:
            with self._lock:
                mapping = self._maps.get(host, mapping).copy()
                unseen = distinct(local[mapping[local] < 0])
                for sid, text in zip(unseen.tolist(), strings.lookup(unseen), strict=True):
                    pid = self._ids.get(text)
                    if pid is None:
                        pid = self._ids[text] = len(self._names)
                        self._names.append(text)
                    mapping[sid] = pid
                self._maps[host] = mapping  # published whole: readers see the old or the new
            found = mapping[local]
        return found

    def compact(self, pod_ids: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """A window's names numbered 0..n-1 in pod-id order, and their texts."""
        if not len(pod_ids):
            return np.zeros(0, dtype=np.int32), []
        used = np.zeros(int(pod_ids.max()) + 1, dtype=bool)
        used[pod_ids] = True
        renumber = (np.cumsum(used, dtype=np.int32) - 1).astype(np.int32)
        names = self._names
        return renumber[pod_ids], [names[i] for i in np.flatnonzero(used).tolist()]
