"""The replay pool: each distinct record blob judged once, on one process or
several, sharing a cache of blobs and parses within each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pygit2

from governance.core.cache import BlobCache
from governance.core.repository import Source, commit_where
from governance.core.snapshot import MODE_EXEC, MODE_FILE
from governance.history.cpus import AUTO_ITEMS_PER_PROCESS, AUTO_MAX_PROCESSES
from governance.history.record_rules import BlobOutcome, judge_blob, read_record_blob
from governance.history.walk import Version, limit_git_memory


@dataclass(frozen=True)
class Item:
    """One unit of replay work: a distinct record blob, and the commits that
    introduced it (at one or more paths); ``path`` and ``mode`` are those of
    the first version found."""

    blob_id: str
    regular: bool
    introduced: tuple[str, ...]
    path: str = ""
    mode: int = MODE_FILE


def regular(mode: int) -> bool:
    return mode in (MODE_FILE, MODE_EXEC)


def work_items(versions: Sequence[Version]) -> list[Item]:
    """Distinct blobs in the order they were first found."""
    introduced: dict[tuple[str, bool], list[str]] = {}
    first: dict[tuple[str, bool], Version] = {}
    for version in versions:
        key = (version.blob_id, regular(version.mode))
        first.setdefault(key, version)
        commits = introduced.setdefault(key, [])
        if version.introduced not in commits:
            commits.append(version.introduced)
    return [
        Item(blob, is_file, tuple(commits), first[blob, is_file].path, first[blob, is_file].mode)
        for (blob, is_file), commits in introduced.items()
    ]


def shard(items: Sequence[Item], index: int, count: int) -> list[Item]:
    """The ``index``-th (1-based) of ``count`` contiguous, near-equal slices. The
    slices of 1..count cover every item exactly once, whatever the total."""
    total = len(items)
    return list(items[(index - 1) * total // count : index * total // count])


class Replayer:
    """Judges record blobs of one repository, sharing a cache across them."""

    def __init__(self, repo: pygit2.Repository, cache: BlobCache | None = None) -> None:
        self.repo = repo
        self.cache = cache if cache is not None else BlobCache()

    def replay(self, item: Item) -> BlobOutcome:
        def read() -> bytes:
            # The blob as found in the tree of the first commit that introduced
            # it: the walk gave its id, path and mode there.
            source = Source(item.path, item.blob_id, item.mode)
            return read_record_blob(self.repo, source, commit_where(item.introduced[0]))

        return judge_blob(self.repo, read, cache=self.cache, scan=True)


# The Replayer of a worker process: set in this process before a fork pool
# starts (each fork inherits its cache), and opened afresh in each worker.
_WORKER: dict[str, Replayer] = {}


def _start_worker(path: str) -> None:
    from multiprocessing.reduction import ForkingPickler  # noqa: PLC0415 (in a worker only)

    limit_git_memory()
    # pickle finds a class by its module, and pygit2's errors name one that
    # cannot be imported (_pygit2): a worker's GitError is sent back as its
    # arguments, to be made again here, so it stays git's refusal (git_error).
    ForkingPickler.register(pygit2.GitError, _reduce_git_error)
    inherited = _WORKER.get("replayer")
    cache = inherited.cache if inherited is not None else None
    _WORKER["replayer"] = Replayer(pygit2.Repository(path), cache)


def _replay_chunk(items: Sequence[Item]) -> list[BlobOutcome]:
    replayer = _WORKER["replayer"]
    return [replayer.replay(item) for item in items]


def _git_error(*args: object) -> pygit2.GitError:
    return pygit2.GitError(*args)


def _reduce_git_error(
    error: pygit2.GitError,
) -> tuple[Callable[..., pygit2.GitError], tuple[object, ...]]:
    return _git_error, error.args


def _chunks(items: Sequence[Item], jobs: int) -> list[Sequence[Item]]:
    # Contiguous chunks keep records that share sources on one process (and in
    # its cache); several chunks per process keep them evenly busy.
    size = max(1, min(64, len(items) // (jobs * 4)))
    return [items[start : start + size] for start in range(0, len(items), size)]


def pool_size(jobs: int, items: Sequence[Item]) -> int:
    """Processes to use for ``jobs``: never more than there are chunks of work
    (a process that would get no chunk costs start-up and memory for nothing)."""
    return max(1, min(jobs, len(_chunks(items, jobs))))


def auto_jobs(items: Sequence[Item], cpus: int) -> int:
    """The processes ``--jobs auto`` replays ``items`` on: one per ``cpus``, as
    long as each has a full share of work, and no more than
    ``AUTO_MAX_PROCESSES``; one when there is little."""
    return max(1, min(cpus, AUTO_MAX_PROCESSES, len(items) // AUTO_ITEMS_PER_PROCESS))


def replay_items(
    repo: pygit2.Repository,
    items: Sequence[Item],
    *,
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
    started: Callable[[int], None] | None = None,
) -> list[BlobOutcome]:
    """An outcome per item, in the items' order, on ``jobs`` processes;
    ``progress`` is told how many are done after each chunk (after each item
    on one process), and ``started`` how many processes replay (fewer than
    ``jobs`` where there are fewer chunks)."""
    tell = started if started is not None else (lambda _: None)
    if jobs <= 1 or len(items) <= 1:
        tell(1)
        replayer = Replayer(repo)
        outcomes = []
        for item in items:
            outcomes.append(replayer.replay(item))
            if progress is not None:
                progress(len(outcomes))
        return outcomes
    from governance.history.workers import can_fork, map_chunks  # noqa: PLC0415 (only for --jobs above 1)

    first: list[BlobOutcome] = []
    chunks = _chunks(items, jobs)
    if can_fork() and len(_chunks(items[1:], jobs)) >= jobs:
        # Forked workers start with everything this process has parsed: the
        # trees of the walk (core.trees), and the blobs and parses of the first
        # record (the policy, its packet), which each would otherwise parse
        # again. Not where it would leave a worker without a chunk.
        replayer = _WORKER["replayer"] = Replayer(repo)
        first, chunks = [replayer.replay(items[0])], _chunks(items[1:], jobs)
    done = len(first)
    if progress is not None and first:
        progress(done)

    def chunk_done(index: int) -> None:
        nonlocal done
        done += len(chunks[index])
        if progress is not None:
            progress(done)

    tell(max(1, min(jobs, len(chunks))))
    try:
        replayed = map_chunks(
            _replay_chunk, chunks, jobs=jobs, initializer=_start_worker,
            initargs=(repo.path,), done=chunk_done,
        )  # fmt: skip
    finally:
        _WORKER.clear()
    return first + [outcome for chunk in replayed for outcome in chunk]
