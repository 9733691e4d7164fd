"""Parse trace JSON, repairing the damage profilers and crashed processes leave behind.

Valid JSON takes the fast path (one `json.loads`). Only when that fails does `repair_json`
rewrite the text in one linear scan, fixing what can be fixed without guessing at content:

- a ``"`` inside a string that is not followed by what may follow a string (``:`` ``,``
  ``}`` ``]`` or the end) is an unescaped quote and gets escaped (old Kineto wrote names such
  as ``operator"quoted"`` verbatim);
- raw control characters inside strings are escaped; invalid escapes (``C:\\path``) have
  their backslash doubled;
- trailing commas before ``}`` / ``]`` are dropped;
- a truncated file (a process killed while writing) is cut after the last complete element of
  the outermost array (for Kineto: the last complete trace event) and its brackets closed;
- anything after the end of the top-level value is ignored;
- a lone surrogate escape (``\ud800`` without its pair: no character, and no UTF-8 text
  can hold it) becomes U+FFFD.

What cannot be fixed raises `ProfileFormatError` naming the first error's line and column.
"""

from __future__ import annotations

import json
import re
from typing import Any

from stepscope.errors import ProfileFormatError
from stepscope.records import record

# Outside strings: a run of tokens that need no attention (numbers, literals, whitespace,
# colons, commas and well-formed strings followed by what may follow a string).
# Every repeat is possessive and a string body is "unrolled" (plain characters, then escapes
# each followed by plain characters), so the regex engine keeps no backtracking state per
# character: an unterminated 50 MB string costs no more memory than the text itself.
_RUN = re.compile(
    r'(?:[^"{}\[\]]++|"[^"\\\x00-\x1f]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*+)*+"'
    r'(?=\s*+(?:[:}\]]|,\s*+["{\[\-0-9tfn}\]]|\Z)))++'
)
_STRING_BODY = re.compile(r'[^"\\\x00-\x1f]*+')
_VALID_ESCAPE = re.compile(r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})')
# What may follow the closing quote of a string (see module docstring).
_AFTER_STRING = re.compile(r'\s*(?:[:}\]]|,\s*["{\[\-0-9tfn}\]]|\Z)')
_TRAILING_COMMA = re.compile(r",(\s*)\Z")
_CLOSERS = {"{": "}", "[": "]"}
_NON_BLANK = re.compile(r"\S")
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
# Escapes left to right: a surrogate pair (kept), a lone surrogate (group 1: replaced), any
# other escape (kept; consuming ``\\`` keeps an escaped backslash from starting one).
_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    r"|(\\u[dD][89a-fA-F][0-9a-fA-F]{2})|\\[^u]"
)


@record(frozen=False)
class RepairReport:
    """What `repair_json` changed; `describe()` turns it into one warning line."""

    escaped_quotes: int = 0
    escaped_controls: int = 0
    fixed_escapes: int = 0
    trailing_commas: int = 0
    truncated: bool = False
    trailing_chars: int = 0

    def changed(self) -> bool:
        return any(
            (
                self.escaped_quotes,
                self.escaped_controls,
                self.fixed_escapes,
                self.trailing_commas,
                self.truncated,
                self.trailing_chars,
            )
        )

    def describe(self) -> str:
        parts = []
        for count, what in (
            (self.escaped_quotes, "unescaped quote(s) in strings"),
            (self.escaped_controls, "control character(s) in strings"),
            (self.fixed_escapes, "invalid backslash escape(s)"),
            (self.trailing_commas, "trailing comma(s)"),
        ):
            if count:
                parts.append(f"fixed {count} {what}")
        if self.truncated:
            parts.append("file is truncated: kept the complete events before the cut")
        if self.trailing_chars:
            parts.append(f"ignored {self.trailing_chars} characters after the JSON document")
        return "repaired invalid JSON: " + "; ".join(parts)


