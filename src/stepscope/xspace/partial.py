"""Partial reads: the warnings that say a profile is not all that was recorded.

A truncated ``.json.gz`` (read up to the damage), a JSON document that had to be repaired,
events skipped as damaged, events a capture dropped at ``max_events``: the profile opens and
every tool answers, but from part of the data. Such warnings are kept in the profile (and in
the file, for a capture's drops); this module tells them from the others so that every
answer can say so: the ``partial_reads`` field of a tool's JSON, a block near the top of
`stepscope report`, and a banner on the web pages (decision 103).
"""

from __future__ import annotations

from collections.abc import Iterable

# How each importer words it (xspace/kineto/importer.py, json_repair.py, events.py;
# capture/save.py for max_events). Matched at the start of the warning.
PARTIAL_PREFIXES = (
    "gzip data is truncated",  # the Kineto importer: read up to the damage
    "repaired invalid JSON",  # the JSON repair (a cut file included: "file is truncated")
    "file is not valid UTF-8",  # bytes replaced by U+FFFD
    "skipped ",  # events dropped as damaged, counted per reason
)
PARTIAL_PARTS = (
    "were dropped because max_events",  # a capture's own warning, anywhere
    # A framework bridge's trace lost at stop or at a deferred save's first read
    # (trace_notes.failure_text): the framework's events are missing, stepscope's are kept.
    " bridge failed while ",
)

# The name under which a profile store keeps a host's partial reads (an intermediate: the
# ALL_HOSTS workers ship it back with the others, without the profile).
INTERMEDIATE = "partial_reads"


def partial_reads(warnings: Iterable[str]) -> tuple[str, ...]:
    """The warnings among ``warnings`` that say part of the recording is missing or was
    changed to be read, in their order."""
    return tuple(
        w
        for w in warnings
        if w.startswith(PARTIAL_PREFIXES) or any(part in w for part in PARTIAL_PARTS)
    )
