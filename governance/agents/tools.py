"""The MCP server's tools as plain library calls on one repository fixed at
start: each returns a JSON-ready dict or raises a coded CapsuleError."""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from dataclasses import dataclass, field
from typing import Any

import pygit2

from governance import errors
from governance.agents.tokens import exact_count
from governance.core.cache import BlobCache
from governance.core.capsule import packet_path
from governance.core.hashing import sha256_hex
from governance.core.locator import check_path
from governance.core.paths import repo_relative
from governance.core.reader import CapsuleFile, read_capsule
from governance.core.repository import open_repository
from governance.core.snapshot import Snapshot
from governance.core.verify import UNCHANGED, verify_capsule
from governance.errors import CapsuleError, MalformedInput, SourceError, UsageError
from governance.guards.check import check_packets, exit_code, find_packets
from governance.guards.dependencies import Dependency
from governance.history.records import RECORDS_FOLDER, RECORDS_GLOB, write_record

# A capsule is bounded by its policy's hard limit; no tool reads more than this
# of a file or an argument before it refuses.
MAX_INPUT_BYTES = 16 << 20


@dataclass
class Workspace:
    """The repository every tool reads; writing records only when enabled."""

    repo: pygit2.Repository
    write_enabled: bool = False
    cache: BlobCache = field(default_factory=BlobCache)

    @classmethod
    def open(cls, path: str | None = None, *, write_enabled: bool = False) -> Workspace:
        return cls(repo=open_repository(path), write_enabled=write_enabled)

    @property
    def root(self) -> str:
        """The work tree's root (the git dir of a bare repository)."""
        return os.path.realpath(self.repo.workdir or self.repo.path)

    def relative(self, given: str) -> str:
        """A path a client gave -> its repository path, by the CLI's rules: an
        absolute path must lie inside the repository (path_outside_repository),
        and the result must be a plain repository path (unsafe_path)."""
        if not isinstance(given, str):
            raise UsageError("a path must be a string", code=errors.USAGE)
        path = repo_relative(self.repo, given) if os.path.isabs(given) else given
        check_path(path)
        return path

    def read_file(self, given: str) -> tuple[str, bytes]:
        """The bytes of a file of the work tree, never through a symbolic link
        and never more than MAX_INPUT_BYTES."""
        path = self.relative(given)
        if self.repo.workdir is None:
            raise UsageError(
                f"{path}: the repository is bare: pass the capsule JSON instead",
                code=errors.NO_WORKING_TREE,
            )
        # One component at a time from the root's descriptor, never following a
        # link and never blocking on a FIFO: what is checked is what is read.
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            parts = path.split("/")
            for depth, part in enumerate(parts):
                last = depth == len(parts) - 1
                flags = os.O_RDONLY | os.O_NOFOLLOW | (os.O_NONBLOCK if last else os.O_DIRECTORY)
                try:
                    opened = os.open(part, flags, dir_fd=fd)
                except OSError as exc:
                    raise self._unreadable(path, "/".join(parts[: depth + 1]), exc) from None
                os.close(fd)
                fd = opened
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise SourceError(
                    f"{path}: not a regular file", code=errors.SOURCE_NOT_FILE, path=path
                )
            if info.st_size > MAX_INPUT_BYTES:
                raise _too_large(path, info.st_size)
            chunks = []
            size = 0
            while size <= MAX_INPUT_BYTES:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        finally:
            os.close(fd)
        if size > MAX_INPUT_BYTES:
            raise _too_large(path, size)
        return path, b"".join(chunks)

    def _unreadable(self, path: str, walked: str, exc: OSError) -> CapsuleError:
        try:
            link = stat.S_ISLNK(os.lstat(os.path.join(self.root, walked)).st_mode)
        except OSError:
            link = False
        if link:
            return SourceError(
                f"{path}: {walked} is a symbolic link; files are never read through links",
                code=errors.SOURCE_SYMLINK,
                path=path,
            )
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return SourceError(
                f"{path}: no such file in the work tree", code=errors.SOURCE_MISSING, path=path
            )
        return CapsuleError(f"{path}: cannot read: {exc.strerror}", code=errors.IO_ERROR)


def _too_large(what: str, size: int) -> MalformedInput:
    return MalformedInput(
        f"{what}: {size} bytes is over the {MAX_INPUT_BYTES} bytes a tool reads",
        code=errors.INPUT_TOO_LARGE,
    )


def _capsule_from(ws: Workspace, capsule: str | None, path: str | None) -> tuple[str, CapsuleFile]:
    """(where it came from, the capsule after the reader's pre-checks)."""
    if (capsule is None) == (path is None):
        raise UsageError("give exactly one of capsule (its JSON text) or path", code=errors.USAGE)
    if capsule is not None:
        data = capsule.encode("utf-8", "surrogatepass")
        if len(data) > MAX_INPUT_BYTES:
            raise _too_large("capsule", len(data))
        return "(argument)", read_capsule(data)
    assert path is not None
    shown, data = ws.read_file(path)
    return shown, read_capsule(data)


