"""Where a frame asks an iterator for its next item: a ``for`` statement's iteration, or a
call of ``next(...)`` / ``x.__next__()``.

The stack sampler records each frame's current instruction (``f_lasti``); a frame whose
caller stands at such a site was entered to produce the caller's next item: a generator
resumed, an iterator's ``__next__``, the function ``map`` applies, a generator beneath
``enumerate`` / ``zip`` / ``itertools``. The analysis uses it to tell a training loop
fetching its batch from everything else its body calls (docs/formats/python_samples.md,
``next_frames``). A generator consumed by ``sum(...)``, ``list(...)`` or a comprehension
is not such a site: its caller stands at that other call.

A frame of a standard-library queue's ``get`` (``queue.Queue``, ``multiprocessing``'s
queues) is entered for a next item too, wherever it is called from: a loop fed by a
background thread or process through a queue (``x = q.get()``) waits there for its next
batch as a loop over a generator waits in ``next()`` (decision 730).

Read from the bytecode (``dis``), once per code object, when the capture is saved, never
while sampling. Only the standard library is imported (capture runs inside training scripts).
"""

from __future__ import annotations

import dis
import sys

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from types import CodeType

_CALLS = frozenset({"CALL", "CALL_FUNCTION", "CALL_METHOD"})  # 3.11+, 3.10, 3.10 methods
_SKIPPED = frozenset({"PRECALL", "KW_NAMES", "CACHE", "EXTENDED_ARG"})  # between args and call
_NAME_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_FAST", "LOAD_CLASSDEREF"})
_ATTR_LOADS = frozenset({"LOAD_METHOD", "LOAD_ATTR"})
_NEXT_NAMES = frozenset({"next"})
_NEXT_METHODS = frozenset({"__next__"})
# The standard library's queues whose ``get`` hands a consumer its next item, as (module,
# class) names; read from `sys.modules` only (a module the program never imported holds no
# queue it waits on).
_QUEUES = (
    ("queue", "Queue"),
    ("multiprocessing.queues", "Queue"),
    ("multiprocessing.queues", "SimpleQueue"),
)


def queue_gets() -> frozenset[CodeType]:
    """The code objects of the loaded standard-library queues' ``get`` methods."""
    found = set()
    for module_name, class_name in _QUEUES:
        module = sys.modules.get(module_name)
        get = getattr(getattr(module, class_name, None), "get", None)
        code = getattr(get, "__code__", None)
        if code is not None:
            found.add(code)
    return frozenset(found)


def _callee_fetches(ins: list[dis.Instruction], k: int) -> bool:
    """Whether the call instruction ``ins[k]`` calls ``next`` or a ``__next__`` method: walk
    back over its arguments (their net stack effect equals the argument count) to the
    instruction that loaded the callable. Anything the walk cannot follow (a jump inside the
    arguments, keyword or starred calls it miscounts) answers False."""
    argc = ins[k].arg or 0
    j = k - 1
    while j >= 0 and ins[j].opname in _SKIPPED:
        j -= 1
    pushed = 0
    while j >= 0 and pushed < argc:
        op = ins[j]
        if op.opcode in dis.hasjrel or op.opcode in dis.hasjabs or op.is_jump_target:
            return False
        try:
            pushed += dis.stack_effect(
                op.opcode, op.arg if op.opcode >= dis.HAVE_ARGUMENT else None
            )
        except ValueError:
            return False
        j -= 1
    if pushed != argc or j < 0:
        return False
    loader = ins[j]
    name = loader.argval if isinstance(loader.argval, str) else ""
    if loader.opname in _NAME_LOADS:
        return name in _NEXT_NAMES
    return loader.opname in _ATTR_LOADS and name in _NEXT_METHODS


def fetch_offsets(code: CodeType, ins: list[dis.Instruction] | None = None) -> frozenset[int]:
    """The byte offsets (``f_lasti`` values, an instruction's inline caches included) at which
    a frame of ``code`` (its instructions ``ins``, when read) is asking an iterator for its
    next item."""
    if ins is None:
        ins = list(dis.get_instructions(code))
    found: set[int] = set()
    for k, op in enumerate(ins):
        if op.opname.startswith("FOR_ITER") or (op.opname in _CALLS and _callee_fetches(ins, k)):
            # from the PRECALL before a call (3.11 runs a builtin like `next` there once the
            # call is specialized) to the last of the instruction's inline caches
            first = k
            while first > 0 and ins[first - 1].opname in _SKIPPED:
                first -= 1
            end = ins[k + 1].offset if k + 1 < len(ins) else op.offset + 2
            found.update(range(ins[first].offset, end, 2))
    return frozenset(found)


