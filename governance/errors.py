"""The one error hierarchy. Every user-facing failure is a CapsuleError with a
stable ``code``; ``governance.cli`` is the only place that turns them into exit
codes and output."""

from __future__ import annotations

from typing import Any, ClassVar

# Exit codes are part of the public contract (README, --help, docs/format.md).
EXIT_OK = 0
EXIT_DRIFT = 1
EXIT_USAGE = 2
EXIT_SOURCE = 3
EXIT_BUDGET = 4


class CapsuleError(Exception):
    """Base error: a stable machine ``code``, a human message, JSON details."""

    default_code: ClassVar[str] = "error"
    exit_code: ClassVar[int] = EXIT_USAGE

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.details = details

    def to_json(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.details}}

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled with its code and details: audit's worker processes send
        # record errors back to the parent.
        return (_restore, (type(self), self.message, self.code, self.details))


def _restore(
    cls: type[CapsuleError], message: str, code: str, details: dict[str, Any]
) -> CapsuleError:
    return cls(message, code=code, **details)


class UsageError(CapsuleError):
    """Bad command line, bad revision, not a repository."""

    default_code = "usage"


class MalformedInput(CapsuleError):
    """A packet, policy or capsule that does not parse or fails its schema."""

    default_code = "malformed_input"


class SourceError(CapsuleError):
    """A source or selector failed closed: nothing is emitted."""

    default_code = "source_error"
    exit_code = EXIT_SOURCE


class BudgetError(CapsuleError):
    """The capsule would not fit the token budget."""

    default_code = "over_budget"
    exit_code = EXIT_BUDGET


def coded(exc: BaseException) -> CapsuleError | None:
    """``exc`` as the coded error a command reports for it, or None when it is
    not the user's to fix (a bug: let it raise). The file system said no
    (``io_error``), or git did (``git_error``, a corrupt or unreadable
    object or repository); both exit 2."""
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return CapsuleError(f"{where}{exc.strerror or exc}", code="io_error")
    import sys

    pygit2 = sys.modules.get("pygit2")
    if pygit2 is not None and isinstance(exc, pygit2.GitError):
        return CapsuleError(f"git: {exc}", code="git_error")
    return None
