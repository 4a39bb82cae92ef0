"""The one error hierarchy and the one registry of error codes.

Every user-facing failure is a CapsuleError with a stable ``code``. REGISTRY
holds every code the package raises or reports: the class it is raised as,
its exit code, and the advice a failure line prints for it. Code raises and
compares codes with the constants below (``code=SOURCE_MISSING``,
``exc.code == SOURCE_MISSING``), never with string literals, and every
CapsuleError subclass is defined here; docs/errors.md lists every code (tests/test_errors.py keeps
all three in step). ``governance.commands`` is the only place that turns
errors into exit codes and output.
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar, NamedTuple

# Exit codes are part of the public contract (README, --help, docs/format.md).
EXIT_OK = 0
EXIT_DRIFT = 1
EXIT_USAGE = 2
EXIT_SOURCE = 3
EXIT_BUDGET = 4


class CapsuleError(Exception):
    """Base error: a stable machine ``code``, a human message, JSON details."""

    # A class whose errors all carry one code names it here; the others are
    # always given one (a missing code is a bug: TypeError).
    default_code: ClassVar[str] = ""
    exit_code: ClassVar[int] = EXIT_USAGE

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        if not self.code:
            raise TypeError(f"{type(self).__name__} needs a code: {message}")
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


class SourceError(CapsuleError):
    """A source or selector failed closed: nothing is emitted."""

    exit_code = EXIT_SOURCE


class BudgetError(CapsuleError):
    """The capsule would not fit the token budget."""

    default_code = "over_budget"
    exit_code = EXIT_BUDGET


class RecordConflict(CapsuleError):
    """A different file already holds this record's name: never overwritten (exit 2)."""

    default_code = "record_conflict"


class RecordMisplaced(CapsuleError):
    """A record away from the path its id and commit give (exit 1, like drift)."""

    default_code = "record_misplaced"
    exit_code = EXIT_DRIFT


class Interrupted(CapsuleError):
    """SIGTERM reached the runner while agents ran: they were stopped."""

    default_code = "interrupted"
    exit_code = 128 + 15  # SIGTERM


class HungUp(Interrupted):
    """SIGHUP reached the runner while agents ran: they were stopped."""

    exit_code = 128 + 1  # SIGHUP


def coded(exc: BaseException) -> CapsuleError | None:
    """``exc`` as the coded error a command reports for it, or None when it is
    not the user's to fix (a bug: let it raise). The file system said no
    (``io_error``), or git did (``git_error``, a corrupt or unreadable
    object or repository); both exit 2."""
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return CapsuleError(f"{where}{exc.strerror or exc}", code=IO_ERROR)
    # Only when pygit2 is loaded already: the command line does not load it to
    # report an error that did not come from git.
    pygit2 = sys.modules.get("pygit2")
    if pygit2 is not None and isinstance(exc, pygit2.GitError):
        return CapsuleError(f"git: {exc}", code=GIT_ERROR)
    return None


# --- the registry ---------------------------------------------------------------


class Code(NamedTuple):
    """One error code: the class of ``governance.errors`` it is raised as (a
    subclass may carry it too, with the same exit code), or None for
    a failure a command reports without raising it; its exit code; and what a
    failure line advises, for a packet's failure (``advice``) and for a capsule
    record's (``record_advice``), where the message does not say it already.
    A NamedTuple: every command imports this module, and ``capsule --help``
    need not pay for importing dataclasses (inspect, dis: about 4 ms)."""

    code: str
    error: type[CapsuleError] | None
    exit_code: int
    advice: str = ""
    record_advice: str = ""


REGISTRY: dict[str, Code] = {}


def _code(
    code: str,
    error: type[CapsuleError] | None,
    *,
    exit_code: int | None = None,
    advice: str = "",
    record_advice: str = "",
) -> str:
    if exit_code is None:
        assert error is not None
        exit_code = error.exit_code
    REGISTRY[code] = Code(code, error, exit_code, advice, record_advice)
    return code


def advice(code: str) -> str:
    """What a packet's failure line advises for ``code`` ("" when its message says it)."""
    entry = REGISTRY.get(code)
    return entry.advice if entry is not None else ""


def record_advice(code: str) -> str:
    """What a capsule record's failure line advises for ``code``."""
    entry = REGISTRY.get(code)
    return entry.record_advice if entry is not None else ""


_RESTORE_RECORD = "restore the record as capsule build wrote it"
_FIX_LOCATOR = "update the locator in the packet"

