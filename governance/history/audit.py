"""Audit: find every capsule record in a range of history and replay each
distinct record blob once at its declared commit.

History is walked oldest first with pygit2. At each commit only what differs
from its parents is looked at: a folder whose tree id a parent also has holds
nothing new, so it is skipped whole. Nothing is kept per commit, so memory
follows the number of record versions found, not the length of history.

Like replay, an audit reads git objects only: no checkout, no working tree,
no filters, no hooks, and no file of any commit is imported or run.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import pygit2

from governance.core import canonical
from governance.core.cache import BlobCache
from governance.core.capsule import SCHEMA_V1
from governance.core.snapshot import MODE_EXEC, MODE_FILE, MODE_TREE, Snapshot, resolve_commit
from governance.errors import CapsuleError, SourceError, UsageError
from governance.history.globs import PathGlobs, State
from governance.history.record_check import expected_path
from governance.history.replay import Difference

_FULL_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")

# A record larger than this is refused unread, ``record_too_large``. capsule/1
# counts the whole file against the budget, ceil(bytes / 3) estimated tokens
# within the hard limit less the reserve: under the default policy (16,000 and
# 1,500) a record is at most 43,500 bytes. 16 MiB is over 5.5 million estimated
# tokens, some 385 times that and beyond any context window an agent is given,
# so no real record comes near it; refusing larger blobs before reading them
# keeps one record from costing the audit hundreds of MB (a 150 MB blob took
# 620 MB to parse).
MAX_RECORD_BYTES = 16 << 20

IDENTICAL = "identical"
DRIFT = "drift"
ERROR = "error"


def limit_git_memory() -> None:
    """Keep libgit2's process-wide memory flat over a walk through all of history.

    Its cache of parsed objects keeps every commit and tree a walk parses (up to
    256 MiB by default), and it maps pack files in windows of up to 1 GiB that
    stay mapped: both grow with the length of history. An audit never comes back
    to an old commit, and what a replay reads is cached by blob id in our own
    bounded cache, so the object cache is turned off and pack windows are small
    and few (the least recently used are unmapped).
    """
    pygit2.settings.enable_caching(False)
    pygit2.settings.mwindow_size = 1 << 20
    pygit2.settings.mwindow_mapped_limit = 8 << 20


@dataclass(frozen=True)
class Range:
    """Commits reachable from ``tip`` and not from ``hidden``; none at all when
    ``tip`` is None (HEAD of a repository without commits)."""

    spec: str
    tip: str | None
    hidden: str | None


def parse_range(repo: pygit2.Repository, spec: str | None) -> Range:
    """``REV`` (all of its history) or ``A..B`` (reachable from B, not from A), each
    side HEAD, a full commit id or a unique hex prefix, like ``--at``."""
    if spec is None:
        spec = "HEAD"
    if spec == "HEAD" and repo.head_is_unborn:
        # No commits, so no records: an empty audit, not an error.
        return Range(spec, None, None)
    if ".." in spec:
        base, _, tip = spec.partition("..")
        if not base or not tip or tip.startswith("."):
            raise UsageError(
                f"{spec!r}: a range is A..B with both ends given (HEAD, a full commit id or "
                "a unique hex prefix); A...B is refused",
                code="invalid_range",
                range=spec,
            )
        return Range(spec, str(resolve_commit(repo, tip).id), str(resolve_commit(repo, base).id))
    return Range(spec, str(resolve_commit(repo, spec).id), None)


@dataclass(frozen=True)
class Version:
    """One version of a record: a blob at a path, and the commit that introduced it."""

    path: str
    blob_id: str
    mode: int
    introduced: str


@dataclass
class Found:
    versions: list[Version] = field(default_factory=list)
    commits: int = 0


def _lookup(tree: pygit2.Tree | None, name: str) -> pygit2.Object | None:
    if tree is None:
        return None
    try:
        # Interned: pygit2 (1.21) keeps a reference to every key it is given, and
        # entry names are fresh strings; without this the walk would grow by a
        # string per lookup, for the whole history.
        return tree[sys.intern(name)]
    except KeyError:
        return None


def _candidates(
    globs: PathGlobs, tree: pygit2.Tree, parents: Sequence[pygit2.Tree | None], state: State
) -> Iterator[tuple[pygit2.Object, list[pygit2.Object | None]]]:
    """Each entry of ``tree`` that may lead to a match, with the entries of the same
    name in the parents (None where a parent has none)."""
    names = globs.literals(state)
    if names is not None:
        # Only literal names can match here: look them up, never list the folder.
        for name in sorted(names):
            entry = _lookup(tree, name)
            if entry is not None:
                yield entry, [_lookup(parent, name) for parent in parents]
        return
    # A wildcard: list the folder, and each parent's once (listing is cheap; a
    # lookup per entry per parent is not).
    olds = [{e.name: e for e in parent} if parent is not None else {} for parent in parents]
    for entry in tree:
        yield entry, [old.get(entry.name) for old in olds]


def _new_matches(
    globs: PathGlobs,
    tree: pygit2.Tree,
    parents: Sequence[pygit2.Tree | None],
    state: State,
    prefix: str,
) -> Iterator[tuple[str, pygit2.Object]]:
    """Matching entries below ``tree`` that no parent has at the same path with the
    same id (so they are new in this commit)."""
    for entry, olds in _candidates(globs, tree, parents, state):
        # Same id as in a parent: nothing below it is new. Checked before the glob,
        # which is the dearer test, since most entries are unchanged.
        if any(old is not None and old.id == entry.id for old in olds):
            continue
        assert entry.name is not None
        after = globs.step(state, entry.name)
        if not after:
            continue
        path = f"{prefix}{entry.name}"
        if entry.filemode == MODE_TREE:
            if globs.descends(after):
                assert isinstance(entry, pygit2.Tree)
                below = [old if isinstance(old, pygit2.Tree) else None for old in olds]
                yield from _new_matches(globs, entry, below, after, f"{path}/")
        elif globs.matches(after):
            yield path, entry


def _parents(repo: pygit2.Repository, commit: pygit2.Commit) -> list[pygit2.Tree | None]:
    trees: list[pygit2.Tree | None] = []
    for parent_id in commit.parent_ids:
        # The parent of a shallow clone's boundary commit is not here: compare with nothing.
        parent = repo.get(parent_id)
        trees.append(parent.tree if isinstance(parent, pygit2.Commit) else None)
    return trees


def _partial_clone_filter(repo: pygit2.Repository) -> str | None:
    """The object filter of a partial clone (``tree:0``, ``blob:none``...), ``""``
    when it is one whose filter is not named, None when it is a full clone."""
    partial, named = False, ""
    for entry in repo.config:
        name = entry.name.lower()
        if name == "extensions.partialclone":
            partial = True
        elif name.startswith("remote.") and name.endswith(".promisor"):
            partial = partial or str(entry.value).lower() in ("true", "yes", "on", "1")
        elif name.startswith("remote.") and name.endswith(".partialclonefilter"):
            named = str(entry.value)
    return named if partial or named else None


def _walk_failed(repo: pygit2.Repository, commit: pygit2.Commit, exc: pygit2.GitError) -> Exception:
    """What to raise when git fails to read the trees of ``commit``: in a partial
    clone whose trees were filtered out (``--filter=tree:0``), ``object_missing``,
    since pygit2 cannot fetch them; anything else is git's own error."""
    how = _partial_clone_filter(repo)
    if how is None:
        return exc
    return SourceError(
        f"commit {str(commit.id)[:12]}: {exc}: this is a partial clone"
        f"{f' (--filter={how})' if how else ''}, whose missing objects pygit2 cannot "
        "fetch, and the audit walks every tree of the range: clone without --filter",
        code="object_missing",
        commit=str(commit.id),
    )


