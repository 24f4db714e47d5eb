"""Domain errors of the grader.

Library code raises these; only ``evaltape/cli.py`` turns them into exit codes
(2 usage error, 3 bad input).
"""
from __future__ import annotations


class EvaltapeError(Exception):
    """Base class of every error evaltape raises on purpose."""


class BadInputError(EvaltapeError, ValueError):
    """An input file is unreadable or invalid (exit code 3).

    Attributes:
        path: the file, as given (``str``), or ``None``.
        line: 1-based line number inside the file, or ``None`` for whole-file errors.
        field: the offending key or JSON path (e.g. ``"tool_calls[0].name"``), or ``None``.
        message: what is wrong, in one sentence.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.path, self.line, self.field, self.message = path, line, field, message
        where = ""
        if path is not None:
            where = str(path)
            if line is not None:
                where += f":{line}"
            where += ": "
        if field is not None:
            where += f"field '{field}': "
        super().__init__(where + message)

    def __reduce__(self) -> tuple:
        # keyword-only fields: rebuilt by name when sent back from a worker process
        return _rebuild_bad_input, (self.message, self.path, self.line, self.field)


def _rebuild_bad_input(message: str, path: str | None, line: int | None,
                       field: str | None) -> "BadInputError":
    return BadInputError(message, path=path, line=line, field=field)


class UsageError(EvaltapeError):
    """The request itself cannot be carried out (exit code 2), e.g. grading zero episodes."""
