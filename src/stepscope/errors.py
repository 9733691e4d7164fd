"""Errors stepscope reports to users.

Every error a user can cause (a bad file, a wrong argument, misuse of the capture API) is a
`StepscopeError`; the CLI prints its message as one line and exits with status 2, never a
traceback. Messages name the thing that is wrong, what is wrong with it and what to do.
"""

from __future__ import annotations


class StepscopeError(Exception):
    """Base class of errors meant for the user, with a one-line message."""


class ProfileFormatError(StepscopeError):
    """A file is not a profile stepscope can read (empty, truncated, corrupt, wrong kind)."""

    def __init__(self, path: object, problem: str, hint: str = "") -> None:
        self.path = str(path)
        self.problem = problem
        self.hint = hint
        message = f"{self.path}: {problem}"
        if hint:
            message += f" ({hint})"
        super().__init__(message)


def empty_file(path: object) -> ProfileFormatError:
    """The error for a profile file of no bytes (a capture that failed), worded once for the
    readers and `stepscope runs`."""
    return ProfileFormatError(path, "file is empty", "the capture may have failed; capture again")


class NotFoundError(StepscopeError):
    """A run, host, tool or file the user named does not exist."""
