"""tinct's exceptions.

Every error tinct raises is a :class:`TinctError`. They follow the exit
statuses of the ``tinct`` command:

* :class:`BadInput` (exit status 2): a task-set file, dict, argument or array
  that tinct refuses. Its message is the CLI's, naming the file, line and
  field, what was expected and what was found; the parts are attributes.
* :class:`Failed` (exit status 1): the operation could not do its job, e.g.
  a result file could not be written.
* :class:`Stopped` (exit status 1): a ``timeout`` stopped a long computation;
  nothing is lost: ``partial`` holds what was computed.
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["TinctError", "BadInput", "Failed", "Stopped"]


class TinctError(Exception):
    """The base class of every error tinct raises."""


class BadInput(TinctError, ValueError):
    """Input tinct refuses (the CLI's exit status 2).

    ``str(error)`` is the CLI's message, e.g.
    ``examples/x.toml:12: task 'a' field `deadline`: expected a deadline at
    most the period (10ms; ...), found 20ms``.

    Attributes:
        file: the file (``"<dict>"``, ``"<string>"``) or ``None`` for an argument.
        line: the 1-based line in the file, when known.
        field: the field or argument, e.g. ``task 'a' field `deadline```.
        expected: what was expected (``None`` when the message says it).
        found: what was found (``None`` when the message says it).
    """

    def __init__(
        self,
        message: str,
        file: Optional[str] = None,
        line: Optional[int] = None,
        field: Optional[str] = None,
        expected: Optional[str] = None,
        found: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.field = field
        self.expected = expected
        self.found = found


class Failed(TinctError):
    """The operation ran and could not do its job (the CLI's exit status 1)."""


class Stopped(TinctError):
    """A ``timeout`` stopped the computation before it finished.

    Attributes:
        partial: the result computed so far, in the form the complete call
            returns (e.g. a shard dict whose ``sets`` count the sets done).
    """

    def __init__(self, message: str, partial: Any = None) -> None:
        super().__init__(message)
        self.partial = partial