def _identity(where: str, capsule: CapsuleFile) -> dict[str, Any]:
    return {
        "path": where,
        "sha256": capsule.sha256,
        "id": capsule.document["id"],
        "commit": capsule.commit,
    }


def _signature(ws: Workspace, read: CapsuleFile) -> dict[str, Any] | None:
    """The signature status of these bytes as the record at HEAD; None when
    HEAD has no policies/allowed_signers."""
    from governance.history.record_signature import record_signature  # noqa: PLC0415 (defers subprocess)

    found = record_signature(ws.repo, read.data, str(read.document["id"]), read.commit)
    return None if found is None else found.to_json()


def list_packets(ws: Workspace) -> dict[str, Any]:
    """Every packets/<ID>/packet.yml committed at HEAD."""
    snapshot = Snapshot.at(ws.repo, "HEAD", check_worktree=False)
    packets = [
        {"id": posixpath.basename(posixpath.dirname(path)), "path": path}
        for path in find_packets(snapshot.tree)
    ]
    return {"at": snapshot.commit_id, "packets": packets}


def packet_file(ws: Workspace, packet: str, *, id_only: bool = False) -> str:
    """The repository path of a packet given by its id (``GC-003``, as
    list_packets names it) or by its path (unless ``id_only``); an id is
    checked by the packet schema's rule (invalid_packet_id), a path by the
    path rules."""
    if "/" in packet and not id_only:
        return ws.relative(packet)
    from governance.authoring.new import check_id  # noqa: PLC0415 (defers PyYAML)

    return packet_path(check_id(packet))


def build(
    ws: Workspace,
    packet: str,
    at: str = "HEAD",
    record: bool = False,
    *,
    render: bool = False,
    exact_tokens: bool = False,
) -> dict[str, Any]:
    """Build ``packet`` (an id or a path) at ``at`` as ``capsule build`` does;
    with ``record`` (only when writing is enabled) write it as the packet's
    record. The exact token count only when asked for: it loads a tokenizer."""
    from governance.core.builder import build_capsule  # noqa: PLC0415 (defers PyYAML)

    if record and not ws.write_enabled:
        raise UsageError(
            "writing a record is disabled: start the server with --enable-write",
            code=errors.WRITE_DISABLED,
        )
    path = packet_file(ws, packet)
    snapshot = Snapshot.at(ws.repo, at)
    snapshot.cache = ws.cache
    built = build_capsule(snapshot, path)
    result: dict[str, Any] = {
        **built.summary(),
        "exact_tokens": exact_count(built.data) if exact_tokens else None,
        "capsule_json": built.data.decode("utf-8"),
        "text": "markdown" if render else "json",
        "record": None,
    }
    if record:
        written = write_record(ws.repo, path, built.document["commit"], built.data)
        result["record"] = {"path": written.path, "status": written.status}
    return result


def verify(
    ws: Workspace, capsule: str | None = None, path: str | None = None, at: str = "HEAD"
) -> dict[str, Any]:
    """Each part of a capsule (its JSON text, or a file of the work tree)
    against the committed tree at ``at``."""
    where, read = _capsule_from(ws, capsule, path)
    snapshot = Snapshot.at(ws.repo, at, check_worktree=False)
    results = verify_capsule(read, snapshot)
    return {
        "capsule": _identity(where, read),
        "at": snapshot.commit_id,
        "ok": all(r.status == UNCHANGED for r in results),
        "parts": [r.to_json() for r in results],
        "signature": _signature(ws, read),
    }


def status(ws: Workspace, all: bool = False) -> dict[str, Any]:
    """``capsule status --json``: the records committed at HEAD, the newest of
    each packet (every one with ``all``), each verified against HEAD."""
    from governance.history.status import status as records_status  # noqa: PLC0415 (defers PyYAML)

    return records_status(ws.repo, all_records=all, cache=ws.cache).to_json()


def replay(ws: Workspace, capsule: str | None = None, path: str | None = None) -> dict[str, Any]:
    """Rebuild a capsule (its JSON text, or a record file) at its declared
    commit and compare the bytes."""
    from governance.history.replay import declared_commit, rebuild_failed, replay_capsule  # noqa: PLC0415 (defers PyYAML)

    where, read = _capsule_from(ws, capsule, path)
    declared_commit(ws.repo, read.commit)
    try:
        result = replay_capsule(ws.repo, read, cache=ws.cache)
    except CapsuleError as exc:
        raise rebuild_failed(exc, read.commit) from None
    return {
        "capsule": _identity(where, read),
        "identical": result.identical,
        "rebuilt_sha256": sha256_hex(result.rebuilt),
        "differences": [d.to_json() for d in result.differences],
        "signature": _signature(ws, read),
    }


