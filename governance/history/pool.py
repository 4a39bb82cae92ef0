"""The replay pool: each distinct record blob judged once, on one process or
several, sharing a cache of blobs and parses within each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pygit2

from governance.core.cache import BlobCache
from governance.core.snapshot import MODE_EXEC, MODE_FILE, Source, commit_where
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


# One Replayer (repository and cache) per worker process, set by the pool's initializer.
_WORKER: dict[str, Replayer] = {}


def _start_worker(path: str) -> None:
    limit_git_memory()
    _WORKER["replayer"] = Replayer(pygit2.Repository(path))


def _replay_chunk(items: Sequence[Item]) -> list[BlobOutcome]:
    replayer = _WORKER["replayer"]
    return [replayer.replay(item) for item in items]


def _git_error(*args: object) -> pygit2.GitError:
    return pygit2.GitError(*args)


def _reduce_git_error(
    error: pygit2.GitError,
) -> tuple[Callable[..., pygit2.GitError], tuple[object, ...]]:
    # pickle finds a class by its module, and pygit2's errors name one that
    # cannot be imported (_pygit2): a child's GitError is sent back as its
    # arguments, to be made again here, so it stays git's refusal (git_error).
    return _git_error, error.args


def _chunks(items: Sequence[Item], jobs: int) -> list[Sequence[Item]]:
    # Contiguous chunks keep records that share sources on one process (and in
    # its cache); several chunks per process keep them evenly busy; and never
    # more chunks than a fork pool holds.
    from governance.history.forks import MAX_CHUNKS  # noqa: PLC0415 (only for --jobs above 1)

    size = max(1, min(64, len(items) // (jobs * 4)), -(-len(items) // MAX_CHUNKS))
    return [items[start : start + size] for start in range(0, len(items), size)]


def pool_size(jobs: int, items: Sequence[Item]) -> int:
    """Processes to use for ``jobs``: never more than there are chunks of work
    (a fork that would get no chunk costs start-up and memory for nothing)."""
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
    ``progress`` is told how many are done after each, and ``started`` how
    many processes replay (fewer than ``jobs`` where there are fewer chunks,
    or where no more processes can be started)."""
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
    chunks = _chunks(items, jobs)
    done = 0

    def chunk_done(index: int) -> None:
        nonlocal done
        done += len(chunks[index])
        if progress is not None:
            progress(done)

    from governance.history.forks import can_fork  # noqa: PLC0415 (only for --jobs above 1)

    size = max(1, min(jobs, len(chunks)))  # pool_size, from the chunks just made
    if can_fork():
        return _forked(repo, chunks, size, chunk_done, tell)
    tell(size)
    return _spawned(repo, chunks, size, chunk_done)


def _forked(
    repo: pygit2.Repository,
    chunks: Sequence[Sequence[Item]],
    jobs: int,
    chunk_done: Callable[[int], None],
    started: Callable[[int], None],
) -> list[BlobOutcome]:
    """The chunks on this process and ``jobs - 1`` forks of it. Each child
    replays with a repository of its own, and starts with everything this
    process has parsed: the trees of the walk (core.trees), and the blobs and
    parses of the first chunk, replayed before any fork (the policy, most
    packets), which every child would otherwise parse again. Only where there
    are more chunks than processes: with a chunk each, it would leave one of
    the ``jobs`` without a chunk."""
    from governance.history.forks import fork_map  # noqa: PLC0415 (only for --jobs above 1)

    current = [Replayer(repo)]
    warm = 1 if len(chunks) > jobs else 0
    first = [current[0].replay(item) for chunk in chunks[:warm] for item in chunk]
    if warm:
        chunk_done(0)

    def start_child() -> None:
        limit_git_memory()
        current[0] = Replayer(pygit2.Repository(repo.path), current[0].cache)

    rest = fork_map(
        chunks[warm:],
        lambda chunk: [current[0].replay(item) for item in chunk],
        jobs=jobs,
        start_child=start_child,
        progress=lambda index: chunk_done(index + warm),
        reducers={pygit2.GitError: _reduce_git_error},
        started=started,
    )
    return first + [outcome for chunk in rest for outcome in chunk]


def _spawned(
    repo: pygit2.Repository,
    chunks: Sequence[Sequence[Item]],
    jobs: int,
    chunk_done: Callable[[int], None],
) -> list[BlobOutcome]:
    """The chunks on ``jobs`` processes that each import governance afresh:
    where this process cannot fork (no ``os.fork``, or other threads alive)."""
    # Imported only here: an audit on Linux never loads the pool machinery.
    import multiprocessing  # noqa: PLC0415 (defers multiprocessing)
    from concurrent.futures import ProcessPoolExecutor, as_completed  # noqa: PLC0415 (defers concurrent.futures)
    from concurrent.futures.process import BrokenProcessPool  # noqa: PLC0415 (as above)

    from governance.history.forks import worker_lost  # noqa: PLC0415 (only for --jobs above 1)

    results: list[list[BlobOutcome]] = [[] for _ in chunks]
    left = len(chunks)
    try:
        with ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(repo.path,),
        ) as pool:
            futures = {pool.submit(_replay_chunk, c): index for index, c in enumerate(chunks)}
            try:
                for future in as_completed(futures):
                    results[futures[future]] = future.result()
                    left -= 1
                    chunk_done(futures[future])
            except BaseException:
                # Leaving at once (the caller's exception, a worker's, a ^C): the
                # chunks not begun are dropped, not replayed first by the pool's exit.
                pool.shutdown(cancel_futures=True)
                raise
    except BrokenProcessPool as exc:
        # A worker that died (killed, out of memory) or could not start (its
        # initializer failed): said as the forked pool says it, not a traceback.
        raise worker_lost(f"failed or died ({exc})", left) from exc
    return [outcome for chunk in results for outcome in chunk]
