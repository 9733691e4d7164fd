"""How several hosts' steps were found, in one sentence.

Each host's steps carry a description ("30 iterations each starting at top-level event
'aten::randn' ... every 58.9 ms ..."). A 4-rank DDP job's ranks found their steps the same
way and differ only in figures, and the report repeated the long sentence four times; the
hosts' sentences that differ only in their numbers are said once, each number that differs as
its range over the hosts (decision 397)."""

from __future__ import annotations

import re
from collections.abc import Sequence

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# a count's noun is singular after 1 (`words.counted`): "1 ... annotation" and "3 ...
# annotations" are the same sentence but for their numbers
_PLURAL = re.compile(r"(?<=\w)s\b")


def describe_hosts(texts: Sequence[str]) -> str:
    """One description for the hosts' ``texts``: equal ones once; ones alike but for their
    numbers as "on each of N hosts: ..." with ranges; otherwise each distinct one, "; "-joined."""
    distinct = list(dict.fromkeys(texts))
    if len(distinct) <= 1:
        return distinct[0] if distinct else ""
    shapes = {_PLURAL.sub("", _NUMBER.sub("#", t)) for t in distinct}
    if len(shapes) > 1:
        return "; ".join(distinct)
    # the words of the text with the most plurals: a count's range ("1-3") takes them
    distinct.sort(key=lambda t: -len(_PLURAL.findall(t)))
    parts = [_NUMBER.split(t) for t in distinct]
    numbers = [_NUMBER.findall(t) for t in distinct]
    out = parts[0][0]
    for k in range(len(numbers[0])):
        values = sorted({n[k] for n in numbers}, key=float)
        out += values[0] if len(values) == 1 else f"{values[0]}-{values[-1]}"
        out += parts[0][k + 1]
    return f"on each of {len(texts)} hosts: {out}"