# Usage: the command line, the repository, what a command writes (exit 2).
USAGE = _code("usage", UsageError)
NOT_A_REPOSITORY = _code("not_a_repository", UsageError)
INVALID_REVISION = _code("invalid_revision", UsageError)
INVALID_RANGE = _code("invalid_range", UsageError)
INVALID_GLOB = _code("invalid_glob", UsageError)
INVALID_PATHSPEC = _code("invalid_pathspec", UsageError)
PATHSPEC_TOO_LONG = _code("pathspec_too_long", UsageError)
TOO_MANY_PATHSPECS = _code("too_many_pathspecs", UsageError)
PATHSPEC_NO_MATCH = _code("pathspec_no_match", UsageError)
INVALID_PACKET_PATH = _code("invalid_packet_path", UsageError)
PATH_OUTSIDE_REPOSITORY = _code("path_outside_repository", UsageError)
NO_WORKING_TREE = _code("no_working_tree", UsageError)
OUTPUT_FAILED = _code("output_failed", UsageError)
OUTPUT_NOT_FILE = _code("output_not_file", UsageError)
PATH_THROUGH_LINK = _code("path_through_link", UsageError)
INDEX_UNREADABLE = _code("index_unreadable", UsageError)
INDEX_CONFLICTED = _code("index_conflicted", UsageError)
HOOK_EXISTS = _code("hook_exists", UsageError)
FILE_EXISTS = _code("file_exists", UsageError)
HOOK_NOT_EXECUTABLE = _code("hook_not_executable", UsageError)
RECORD_CONFLICT = _code("record_conflict", RecordConflict)
NOT_A_RECORD = _code(
    "not_a_record",
    None,
    exit_code=EXIT_USAGE,
    record_advice="unstage and delete it (a temp file left by an interrupted write?)",
)
IO_ERROR = _code("io_error", CapsuleError)
GIT_ERROR = _code("git_error", CapsuleError)
INTERNAL_ERROR = _code("internal_error", CapsuleError)
REPLAY_WORKER_LOST = _code("replay_worker_lost", CapsuleError)

# Authoring: capsule suggest and capsule new (exit 2).
GOAL_EMPTY = _code("goal_empty", UsageError)
GOAL_TOO_LONG = _code("goal_too_long", UsageError)
TEXT_EMPTY = _code("text_empty", UsageError)
TEXT_NOT_UTF8 = _code("text_not_utf8", UsageError)
INVALID_PACKET_ID = _code("invalid_packet_id", UsageError)

# Malformed input: a packet, policy, capsule or result (exit 2).
PACKET_MALFORMED = _code("packet_malformed", MalformedInput, advice="fix the packet")
POLICY_MALFORMED = _code("policy_malformed", MalformedInput, advice="fix the policy")
DEPENDENCY_CYCLE = _code(
    "dependency_cycle", MalformedInput, advice="remove one dependency of the cycle"
)
LOOSENS_ADR_LIMIT = _code(
    "loosens_adr_limit",
    MalformedInput,
    advice="bring each number back within the limit named",
)
CAPSULE_UNREADABLE = _code("capsule_unreadable", MalformedInput)
CAPSULE_MALFORMED = _code("capsule_malformed", MalformedInput, record_advice=_RESTORE_RECORD)
NON_CANONICAL = _code("non_canonical", MalformedInput, record_advice=_RESTORE_RECORD)
CAPSULE_CORRUPT = _code(
    "capsule_corrupt",
    MalformedInput,
    record_advice="restore the record, or rebuild it at its commit",
)
UNSUPPORTED_SCHEMA = _code("unsupported_schema", MalformedInput)
RESULT_UNREADABLE = _code("result_unreadable", UsageError)
RESULT_TOO_LARGE = _code("result_too_large", MalformedInput)
RESULT_MALFORMED = _code("result_malformed", MalformedInput)
RESULT_INVALID = _code("result_invalid", MalformedInput)

