"""Per-host intermediates kept in the store between processes (decision 170).

`stepscope tool RUN overview_page`, then `input_pipeline_analyzer`, then `op_stats` are three
processes; each built the step database and the op metrics again (XProf keeps its op stats
between tools). An intermediate declared ``kept`` (`Key(name, kept=True)`) is written to the
store (kind ``intermediates``, a `stepscope.store.values` file: loading it runs no code) once
computed, after the answer (`stepscope.store.background`), and a later process reads it
instead of building it; a tool whose intermediates are all there does not open the profile.

Key: the host file's identity as the converted profile's (path, size, mtime or etag), its
host name, the intermediate's name (its variant included: ``step_db:auto``), stepscope's code
(`location.code_stamp`) and which C accelerators run (switched off by
``STEPSCOPE_PURE_PYTHON`` in any of its forms, or not built: the pure path is tested on its own
answers), read from their files without loading them (`accelerators.fingerprint`). A kept
value depends on nothing else: tools put every option a value depends on into
its name (`Key.at`), as the in-process store already requires. Each entry carries the host's
partial reads, which an answer must still state when it is read from the store instead of the
profile.
"""

from __future__ import annotations

import itertools
import os
import threading
from pathlib import Path
from typing import Any

from stepscope import accelerators
from stepscope.log import module_logger
from stepscope.model.cache import cache_key
from stepscope.store import background, location
from stepscope.store import values as stored

KIND = "intermediates"  # the store's name for these entries
logger = module_logger(__name__)
SCHEMA = 1  # bump when the entry's layout changes (values change with the code stamp)


def entry(source: str, host: str, name: str, cache_dir: Path | None) -> Path | None:
    """Where the intermediate ``name`` of the host file ``source`` (named ``host`` in its
    run: findings name their host) is kept; None for a source that cannot be keyed (gone,
    unreadable, not a file)."""
    if source.startswith("<"):
        return None
    try:
        identity = cache_key(source)
    except (OSError, ValueError):
        return None
    mode = accelerators.fingerprint()
    key = location.key(KIND, SCHEMA, location.code_stamp(), identity, host, name, mode)
    return location.entry(KIND, key, cache_dir, suffix=".npz")


def read(target: Path) -> tuple[Any, tuple[str, ...]] | None:
    """(value, partial reads) kept at ``target``; None when there is none (or it is damaged:
    the caller builds it again and overwrites it)."""
    found = stored.read_value(target)
    if not isinstance(found, dict) or set(found) != {"value", "partial_reads"}:
        return None
    return found["value"], tuple(found["partial_reads"])


_queued: dict[Path, dict[str, Any]] = {}  # target -> the entry's value, not yet written
_lock = threading.Lock()
_writing = False  # a writer thread is draining `_queued`
_batches = itertools.count()


def keep(target: Path, value: Any, partial_reads: tuple[str, ...]) -> None:
    """Writes ``value`` at ``target`` on a background thread; a value the store cannot hold
    (`stored.UnstorableValue`) or a store that cannot be written is skipped. One thread
    writes every value kept meanwhile (a tool keeps about ten: a thread each cost more than
    the writes on a busy machine)."""
    global _writing
    with _lock:
        _queued[target] = {"value": value, "partial_reads": tuple(partial_reads)}
        if _writing:
            return
        _writing = True
    # a name of its own per batch: `write_later` drops a target that is being written
    batch = target.parent.parent / f".kept-batch-{os.getpid()}-{next(_batches)}"
    try:
        background.write_later(batch, _drain, "analysis results")
    except RuntimeError:  # no thread can start (the interpreter is exiting): not kept
        with _lock:
            _writing = False
            _queued.clear()


def _drain() -> None:
    global _writing
    while True:
        with _lock:
            if not _queued:
                _writing = False
                return
            items = list(_queued.items())
            _queued.clear()
        for target, entry_value in items:
            background.give_way()  # each value's encoding holds the GIL: answers first
            try:
                stored.write_value(target, entry_value)
            except Exception:  # a value that cannot be written is computed again next time
                logger.debug("analysis result not kept at %s", target, exc_info=True)