def decode_text(data: bytes, warnings: list[str]) -> str:
    """UTF-8 text of ``data``; a BOM is dropped, bad bytes become U+FFFD (with a warning)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        warnings.append("file is not valid UTF-8: undecodable bytes were replaced by U+FFFD")
    return text[1:] if text.startswith("\ufeff") else text


def _without_lone_surrogates(text: str, warnings: list[str]) -> str:
    """``text`` with its lone surrogate escapes replaced by ``\ufffd`` (with a warning)."""
    if _SURROGATE.search(text) is None:
        return text
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if match.group(1) is None:
            return match.group()
        count += 1
        return "\\ufffd"

    text = _ESCAPE.sub(replace, text)
    if count:
        warnings.append(
            f"repaired invalid JSON: replaced {count} lone surrogate escape(s) by U+FFFD"
        )
    return text


def load_json(data: bytes, source: str, warnings: list[str]) -> Any:
    """The JSON value in ``data``, repaired if needed (a warning says what was repaired)."""
    text = _without_lone_surrogates(decode_text(data, warnings), warnings)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        first_error = exc
    except RecursionError as exc:
        raise ProfileFormatError(source, "JSON is nested too deeply to read") from exc
    first = _NON_BLANK.search(text)
    head = first.group() if first else ""
    if head not in ("{", "["):
        raise ProfileFormatError(
            source,
            "is not JSON (it does not start with '{' or '[')",
            "expected a PyTorch profiler trace (.json or .json.gz)",
        )
    repaired, report = repair_json(text)
    value: Any = None
    if repaired is not None and report.changed():
        try:
            value = json.loads(repaired, strict=False)
        except (json.JSONDecodeError, RecursionError):
            repaired = None
    if repaired is None or not report.changed():
        raise ProfileFormatError(
            source,
            f"is not valid JSON and could not be repaired ({first_error.msg} at line "
            f"{first_error.lineno} column {first_error.colno})",
            "the trace file is damaged; capture it again",
        ) from first_error
    warnings.append(report.describe())
    return value


def repair_json(text: str) -> tuple[str | None, RepairReport]:
    """Repaired JSON text (None when the structure is beyond repair) and what was changed."""
    report = RepairReport()
    out: list[str] = []
    stack: list[str] = []
    opened_at: dict[int, int] = {}  # depth -> len(out) just after the opening bracket
    closed_at: dict[int, int] = {}  # depth -> len(out) just after a bracket closed back to it
    n = len(text)
    i = 0
    while i < n:
        run = _RUN.match(text, i)
        if run is not None:
            out.append(run.group())
            i = run.end()
            continue
        char = text[i]
        if char in "{[":
            stack.append(char)
            out.append(char)
            opened_at[len(stack)] = len(out)
            i += 1
        elif char in "}]":
            if not stack or _CLOSERS[stack[-1]] != char:
                return None, report
            _drop_trailing_comma(out, report)
            stack.pop()
            out.append(char)
            closed_at[len(stack)] = len(out)
            i += 1
            if not stack:
                rest = text[i:].strip()
                report.trailing_chars = len(rest)
                break
        else:  # a string that `_RUN` did not accept
            i = _repair_string(text, i, out, report)
            if i < 0:
                report.truncated = True
                break
    else:
        if stack:
            report.truncated = True
    if report.truncated:
        if not stack:
            return None, report
        depth = _keep_depth(stack)
        cut = max(closed_at.get(depth, -1), opened_at[depth])
        del out[cut:]
        _drop_trailing_comma(out, report, count=False)
        out.extend(_CLOSERS[b] for b in reversed(stack[:depth]))
    return "".join(out), report


def _keep_depth(stack: list[str]) -> int:
    """Depth whose complete elements a truncated file keeps.

    2 when the cut is inside an array held by the root object (Kineto's ``traceEvents``): its
    complete events are kept; 1 for a bare top-level array, or when the cut is in another
    value of the root object (that value is dropped, earlier complete ones are kept).
    """
    if stack[0] == "[" or len(stack) < 2 or stack[1] != "[":
        return 1
    return 2


def _drop_trailing_comma(out: list[str], report: RepairReport, count: bool = True) -> None:
    """Remove a comma that ends the output (ignoring whitespace), as before ``}`` or ``]``."""
    for index in range(len(out) - 1, -1, -1):
        piece = out[index]
        if not piece.strip():
            continue
        match = _TRAILING_COMMA.search(piece)
        if match is not None:
            out[index] = piece[: match.start()] + match.group(1)
            if count:
                report.trailing_commas += 1
        return


def _repair_string(text: str, i: int, out: list[str], report: RepairReport) -> int:
    """Copy the string starting at ``text[i] == '"'``, repaired; -1 when the text ends inside it."""
    n = len(text)
    out.append('"')
    i += 1
    while True:
        body_end = _STRING_BODY.match(text, i).end()  # type: ignore[union-attr]
        out.append(text[i:body_end])
        if body_end >= n:
            return -1
        char = text[body_end]
        if char == '"':
            if _AFTER_STRING.match(text, body_end + 1):
                out.append('"')
                return body_end + 1
            out.append('\\"')
            report.escaped_quotes += 1
            i = body_end + 1
        elif char == "\\":
            escape = _VALID_ESCAPE.match(text, body_end)
            if escape is not None:
                out.append(escape.group())
                i = escape.end()
            elif body_end + 1 >= n:
                return -1
            else:
                out.append("\\\\")
                report.fixed_escapes += 1
                i = body_end + 1
        else:
            out.append(f"\\u{ord(char):04x}")
            report.escaped_controls += 1
            i = body_end + 1