def find_records(repo: pygit2.Repository, where: Range, globs: PathGlobs) -> Found:
    """Every record version the commits of ``where`` introduce, oldest first.

    A version is introduced by a commit whose tree has that blob at that path
    while none of its parents does. The first commit (in topological order,
    parents first) to introduce a version is the one reported.
    """
    found = Found()
    if where.tip is None:
        return found
    seen: set[tuple[str, str]] = set()
    walker = repo.walk(
        pygit2.Oid(hex=where.tip),
        pygit2.enums.SortMode.TOPOLOGICAL
        | pygit2.enums.SortMode.TIME
        | pygit2.enums.SortMode.REVERSE,
    )
    if where.hidden is not None:
        walker.hide(pygit2.Oid(hex=where.hidden))
    for commit in walker:
        found.commits += 1
        try:
            tree = commit.tree
            parents = _parents(repo, commit)
            if any(parent is not None and parent.id == tree.id for parent in parents):
                continue
            matches = list(_new_matches(globs, tree, parents, globs.start, ""))
        except pygit2.GitError as exc:
            raise _walk_failed(repo, commit, exc) from None
        for path, entry in matches:
            key = (path, str(entry.id))
            if key in seen:
                continue
            seen.add(key)
            found.versions.append(Version(path, str(entry.id), entry.filemode, str(commit.id)))
    return found