# A source or selector failed closed (exit 3).
SOURCE_MISSING = _code(
    "source_missing",
    SourceError,
    advice=f"restore the file, or {_FIX_LOCATOR}",
    record_advice="stage the record, or leave it out",
)
SOURCE_UNTRACKED = _code("source_untracked", SourceError)
SOURCE_DIRTY = _code("source_dirty", SourceError)
SOURCE_SYMLINK = _code("source_symlink", SourceError, advice="point the locator at a regular file")
SOURCE_SUBMODULE = _code(
    "source_submodule", SourceError, advice="point the locator at a file of this repository"
)
SOURCE_NOT_FILE = _code(
    "source_not_file", SourceError, advice="point the locator at a regular file"
)
SOURCE_NOT_UTF8 = _code(
    "source_not_utf8", SourceError, advice="store the source as UTF-8, or stop reading it"
)
UNSAFE_PATH = _code(
    "unsafe_path", SourceError, advice="write the locator as a plain repository-relative path"
)
INVALID_LOCATOR = _code(
    "invalid_locator",
    SourceError,
    advice="write the locator as path, path#heading-slug, path#parent-slug/heading-slug or "
    "path#L10-L40",
)
HEADING_MISSING = _code(
    "heading_missing", SourceError, advice=f"restore the heading, or {_FIX_LOCATOR}"
)
HEADING_AMBIGUOUS = _code("heading_ambiguous", SourceError)
LINE_RANGE_INVALID = _code(
    "line_range_invalid", SourceError, advice="write the lines as path#L10-L40, or path#L10"
)
LINE_RANGE_OUTSIDE = _code(
    "line_range_outside", SourceError, advice=f"restore the lines, or {_FIX_LOCATOR}"
)
SOURCE_BINARY = _code(
    "source_binary", SourceError, advice="select lines of a text file, or read the file whole"
)
SYMBOL_MISSING = _code(
    "symbol_missing", SourceError, advice=f"restore the definition, or {_FIX_LOCATOR}"
)
SYMBOL_AMBIGUOUS = _code(
    "symbol_ambiguous", SourceError, advice="select the lines meant with #L10-L40"
)
PYTHON_INVALID = _code(
    "python_invalid", SourceError, advice="fix the file, or select its lines with #L10-L40"
)
SOURCE_TOO_LARGE = _code("source_too_large", SourceError)
SOURCE_TOO_MANY_HEADINGS = _code(
    "source_too_many_headings",
    SourceError,
    advice="read the file whole or by lines, or raise max_heading_count in the policy",
)
TOO_MANY_READS = _code("too_many_reads", SourceError)
DEPENDENCY_MISSING = _code(
    "dependency_missing",
    SourceError,
    advice="add that packet, or remove the id from dependencies",
)
SOURCE_SECRET = _code("source_secret", SourceError)
OBJECT_MISSING = _code("object_missing", SourceError)
COMMIT_MISSING = _code(
    "commit_missing",
    SourceError,
    record_advice="commit records only where their commit is in the history (fetch it, "
    "or rebuild the record at a commit of this branch)",
)
COMMIT_UNREACHABLE = _code(
    "commit_unreachable",
    SourceError,
    record_advice="rebuild the record at a commit of this branch (HEAD or an ancestor), or "
    "leave it out: a fresh clone would not have its commit",
)

# Over budget (exit 4).
OVER_BUDGET = _code(
    "over_budget",
    BudgetError,
    advice="narrow the largest reads to heading sections, or split the packet",
)

# Warnings: reported, never raised; they change no exit code.
READS_OVERLAP = _code("reads_overlap", None, exit_code=EXIT_OK)
# Built without the secrets extra: nothing was scanned for secrets.
SECRET_SCAN_UNAVAILABLE = _code("secret_scan_unavailable", None, exit_code=EXIT_OK)

# The secret scan's waiver file (policies/secret-waivers.yml).
SECRET_WAIVERS_MALFORMED = _code(
    "secret_waivers_malformed", MalformedInput, advice="fix policies/secret-waivers.yml"
)

# Capsule records read from history or the index.
RECORD_NOT_FILE = _code(
    "record_not_file",
    SourceError,
    record_advice="stage the record itself, as capsule build wrote it",
)
RECORD_UNREADABLE = _code("record_unreadable", CapsuleError)
# Away from the path its own id and commit give: not evidence where it is (exit 1).
RECORD_MISPLACED = _code("record_misplaced", RecordMisplaced)
RECORD_TOO_LARGE = _code("record_too_large", MalformedInput)
# Reported, never raised: a record that is not what the builder gives (exit 1).
REPLAY_DIFFERS = _code(
    "replay_differs",
    None,
    exit_code=EXIT_DRIFT,
    record_advice="the record is not what the builder gives at its commit: restore it, or "
    "rebuild it there",
)
# Reported, never raised: a record that replays identically but carries what
# the secret scan refuses today (exit 1).
RECORD_SECRET = _code(
    "record_secret",
    None,
    exit_code=EXIT_DRIFT,
    record_advice="revoke the secret; delete the record at the tip and waive its blob in "
    "policies/audit-waivers.yml, or waive a reviewed false positive in "
    "policies/secret-waivers.yml",
)
# The audit's waiver file (policies/audit-waivers.yml).
WAIVERS_MALFORMED = _code("waivers_malformed", MalformedInput)
# Reported, never raised: a waiver that matches no record version (exit 1).
WAIVER_UNUSED = _code("waiver_unused", None, exit_code=EXIT_DRIFT)
# Reported, never raised: a waiver for a record blob still at the range's tip (exit 1).
WAIVER_AT_TIP = _code("waiver_at_tip", None, exit_code=EXIT_DRIFT)

