"""How several hosts' steps were found, in one sentence.

Each host's steps carry a description ("30 iterations each starting at top-level event
'aten::randn' ... every 58.9 ms ..."). A 4-rank DDP job's ranks found their steps the same
way and differ only in figures, and the report repeated the long sentence four times; the
hosts' sentences that differ only in their numbers are said once, each number that differs as
its range over the hosts (decision 397). Hosts that found their steps in different ways are
said group by group, each group under its hosts' names (decision 666): the sentences alone,
joined, did not say which rank found which."""

from __future__ import annotations

import re
from collections.abc import Sequence

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# a count's noun is singular after 1 (`words.counted`): "1 ... annotation" and "3 ...
# annotations" are the same sentence but for their numbers
_PLURAL = re.compile(r"(?<=\w)s\b")


def _shape(text: str) -> str:
    return _PLURAL.sub("", _NUMBER.sub("#", text))


def _merged(texts: Sequence[str]) -> str:
    """Texts of one shape as one, each number that differs as its range."""
    distinct = list(dict.fromkeys(texts))
    if len(distinct) == 1:
        return distinct[0]
    # the words of the text with the most plurals: a count's range ("1-3") takes them
    distinct.sort(key=lambda t: -len(_PLURAL.findall(t)))
    parts = [_NUMBER.split(t) for t in distinct]
    numbers = [_NUMBER.findall(t) for t in distinct]
    out = parts[0][0]
    for k in range(len(numbers[0])):
        values = sorted({n[k] for n in numbers}, key=float)
        out += values[0] if len(values) == 1 else f"{values[0]}-{values[-1]}"
        out += parts[0][k + 1]
    return out


def describe_hosts(texts: Sequence[str], hosts: Sequence[str] = ()) -> str:
    """One description for the hosts' ``texts`` (``hosts``: their names, in the same order):
    equal ones once; ones alike but for their numbers as "on each of N hosts: ..." with
    ranges; otherwise each group of alike ones after its hosts' names, "; "-joined."""
    if len(set(texts)) <= 1:
        return texts[0] if texts else ""
    groups: dict[str, list[int]] = {}
    for k, text in enumerate(texts):
        groups.setdefault(_shape(text), []).append(k)
    if len(groups) == 1:
        return f"on each of {len(texts)} hosts: {_merged(texts)}"
    named = len(hosts) == len(texts)
    out = []
    for members in groups.values():
        said = _merged([texts[k] for k in members])
        out.append(f"{', '.join(hosts[k] for k in members)}: {said}" if named else said)
    return "; ".join(dict.fromkeys(out))
