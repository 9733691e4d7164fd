"""Match keys: the part of an op, kernel or stage name that survives renames users cannot
control, so the same work is matched between two runs (rules in docs/tools/diff.md).

- PyTorch step annotations: ``ProfilerStep#17`` -> ``ProfilerStep#*``.
- PyTorch's DataLoader wait: ``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__``
  and ``..._MultiProcessingDataLoaderIter.__next__`` -> ``enumerate(DataLoader)#*.__next__``:
  both are the loop waiting for its next batch, and ``num_workers`` picks the class (a diff of
  0 against 2 workers shows that wait change, not one op gone and one new; decision 325).
- XLA instruction numbering: ``fusion.12`` / ``%fusion.13`` -> ``fusion`` (a numeric ``.N``
  suffix after a letter, at the end of a name or of a ``/``/``:`` path part).
- C++ kernel names: the leading return type ``void`` and the parameter list ``(...)`` are
  dropped and numeric template arguments (tile sizes, unroll factors, flags) become ``*``,
  so ``void gemm<float, 128, 4>(Params)`` and ``void gemm<float, 64, 8>(Params)`` match;
  type arguments stay (a ``float`` kernel is not a ``half`` kernel).
- Memory addresses (``0x7f12...``) -> ``0x*``; a leading ``%`` (HLO text) is dropped.

Names that become equal are summed into one row (``fusion.1`` + ``fusion.2`` -> ``fusion``):
renumbering does not tell which fusion of one run is which of the other.
"""

from __future__ import annotations

import re
from functools import lru_cache

from stepscope.vocab.pytorch import DATALOADER_NEXT, PROFILER_STEP, PROFILER_STEP_ANY

_XLA_SUFFIX = re.compile(r"(?<=[A-Za-z_])\.\d+(?=$|[/:\s,)])")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_DATALOADER_ITER = re.compile(re.escape(DATALOADER_NEXT) + r"#_\w+DataLoaderIter\.__next__$")
_SPACES = re.compile(r"\s+")
# a number (with a C++ suffix or cast) or a boolean, as a whole template argument
_TEMPLATE_NUMBER = re.compile(
    r"(?<![\w.])(?:\(\w+\))?(?:-?\d+(?:\.\d+)?[uUlLfF]*|true|false)(?![\w.])"
)


def _template_numbers(name: str) -> str:
    """Numeric arguments inside ``<...>`` groups that follow an identifier become ``*``;
    ``<built-in ...>`` style names, where ``<`` starts the name or follows a space, are kept."""
    out: list[str] = []
    depth = 0
    start = 0
    for k, ch in enumerate(name):
        if ch == "<" and (depth or (k and (name[k - 1].isalnum() or name[k - 1] in "_:"))):
            if depth == 0:
                out.append(name[start : k + 1])
                start = k + 1
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
            if depth == 0:
                out.append(_TEMPLATE_NUMBER.sub("*", name[start:k]) + ">")
                start = k + 1
    if depth:  # unbalanced: leave it alone
        return name
    out.append(name[start:])
    return "".join(out)


def _strip_parameters(name: str) -> str:
    """``ns::kernel(int, float*)`` -> ``ns::kernel``: a trailing balanced parameter list after
    an identifier (Python tracer names such as ``f.py(12): fn`` do not end with ``)``)."""
    if not name.endswith(")"):
        return name
    depth = 0
    for k in range(len(name) - 1, -1, -1):
        if name[k] == ")":
            depth += 1
        elif name[k] == "(":
            depth -= 1
            if depth == 0:
                head = name[:k]
                return head if head and (head[-1].isalnum() or head[-1] in "_>") else name
    return name


@lru_cache(maxsize=65536)
def match_key(name: str) -> str:
    """The key under which ``name`` is matched between two runs."""
    key = PROFILER_STEP_ANY.sub(PROFILER_STEP + "*", name.strip())
    key = _DATALOADER_ITER.sub(DATALOADER_NEXT + "#*.__next__", key)
    key = _ADDRESS.sub("0x*", key)
    if key.startswith("void "):
        key = key[5:]
    key = _strip_parameters(_template_numbers(key.removeprefix("%")))
    key = _XLA_SUFFIX.sub("", key)
    return _SPACES.sub(" ", key).strip() or name
