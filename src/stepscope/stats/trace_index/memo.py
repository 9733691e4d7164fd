"""The last few answers of one index's full view, by the request's parameters.

The trace viewer asks for the whole trace every time a page opens on it (and when a user
zooms back out to it): the same request, at the page's width, with the same answer, which
costs a full pass over the index's coarse levels (15 ms of CPU at 10M events, 6 MB of
answer) and, on a busy machine, several times that in wall time. The index keeps the last
`MemoAnswers.size` of those answers (one per resolution and track choice) for as long as it
lives; anything that changes an answer changes the index (a new profile file is a new index).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable


class MemoAnswers:
    """A small LRU of answers (bytes with their content type), safe across threads: two
    requests that miss at once both compute, and the second stores the same answer."""

    size = 4  # resolutions and track choices of a full view kept (about 6 MB each at 10M)

    def __init__(self) -> None:
        self._answers: OrderedDict[Hashable, tuple[bytes, str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], tuple[bytes, str]]) -> tuple[bytes, str]:
        with self._lock:
            found = self._answers.get(key)
            if found is not None:
                self._answers.move_to_end(key)
                return found
        answer = compute()
        with self._lock:
            self._answers[key] = answer
            self._answers.move_to_end(key)
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)
        return answer

    def __len__(self) -> int:
        with self._lock:
            return len(self._answers)