@dataclass(frozen=True)
class Item:
    """One unit of replay work: a distinct record blob, and the commits that
    introduced it (at one or more paths)."""

    blob_id: str
    regular: bool
    introduced: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    """What replaying one record blob gave."""

    blob_id: str
    result: str
    declared: str | None = None
    code: str | None = None
    packet_id: str | None = None  # once the record passed its pre-checks
    message: str = ""
    differences: tuple[Difference, ...] = ()
    unreachable: tuple[str, ...] = ()  # introducing commits the declared commit is not under


def _regular(mode: int) -> bool:
    return mode in (MODE_FILE, MODE_EXEC)


def work_items(versions: Sequence[Version]) -> list[Item]:
    """Distinct blobs in the order they were first found."""
    introduced: dict[tuple[str, bool], list[str]] = {}
    for version in versions:
        key = (version.blob_id, _regular(version.mode))
        commits = introduced.setdefault(key, [])
        if version.introduced not in commits:
            commits.append(version.introduced)
    return [Item(blob, regular, tuple(commits)) for (blob, regular), commits in introduced.items()]


def shard(items: Sequence[Item], index: int, count: int) -> list[Item]:
    """The ``index``-th (1-based) of ``count`` contiguous, near-equal slices. The
    slices of 1..count cover every item exactly once, whatever the total."""
    total = len(items)
    return list(items[(index - 1) * total // count : index * total // count])


class Replayer:
    """Replays record blobs of one repository, sharing a cache across them."""

    def __init__(self, repo: pygit2.Repository, cache: BlobCache | None = None) -> None:
        self.repo = repo
        self.cache = cache if cache is not None else BlobCache()

    def replay(self, item: Item) -> Outcome:
        """The outcome of one record blob. Whatever git says while replaying it (a
        corrupt object, an id this repository cannot hold) is an error of that
        record, ``git_error``, never the end of the audit."""
        try:
            return self._replay(item)
        except pygit2.GitError as exc:
            return Outcome(item.blob_id, ERROR, code="git_error", message=f"git: {exc}")

    def _replay(self, item: Item) -> Outcome:
        from governance.core.reader import read_parsed
        from governance.history.replay import declared_commit, rebuild_failed, replay_capsule

        if not item.regular:
            return Outcome(
                item.blob_id,
                ERROR,
                code="record_not_file",
                message="the record path is a symbolic link or a submodule, not a file",
            )
        oid = pygit2.Oid(hex=item.blob_id)
        try:
            # The size from the object's header: a huge blob is never inflated.
            _, size = self.repo.odb.read_header(oid)
        except KeyError:
            # A partial (blobless) clone: the tree names the record, the blob is not here.
            return Outcome(
                item.blob_id,
                ERROR,
                code="record_unreadable",
                message="the record's blob is not in this repository (a partial clone?)",
            )
        if size > MAX_RECORD_BYTES:
            return Outcome(
                item.blob_id,
                ERROR,
                code="record_too_large",
                message=(
                    f"the record is {size:,} bytes; records over {MAX_RECORD_BYTES >> 20} MiB "
                    "are refused unread (that is over 5.5 million estimated tokens: no capsule "
                    "given to an agent is that large)"
                ),
            )
        blob = self.repo[oid]
        assert isinstance(blob, pygit2.Blob)
        data = blob.data
        del blob
        # Parsed once, here: for the shortcut and, if it does not apply, the pre-checks.
        try:
            document = canonical.loads(data, what="capsule")
        except CapsuleError as exc:
            return Outcome(item.blob_id, ERROR, code=exc.code, message=exc.message)
        shortcut = self._rebuilds_identically(data, document)
        if shortcut is not None:
            declared, packet_id = shortcut
            return Outcome(
                item.blob_id,
                IDENTICAL,
                declared,
                packet_id=packet_id,
                unreachable=self._unreachable(item, declared),
            )
        # Anything else takes exactly the path of `capsule replay`: the pre-checks
        # first (their verdict comes before any other), then the replay.
        try:
            capsule = read_parsed(data, document)
        except CapsuleError as exc:
            return Outcome(item.blob_id, ERROR, code=exc.code, message=exc.message)
        declared, packet_id = capsule.commit, str(capsule.document["id"])
        try:
            declared_commit(self.repo, declared)
        except CapsuleError as exc:
            return Outcome(item.blob_id, ERROR, declared, exc.code, packet_id, exc.message)
        try:
            replayed = replay_capsule(self.repo, capsule, cache=self.cache)
        except CapsuleError as exc:
            failed = rebuild_failed(exc, declared)
            return Outcome(item.blob_id, ERROR, declared, failed.code, packet_id, failed.message)
        unreachable = self._unreachable(item, declared)
        if replayed.identical:
            return Outcome(
                item.blob_id, IDENTICAL, declared, packet_id=packet_id, unreachable=unreachable
            )
        return Outcome(
            item.blob_id,
            DRIFT,
            declared,
            code="replay_differs",
            packet_id=packet_id,
            message=", ".join(d.path for d in replayed.differences),
            differences=replayed.differences,
            unreachable=unreachable,
        )

    def _rebuilds_identically(self, data: bytes, document: Any) -> tuple[str, str] | None:
        """The declared commit and the packet id when ``data`` is byte for byte
        what the trusted capsule/1 builder makes from that commit; None otherwise.

        Such a record passes every pre-check by construction (the builder only
        emits capsules the reader accepts, and these are its bytes), so for it
        the pre-checks can be skipped: they cost as much as the rebuild itself.
        Only the two fields the rebuild needs are read first, and checked.
        """
        from governance.core.builder import build_capsule
        from governance.history.replay import declared_commit

        if not isinstance(document, dict) or document.get("schema") != SCHEMA_V1:
            return None
        commit, packet = document.get("commit"), document.get("packet")
        if not (isinstance(commit, str) and _FULL_ID.fullmatch(commit)):
            return None
        if not (isinstance(packet, dict) and isinstance(packet.get("path"), str)):
            return None
        try:
            # Replay's own lookup: an id this repository's object format cannot hold
            # (64 hex in a SHA-1 repository) is a missing commit too.
            found = declared_commit(self.repo, commit)
        except CapsuleError:
            return None
        snapshot = Snapshot(repo=self.repo, tree=found.tree, commit_id=commit, cache=self.cache)
        try:
            built = build_capsule(snapshot, packet["path"])
        except CapsuleError:
            return None
        return (commit, built.packet.id) if built.data == data else None

    def _unreachable(self, item: Item, declared: str) -> tuple[str, ...]:
        # The declared commit must be in the record's own history: a record whose
        # commit only survives outside it (a rebased or squashed branch) replays here
        # but not in a fresh clone, once that commit is gone.
        return tuple(
            commit
            for commit in item.introduced
            if commit != declared and not self.repo.descendant_of(commit, declared)
        )


# One Replayer (repository and cache) per worker process, set by the pool's initializer.
_WORKER: dict[str, Replayer] = {}


def _start_worker(path: str) -> None:
    limit_git_memory()
    _WORKER["replayer"] = Replayer(pygit2.Repository(path))


def _replay_chunk(items: Sequence[Item]) -> list[Outcome]:
    replayer = _WORKER["replayer"]
    return [replayer.replay(item) for item in items]


def _chunks(items: Sequence[Item], jobs: int) -> list[Sequence[Item]]:
    # Contiguous chunks keep records that share sources on one worker (and in its
    # cache); several chunks per worker keep the workers evenly busy.
    size = max(1, min(64, len(items) // (jobs * 4)))
    return [items[start : start + size] for start in range(0, len(items), size)]


def pool_size(jobs: int, items: Sequence[Item]) -> int:
    """Processes to start for ``jobs``: never more than there are chunks of work
    (a fork that would get no chunk costs start-up and memory for nothing)."""
    return max(1, min(jobs, len(_chunks(items, jobs))))


def replay_items(
    repo: pygit2.Repository,
    items: Sequence[Item],
    *,
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
) -> list[Outcome]:
    """An outcome per item, in the items' order, on ``jobs`` processes."""
    if jobs <= 1 or len(items) <= 1:
        replayer = Replayer(repo)
        outcomes = []
        for item in items:
            outcomes.append(replayer.replay(item))
            if progress is not None:
                progress(len(outcomes))
        return outcomes

    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # fork: workers start at once, without importing anything again. Elsewhere
    # spawn, which imports governance afresh in every worker.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    chunks = _chunks(items, jobs)
    results: list[list[Outcome]] = [[] for _ in chunks]
    done = 0
    with ProcessPoolExecutor(
        max_workers=pool_size(jobs, items),
        mp_context=multiprocessing.get_context(method),
        initializer=_start_worker,
        initargs=(repo.path,),
    ) as pool:
        futures = {pool.submit(_replay_chunk, chunk): index for index, chunk in enumerate(chunks)}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            done += len(results[futures[future]])
            if progress is not None:
                progress(done)
    return [outcome for chunk in results for outcome in chunk]


@dataclass(frozen=True)
class Row:
    """A line of the audit table: one record version and its result."""

    path: str
    blob_id: str
    introduced: str
    declared: str | None
    result: str
    code: str | None
    message: str
    differences: tuple[Difference, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "blob": self.blob_id,
            "introduced": self.introduced,
            "commit": self.declared,
            "result": self.result,
            "code": self.code,
            "message": self.message,
            "differences": [d.to_json() for d in self.differences],
        }


def _misplaced(version: Version, outcome: Outcome) -> str | None:
    """Why ``version`` is not at its record's path; None when it is, or when its
    id and commit are not known (the record failed its pre-checks)."""
    if outcome.packet_id is None or outcome.declared is None:
        return None
    expected = expected_path(outcome.packet_id, outcome.declared)
    if version.path == expected:
        return None
    return (
        f"a record of {outcome.packet_id} built at {outcome.declared[:12]} belongs at "
        f"{expected}, not at this path"
    )


def rows(
    versions: Sequence[Version], items: Sequence[Item], outcomes: Sequence[Outcome]
) -> list[Row]:
    """The table, in the order versions were found; versions whose item is not
    among ``items`` (another shard's) are left out.

    Two checks belong to a version, not to its blob, so they are made here, in
    the records hook's order: a record that passed its pre-checks must sit at
    the path its own id and commit give (``record_misplaced``: a copy or a
    rename is not evidence where it is), then its declared commit must be in
    the history of the commit that introduced it (``commit_unreachable``).
    """
    by_item = {
        (item.blob_id, item.regular): outcome for item, outcome in zip(items, outcomes, strict=True)
    }
    out = []
    for version in versions:
        outcome = by_item.get((version.blob_id, _regular(version.mode)))
        if outcome is None:
            continue
        result, code, message = outcome.result, outcome.code, outcome.message
        differences = outcome.differences
        misplaced = _misplaced(version, outcome)
        if misplaced is not None:
            result, code, message, differences = ERROR, "record_misplaced", misplaced, ()
        elif result == IDENTICAL and version.introduced in outcome.unreachable:
            result, code = ERROR, "commit_unreachable"
            message = (
                f"declared commit {outcome.declared} is not in the history of "
                f"{version.introduced[:12]}, which introduced this record"
            )
        out.append(
            Row(
                version.path,
                version.blob_id,
                version.introduced,
                outcome.declared,
                result,
                code,
                message,
                differences,
            )
        )
    return out


class Progress:
    """``done/total, rate, ETA`` on one rewritten line of a terminal; silent when
    the stream is not a terminal (a CI log, a pipe)."""

    def __init__(
        self,
        total: int,
        stream: IO[str] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        every: float = 0.1,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() and total > 0
        self.total = total
        self.clock = clock
        self.every = every
        self.start = clock()
        self._shown = float("-inf")
        self._done = 0

    def line(self, done: int) -> str:
        elapsed = max(self.clock() - self.start, 1e-9)
        rate = done / elapsed
        if done and done < self.total:
            left = round((self.total - done) / rate)
            eta = f"ETA {left // 60}:{left % 60:02d}"
        else:
            eta = "ETA -:--" if done < self.total else "done"
        return f"audit: {done}/{self.total} replays  {rate:,.1f}/s  {eta}"

    def update(self, done: int) -> None:
        self._done = done
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