def _line_of(op: dis.Instruction, carried: int | None) -> int | None:
    """The source line of ``op`` (3.11+ gives each instruction's; 3.10 only a line's first)."""
    positions = getattr(op, "positions", None)
    line = positions.lineno if positions is not None else None
    if line is None and isinstance(op.starts_line, int) and not isinstance(op.starts_line, bool):
        line = op.starts_line
    return line if line is not None else carried


def loop_lines(
    code: CodeType, ins: list[dis.Instruction] | None = None
) -> dict[int, tuple[int, int]]:
    """Per ``for`` statement of ``code``, by its ``FOR_ITER``'s offset: the first and last
    source line of the loop, the ``for`` line first, the last its body's (every instruction
    from the ``FOR_ITER`` to the one its end jumps to). The sampler's line of the loop's frame
    then tells the loop's body from code after the loop (decision 681)."""
    if ins is None:
        ins = list(dis.get_instructions(code))
    lines: list[int | None] = []
    carried: int | None = None
    for op in ins:
        carried = _line_of(op, carried)
        lines.append(carried)
    out: dict[int, tuple[int, int]] = {}
    for k, op in enumerate(ins):
        if not op.opname.startswith("FOR_ITER") or not isinstance(op.argval, int):
            continue
        first = lines[k]
        body = [
            line
            for j in range(k + 1, len(ins))
            if ins[j].offset < op.argval and (line := lines[j]) is not None
        ]
        if first is not None and body:
            out[op.offset] = (first, max(max(body), first))
    return out


def loop_spans(code: CodeType) -> tuple[tuple[int, int], ...]:
    """The offsets each loop of ``code`` spans, (first, last): from the target of each jump
    backwards to the jump (a ``for``'s ``FOR_ITER`` to its body's end, a ``while``'s body, a
    ``continue``'s part of one). An offset inside a loop lies in at least one."""
    jumps = set(dis.hasjrel) | set(dis.hasjabs)
    return tuple(
        (op.argval, op.offset)
        for op in dis.get_instructions(code)
        if op.opcode in jumps and isinstance(op.argval, int) and op.argval <= op.offset
    )


class FetchSites:
    """`fetch_offsets` and `loop_lines` per code object, each code read once (``dis`` of a
    script's module took 0.96 ms, decision 507)."""

    def __init__(self) -> None:
        self._by_code: dict[CodeType, tuple[frozenset[int], dict[int, tuple[int, int]]]] = {}
        self._queue_gets: frozenset[CodeType] | None = None
        self._spans: dict[CodeType, tuple[tuple[int, int], ...]] = {}

    def _read(self, code: CodeType) -> tuple[frozenset[int], dict[int, tuple[int, int]]]:
        known = self._by_code.get(code)
        if known is None:
            try:
                ins = list(dis.get_instructions(code))
                known = (fetch_offsets(code, ins), loop_lines(code, ins))
            except Exception:  # a code object dis cannot read: no site (capture never fails)
                known = (frozenset(), {})
            self._by_code[code] = known
        return known

    def at(self, code: CodeType, lasti: int) -> bool:
        """Whether a frame of ``code`` standing at ``lasti`` is asking for a next item."""
        return lasti in self._read(code)[0]

    def gets_from_queue(self, code: CodeType) -> bool:
        """Whether a frame of ``code`` is a standard-library queue's ``get``: entered for the
        caller's next item wherever the caller stands. The queues are looked up at the first
        call (`queue_gets`), when the program has imported those it uses."""
        gets = self._queue_gets
        if gets is None:
            gets = self._queue_gets = queue_gets()
        return code in gets

    def loop_spans(self, code: CodeType) -> tuple[tuple[int, int], ...]:
        """`loop_spans` of ``code``, read once."""
        known = self._spans.get(code)
        if known is None:
            try:
                known = loop_spans(code)
            except Exception:  # a code object dis cannot read: no loop (capture never fails)
                known = ()
            self._spans[code] = known
        return known

    def lines_of_loop(self, code: CodeType, lasti: int) -> tuple[int, int] | None:
        """The first and last line of the ``for`` loop whose ``FOR_ITER`` a frame of ``code``
        stands at (``lasti``), or None (a ``next()`` call, a ``for`` of a comprehension)."""
        loops = self._read(code)[1]
        found = loops.get(lasti)
        if found is None:  # 3.12+ reports the FOR_ITER's inline cache
            found = loops.get(lasti - 2)
        return found
