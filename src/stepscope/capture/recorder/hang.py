"""The flight recorder's hang trigger: which threads have had a step open ``hang_s``."""

from __future__ import annotations


class HangWatch:
    """Judges the recorder's stamps (``open_ns``: thread ident -> when its latest step
    opened) against the ring's steps and the passes told ended."""

    __slots__ = ("closed_ns", "reported")

    def __init__(self) -> None:
        # thread ident -> the stamp of its step that ended with no next one (a pass of
        # `stepscope.steps`, or of a DataLoader's fetches, ended: decision 825)
        self.closed_ns: dict[int, int] = {}
        self.reported: set[int] = set()  # the stamps of the hangs already saved

    def ended(self, open_ns: dict[int, int], ident: int) -> None:
        """Thread ``ident``'s pass of steps ended: the step its latest stamp opened has ended,
        or never ran (the fetch that found the loader exhausted)."""
        opened = open_ns.get(ident)
        if opened is not None:
            self.closed_ns[ident] = opened

    def hung(
        self, open_ns: dict[int, int], last_step_start: dict[int, int], now: int, limit_ns: float
    ) -> list[tuple[int, int]]:
        """(thread ident, stamp) of each step open ``limit_ns`` or longer at ``now`` and not
        reported yet; each is reported from now on. A step has closed when the ring holds one
        of the thread's steps begun at or after its stamp (`stepscope.step` stamps before its
        start), or its pass was told ended (`steps` begins a step at the previous one's end,
        read before the stamp)."""
        found = []
        for ident, opened in list(open_ns.items()):
            closed = last_step_start.get(ident, -1) >= opened or self.closed_ns.get(ident) == opened
            if closed or opened in self.reported or now - opened < limit_ns:
                continue
            self.reported.add(opened)
            found.append((ident, opened))
        return found