def outline(ws: Workspace, path: str, at: str = "HEAD") -> dict[str, Any]:
    """Every heading of a tracked Markdown file at ``at``, with the locator
    naming it, its lines and its estimated cost."""
    from governance.authoring.outline import outline as outline_of  # noqa: PLC0415 (defers PyYAML)

    snapshot = Snapshot.at(ws.repo, at)
    snapshot.cache = ws.cache
    return outline_of(snapshot, ws.relative(path)).to_json()


def suggest(
    ws: Workspace,
    goal: str,
    *,
    at: str = "HEAD",
    paths: list[str] | None = None,
    max_reads: int | None = None,
    budget: int | None = None,
) -> dict[str, Any]:
    """``capsule suggest --json``: proposed required_reads for ``goal`` at ``at``,
    with their coverage of the goal's facets and what was left out."""
    from governance.authoring.suggest import Options  # noqa: PLC0415 (defers PyYAML)
    from governance.authoring.suggest import suggest as suggest_reads  # noqa: PLC0415 (defers PyYAML)
    from governance.authoring.template import Draft  # noqa: PLC0415 (defers PyYAML)

    if budget is not None and budget < 1:
        raise UsageError("budget must be at least 1 token", code=errors.USAGE)
    options = Options(paths=tuple(paths or ()), max_reads=max_reads, budget=budget)
    snapshot = Snapshot.at(ws.repo, at, check_worktree=False)
    snapshot.cache = ws.cache
    draft = Draft.make(goal, snapshot.commit_id, target_tokens=budget)
    return suggest_reads(snapshot, draft, options)


def check(ws: Workspace, packets: list[str] | None = None, all: bool = False) -> dict[str, Any]:
    """Every reason the named packets (ids or paths), or all of them, would not
    build at HEAD."""
    if all == bool(packets):
        raise UsageError("name packets or set all, not both and not neither", code=errors.USAGE)
    snapshot = Snapshot.at(ws.repo, "HEAD")
    snapshot.cache = ws.cache
    names = (
        find_packets(snapshot.tree)
        if all
        else list(dict.fromkeys(packet_file(ws, p) for p in packets or []))
    )
    scans: dict[str, dict[str, Any] | None] = {}
    bound: dict[str, list[Dependency]] = {}
    results = check_packets(snapshot, names, scans=scans, dependencies=bound)
    failures = [f for name in names for f in results[name]]
    scanned = next((scan for scan in scans.values() if scan is not None), None)
    return {
        "at": snapshot.commit_id,
        "ok": not failures,
        "exit_code": exit_code(failures),
        "secret_scan": {k: v for k, v in scanned.items() if k != "waived"} if scanned else None,
        "packets": [
            {
                "path": name,
                "ok": not results[name],
                "failures": [f.to_json() for f in results[name]],
                "secrets_waived": (scans[name] or {}).get("waived", []),
                "dependencies": [d.to_json() for d in bound.get(name, [])],
            }
            for name in names
        ],
    }


def audit(ws: Workspace, spec: str | None = None, paths: list[str] | None = None) -> dict[str, Any]:
    """``capsule audit --json --jobs 1`` of ``spec`` (REV or A..B): every record
    version of the range replayed, waivers honoured. On this process only: a
    server's threads are not forked."""
    from governance.history.audit import audit as audit_range  # noqa: PLC0415 (defers PyYAML)

    report = audit_range(ws.repo, spec, paths=paths or [RECORDS_GLOB], jobs=1)
    return report.to_json()


_FILES = (pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE)


def committed_files(ws: Workspace) -> list[str]:
    """The committed packets, contexts and records at HEAD, sorted."""
    found: list[str] = []
    if ws.repo.head_is_unborn:
        # A repository without commits yet still gets a server, with no resources.
        return found
    snapshot = Snapshot.at(ws.repo, "HEAD", check_worktree=False)
    try:
        packets = snapshot.tree["packets"]
    except KeyError:
        return found
    if not isinstance(packets, pygit2.Tree):
        return found
    for folder in packets:
        if not isinstance(folder, pygit2.Tree):
            continue
        base = f"packets/{folder.name}"
        for entry in folder:
            if entry.name in ("packet.yml", "context.md") and entry.filemode in _FILES:
                found.append(f"{base}/{entry.name}")
            elif entry.name == RECORDS_FOLDER and isinstance(entry, pygit2.Tree):
                found += [
                    f"{base}/{RECORDS_FOLDER}/{rec.name}"
                    for rec in entry
                    if rec.filemode in _FILES and str(rec.name).endswith(".json")
                ]
    return sorted(found)


def read_committed(ws: Workspace, path: str) -> bytes:
    """A committed packet, context or record at HEAD, by the builder's rules."""
    snapshot = Snapshot.at(ws.repo, "HEAD", check_worktree=False)
    source = snapshot.source(ws.relative(path))
    blob = ws.repo[source.blob_id]
    assert isinstance(blob, pygit2.Blob)
    if blob.size > MAX_INPUT_BYTES:
        raise _too_large(path, blob.size)
    return bytes(blob.data)