# The continuation runner.
AGENT_COMMAND_INVALID = _code("agent_command_invalid", UsageError)
AGENT_NOT_FOUND = _code("agent_not_found", UsageError)
AGENT_NOT_EXECUTABLE = _code("agent_not_executable", UsageError)
AGENT_USER_UNAVAILABLE = _code("agent_user_unavailable", UsageError)
PASS_ENV_INVALID = _code("pass_env_invalid", UsageError)
PASS_ENV_RESERVED = _code("pass_env_reserved", UsageError)
PASS_ENV_UNSET = _code("pass_env_unset", UsageError)
# Namespace isolation asked for (--isolation namespaces, --network none) and not
# to be had here; a --share that would show the current folder or HOME.
ISOLATION_UNAVAILABLE = _code("isolation_unavailable", UsageError)
SHARE_REFUSED = _code("share_refused", UsageError)
# SIGTERM (exit 143) or SIGHUP (exit 129) while the agents ran.
INTERRUPTED = _code("interrupted", Interrupted)

# Signed records.
SSH_KEYGEN_MISSING = _code("ssh_keygen_missing", CapsuleError)
SSH_KEYGEN_FAILED = _code("ssh_keygen_failed", CapsuleError)
KEY_UNREADABLE = _code("key_unreadable", CapsuleError)
SIGN_FAILED = _code("sign_failed", CapsuleError)
SIGNERS_MALFORMED = _code("signers_malformed", MalformedInput)
SIGNING_POLICY_MALFORMED = _code("signing_policy_malformed", MalformedInput)
# Reported, never raised: a record's signature where signatures are required (exit 1).
UNSIGNED = _code(
    "unsigned",
    None,
    exit_code=EXIT_DRIFT,
    record_advice="sign it: capsule sign RECORD --key KEY, and stage RECORD.sig",
)
BAD_SIGNATURE = _code(
    "bad_signature",
    None,
    exit_code=EXIT_DRIFT,
    record_advice="sign the record as it is staged again: capsule sign RECORD --key KEY",
)
UNKNOWN_SIGNER = _code(
    "unknown_signer",
    None,
    exit_code=EXIT_DRIFT,
    record_advice="sign with a key HEAD's policies/allowed_signers lists; a new key is trusted "
    "from the commit after the one that adds it",
)
SIGNER_EXPIRED = _code(
    "signer_expired",
    None,
    exit_code=EXIT_DRIFT,
    record_advice="sign with a key that is valid now, or extend its lifetime in a commit of "
    "its own",
)
SIGNER_REVOKED = _code(
    "signer_revoked",
    None,
    exit_code=EXIT_DRIFT,
    record_advice="sign with a key that is not revoked",
)
SIGNATURE_BACKDATED = _code(
    "signature_backdated",
    None,
    exit_code=EXIT_DRIFT,
    record_advice="sign the record again in a commit dated after the record's own commit",
)
# Reported, never raised: a .sig in a records folder with no record beside it.
SIGNATURE_WITHOUT_RECORD = _code(
    "signature_without_record",
    None,
    exit_code=EXIT_SOURCE,
    record_advice="stage the record beside it, or remove the .sig",
)

# The MCP server (capsule mcp): its tool errors carry these and every code above.
MCP_UNAVAILABLE = _code("mcp_unavailable", UsageError)
WRITE_DISABLED = _code(
    "write_disabled",
    UsageError,
    advice="call again without record, or ask for a server started with --enable-write",
)
INVALID_ARGUMENTS = _code(
    "invalid_arguments",
    UsageError,
    advice="call again with the arguments the tool's inputSchema declares (tools/list)",
)
UNKNOWN_TOOL = _code(
    "unknown_tool", UsageError, advice="call one of the tools that tools/list names"
)
INPUT_TOO_LARGE = _code("input_too_large", MalformedInput)
