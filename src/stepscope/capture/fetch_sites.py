"""Where a frame asks an iterator for its next item: a ``for`` statement's iteration, or a
call of ``next(...)`` / ``x.__next__()``.

The stack sampler records each frame's current instruction (``f_lasti``); a frame whose
caller stands at such a site was entered to produce the caller's next item: a generator
resumed, an iterator's ``__next__``, the function ``map`` applies, a generator beneath
``enumerate`` / ``zip`` / ``itertools``. The analysis uses it to tell a training loop
fetching its batch from everything else its body calls (docs/formats/python_samples.md,
``next_frames``). A generator consumed by ``sum(...)``, ``list(...)`` or a comprehension
is not such a site: its caller stands at that other call.

Read from the bytecode (``dis``), once per code object, when the capture is saved, never
while sampling. Only the standard library is imported (capture runs inside training scripts).
"""

from __future__ import annotations

import dis

TYPE_CHECKING = False  # not typing's: see stepscope.capture.options
if TYPE_CHECKING:
    from types import CodeType

_CALLS = frozenset({"CALL", "CALL_FUNCTION", "CALL_METHOD"})  # 3.11+, 3.10, 3.10 methods
_SKIPPED = frozenset({"PRECALL", "KW_NAMES", "CACHE", "EXTENDED_ARG"})  # between args and call
_NAME_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_FAST", "LOAD_CLASSDEREF"})
_ATTR_LOADS = frozenset({"LOAD_METHOD", "LOAD_ATTR"})
_NEXT_NAMES = frozenset({"next"})
_NEXT_METHODS = frozenset({"__next__"})


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


def fetch_offsets(code: CodeType) -> frozenset[int]:
    """The byte offsets (``f_lasti`` values, an instruction's inline caches included) at which
    a frame of ``code`` is asking an iterator for its next item."""
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


class FetchSites:
    """`fetch_offsets` per code object, each read once."""

    def __init__(self) -> None:
        self._by_code: dict[CodeType, frozenset[int]] = {}

    def at(self, code: CodeType, lasti: int) -> bool:
        """Whether a frame of ``code`` standing at ``lasti`` is asking for a next item."""
        offsets = self._by_code.get(code)
        if offsets is None:
            try:
                offsets = fetch_offsets(code)
            except Exception:  # a code object dis cannot read: no site (capture never fails)
                offsets = frozenset()
            self._by_code[code] = offsets
        return lasti in offsets
