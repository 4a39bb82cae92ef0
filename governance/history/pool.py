"""The replay pool: each distinct record blob judged once, on one process or
several, sharing a cache of blobs and parses within each."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pygit2

from governance.core.cache import BlobCache
from governance.core.snapshot import MODE_EXEC, MODE_FILE, Source, commit_where
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

        return judge_blob(self.repo, read, cache=self.cache)


# One Replayer (repository and cache) per worker process, set by the pool's initializer.
_WORKER: dict[str, Replayer] = {}


def _start_worker(path: str) -> None:
    limit_git_memory()
    _WORKER["replayer"] = Replayer(pygit2.Repository(path))


def _replay_chunk(items: Sequence[Item]) -> list[BlobOutcome]:
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
) -> list[BlobOutcome]:
    """An outcome per item, in the items' order, on ``jobs`` processes;
    ``progress`` is told how many are done after each."""
    if jobs <= 1 or len(items) <= 1:
        replayer = Replayer(repo)
        outcomes = []
        for item in items:
            outcomes.append(replayer.replay(item))
            if progress is not None:
                progress(len(outcomes))
        return outcomes

    # Imported only for --jobs above 1: a one-job audit never loads the pool
    # machinery.
    import multiprocessing  # noqa: PLC0415 (defers multiprocessing)
    from concurrent.futures import ProcessPoolExecutor, as_completed  # noqa: PLC0415 (defers concurrent.futures)

    # fork: workers start at once, without importing anything again. Elsewhere
    # spawn, which imports governance afresh in every worker.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    chunks = _chunks(items, jobs)
    results: list[list[BlobOutcome]] = [[] for _ in chunks]
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
