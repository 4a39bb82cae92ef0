"""``capsule audit``: replay every capsule record of a range of history."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from governance.commands._args import add_command, add_json_flag
from governance.core.words import plural
from governance.errors import USAGE, UsageError
from governance.history.cpus import AUTO_ITEMS_PER_PROCESS, AUTO_MAX_PROCESSES
from governance.history.records import RECORDS_GLOB
from governance.output import err, out, print_json, printable

if TYPE_CHECKING:
    from governance.history.audit import AuditReport, Row
    from governance.history.signed_audit import SignatureReport

HELP = "replay every capsule record found in history (each distinct blob once)"

EPILOG = """\
REV_RANGE:
  REV     every commit reachable from REV (default HEAD: all of HEAD's history)
  A..B    the commits reachable from B and not from A: the records they add
  Each end is HEAD, a full commit id, a unique hex prefix (>= 4), or a branch,
  remote-tracking branch or tag name (origin/main..HEAD); the commits the names
  resolved to are printed. Rev expressions (HEAD~2, main^) are refused.

waivers:
  policies/audit-waivers.yml lists known-bad record blobs, each with a reason:
  their drift or error rows are "waived", not failures. It is read at A of
  A..B (a pull request cannot waive what it brings in), else at the tip. A
  waiver that matches no record version of the range (nor, for A..B, of the
  history before A) is waiver_unused, an error; one for a blob still at its
  record path at the tip is waiver_at_tip, an error that waives nothing (delete
  a forged record, then waive it).

sharding a CI matrix:
  N jobs that run the same command with --shard 1/N ... --shard N/N on the same
  commit replay every record blob exactly once between them.

exit codes:
  0  every record replays byte for byte at its declared commit (or none found,
     a repository without commits included)
  1  at least one record drifted or could not be replayed (its error code is in
     the table: commit_missing, commit_unreachable, record_misplaced, ...), or a
     waiver is unused (waiver_unused) or names a record at the tip (waiver_at_tip)
  2  bad usage (range, --paths, --jobs, --shard), not a repository, or a
     malformed waiver file (waivers_malformed)
  3  history cannot be walked: object_missing, a partial clone without its
     trees (--filter=tree:0); clone without --filter

errors carry a stable code; with --json they are printed on stdout as
{"error": {"code": ..., "message": ...}}."""


# Processes of one machine: more than this is a typo, not a machine.
MAX_JOBS = 256


def _jobs(text: str) -> int | None:
    if text == "auto":
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_JOBS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither auto nor a whole number from 1 to {MAX_JOBS}"
        )
    return value


def _shard(text: str) -> tuple[int, int]:
    index, slash, count = text.partition("/")
    if slash and index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count):
        return int(index), int(count)
    raise argparse.ArgumentTypeError(f"{text!r} is not I/N with 1 <= I <= N (for example 2/4)")


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "audit",
        HELP,
        (
            "Walk the commits of REV_RANGE with pygit2, find every version of every capsule "
            "record (files matching --paths), and replay each distinct record blob once at "
            "its declared commit, as `capsule replay` does: git objects only, no checkout, no "
            "filters, no hooks, nothing from the repository run. Prints a table on stdout: "
            "result, path, the commit that introduced that version, its declared build "
            "commit, and the differing fields or the error. A record must sit at the path its "
            "own id and commit give (record_misplaced otherwise), and its declared commit "
            "must be in the history of the commit that introduced it (commit_unreachable "
            "otherwise). Progress goes to stderr when it is a terminal."
        ),
        epilog=EPILOG,
    )
    parser.add_argument("range", metavar="REV_RANGE", nargs="?", help="REV or A..B (default: HEAD)")
    parser.add_argument(
        "--paths",
        metavar="GLOB",
        nargs="+",
        action="extend",
        help=(
            f"where records live (default: {RECORDS_GLOB}); '*', '?' and '[...]' stay "
            "within one path segment, a whole '**' segment spans folders. Give REV_RANGE "
            "before --paths."
        ),
    )
    parser.add_argument(
        "--jobs",
        "-j",
        metavar="N",
        type=_jobs,
        default=None,
        help=(
            f"replay on up to N processes of this machine (1 to {MAX_JOBS}; never more than "
            "there are chunks of work), or auto (the default): one per CPU this process may "
            f"use, within its cgroup's CPU quota, for every {AUTO_ITEMS_PER_PROCESS} distinct "
            f"record blobs, at most {AUTO_MAX_PROCESSES}; --json says how many ran"
        ),
    )
    parser.add_argument(
        "--shard",
        metavar="I/N",
        type=_shard,
        help="replay only the I-th of N deterministic slices of the records found",
    )
    parser.add_argument(
        "--require-signatures",
        action="store_true",
        help=(
            "also check the .sig of every record found that is still at the range's tip "
            "against policies/allowed_signers of a trusted revision (docs/signing.md); "
            "any record not signed by a trusted signer exits 1"
        ),
    )
    parser.add_argument(
        "--signers-at",
        metavar="REV",
        help=(
            "the trusted revision to read the allowed signers from (default: A of A..B, "
            "else the tip); never the commits being audited"
        ),
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


class Progress:
    """``done/total, rate, ETA`` on one rewritten line of a terminal; silent when
    the stream is not a terminal (a CI log, a pipe)."""

    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        every: float = 0.1,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.clock = clock
        self.every = every
        self.start = clock()
        self._shown = float("-inf")
        self._done = 0
        self.total = 0

    @property
    def enabled(self) -> bool:
        return self.tty and self.total > 0

    def line(self, done: int) -> str:
        elapsed = max(self.clock() - self.start, 1e-9)
        rate = done / elapsed
        if done and done < self.total:
            left = round((self.total - done) / rate)
            eta = f"ETA {left // 60}:{left % 60:02d}"
        else:
            eta = "ETA -:--" if done < self.total else "done"
        return f"audit: {done}/{self.total} replays  {rate:,.1f}/s  {eta}"

    def update(self, done: int, total: int) -> None:
        """The callback ``audit`` is given: ``done`` of ``total`` blobs judged."""
        self._done, self.total = done, total
        if not self.enabled:
            return
        now = self.clock()
        if now - self._shown < self.every and done < self.total:
            return
        self._shown = now
        self.stream.write(f"\r\x1b[K{self.line(done)}")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            self.stream.write(f"\r\x1b[K{self.line(self._done)}\n")
            self.stream.flush()


def run(args: argparse.Namespace) -> int:
    from governance.commands._secrets import unscanned_line  # noqa: PLC0415 (--help imports the command alone)
    from governance.core.repository import open_repository  # noqa: PLC0415 (defers pygit2)
    from governance.history.audit import audit  # noqa: PLC0415 (defers pygit2, PyYAML, json)
    from governance.history.walk import limit_git_memory  # noqa: PLC0415 (defers pygit2)

    # Before the repository is opened: libgit2's cache and pack windows are bounded.
    limit_git_memory()
    repo = open_repository()
    if args.require_signatures:
        from governance.history.signatures import ssh_keygen  # noqa: PLC0415 (defers tempfile, subprocess)

        ssh_keygen()  # ssh_keygen_missing before any work
    elif args.signers_at is not None:
        raise UsageError("--signers-at goes with --require-signatures", code=USAGE)
    progress = Progress()
    try:
        report = audit(
            repo,
            args.range,
            paths=args.paths or [RECORDS_GLOB],
            jobs=args.jobs,
            shard_of=args.shard or (1, 1),
            progress=progress.update,
        )
    finally:
        progress.finish()
    where = report.range
    if where.named:
        err(f"capsule: range {where.spec}: " + ", ".join(end.shown() for end in where.ends))
    signatures = None
    if args.require_signatures:
        from governance.history.signed_audit import audit_signatures  # noqa: PLC0415 (defers pygit2, tempfile, subprocess)

        found = [(row.path, row.blob_id, row.declared) for row in report.rows]
        signatures = audit_signatures(
            repo, where, found, signers_at=args.signers_at, paths=report.paths
        )
    if args.json:
        document = report.to_json()
        if signatures is not None:
            document["signatures"] = signatures.to_json()
            document["ok"] = report.ok and signatures.ok
        print_json(document)
    else:
        _print_table(report)
        if signatures is not None:
            _print_signatures(signatures)
    if where.tip is None:
        err("capsule: no commits, no records: HEAD has no commits yet")
        return 0
    scan = report.secret_scan
    if scan is not None and not scan["scanned"] and report.rows:
        err(unscanned_line("capsule", "the records were", scan["unavailable"]))
    index, count = report.shard
    counts = report.counts
    scope = f" (shard {index}/{count} of {report.blobs_in_range} record blobs)" if count > 1 else ""
    err(
        f"capsule: audited {plural(counts['records'], 'record version')} "
        f"({plural(counts['blobs'], 'distinct blob')}) in {plural(report.commits, 'commit')} of "
        f"{where.spec} at {where.tip[:12]}{scope}: "
        f"{counts['identical']} identical, {counts['drift']} drift, {counts['error']} error"
        + (f", {counts['waived']} waived" if counts["waived"] else "")
        + (
            f", {plural(counts['waivers_unused'], 'unused waiver')}"
            if counts["waivers_unused"]
            else ""
        )
        + (
            f", {plural(counts['waivers_at_tip'], 'waiver')} at the tip"
            if counts["waivers_at_tip"]
            else ""
        )
    )
    if signatures is not None:
        shown = ", ".join(f"{n} {status}" for status, n in signatures.counts().items()) or "none"
        trusted = signatures.trusted[:12] if signatures.trusted else "-"
        err(
            f"capsule: signatures of the {plural(len(signatures.rows), 'record')} at the tip, "
            f"signers trusted at {trusted}: {shown}"
        )
        return 0 if report.ok and signatures.ok else 1
    return 0 if report.ok else 1


def _print_signatures(report: SignatureReport) -> None:
    lines = [("SIGNATURE", "PATH", "SIGNED IN", "DETAIL")]
    for row in report.rows:
        detail = f"by {row.principal}" if row.status == "signed" else row.message
        introduced = row.introduced[:12] if row.introduced else "-"
        lines.append((row.status, printable(row.path), introduced, printable(detail)))
    widths = [max(len(line[column]) for line in lines) for column in range(3)]
    out()
    for line in lines:
        cells = [cell.ljust(width) for cell, width in zip(line[:3], widths, strict=True)]
        out("  ".join([*cells, line[3]]).rstrip())


def _detail(row: Row) -> str:
    from governance.history.audit import WAIVED  # noqa: PLC0415 (defers pygit2, PyYAML, json)
    from governance.history.record_rules import DRIFT, ERROR  # noqa: PLC0415 (defers pygit2)

    if row.result == DRIFT:
        return "differs in " + ", ".join(d.path for d in row.differences)
    if row.result == ERROR:
        # The first line only: an over-budget message goes on to list every part.
        return f"{row.code}: {row.message.splitlines()[0] if row.message else ''}"
    if row.result == WAIVED:
        return f"{row.code}: waived: {row.waiver}"
    return ""


def _print_table(report: AuditReport) -> None:
    from governance.history.record_rules import ERROR  # noqa: PLC0415 (defers pygit2)
    from governance.history.waivers import WAIVERS_PATH  # noqa: PLC0415 (defers pygit2, PyYAML)

    lines = [("RESULT", "PATH", "INTRODUCED", "BUILT AT", "DETAIL")]
    for row in report.rows:
        declared = row.declared[:12] if row.declared else "-"
        # Every cell printable before the widths are measured: a record's path
        # is repository text, and may hold escape codes.
        lines.append(
            (
                row.result,
                printable(row.path),
                row.introduced[:12],
                declared,
                printable(_detail(row)),
            )
        )
    for use in report.unused_waivers:
        waiver = use.waiver
        at = f" at {waiver.path}" if waiver.path is not None else ""
        detail = (
            f"{use.code}: waiver {waiver.index} (blob {waiver.blob[:12]}{at}) matches no record "
            f"version of {report.range.spec}"
            + (" nor of the history before it" if report.range.hidden else "")
            + ": remove it, or correct its blob id"
        )
        lines.append((ERROR, WAIVERS_PATH, "-", "-", printable(detail)))
    for use in report.refused_waivers:
        waiver = use.waiver
        at = f" at {waiver.path}" if waiver.path is not None else ""
        detail = (
            f"{use.code}: waiver {waiver.index} (blob {waiver.blob[:12]}{at}) names a record "
            f"still at {report.range.tip[:12] if report.range.tip else 'the tip'}: it waives "
            "nothing; delete the forged record, not excuse it"
        )
        lines.append((ERROR, WAIVERS_PATH, "-", "-", printable(detail)))
    widths = [max(len(line[column]) for line in lines) for column in range(4)]
    for line in lines:
        cells = [cell.ljust(width) for cell, width in zip(line[:4], widths, strict=True)]
        out("  ".join([*cells, line[4]]).rstrip())
