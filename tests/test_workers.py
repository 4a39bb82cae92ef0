"""The audit's process pool (the standard library's, history/workers.py):
every result back in order, on as many processes as asked, and nothing lost
or left behind when a worker fails, is killed, or its parent is."""

from __future__ import annotations

import functools
import gc
import os
import resource
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from concurrent.futures.process import _RemoteTraceback
from pathlib import Path

import pygit2
import pytest

from governance.errors import CapsuleError, SourceError
from governance.history import pool
from governance.history.workers import can_fork, map_chunks

WAIT = 30.0  # seconds a rendezvous may take before the test says it hung
ROOT = Path(__file__).resolve().parents[1]


def _wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def _pids(path: Path) -> list[int]:
    return [int(word) for word in path.read_text().split()] if path.exists() else []


def _gone(pid: int) -> bool:
    # Exited: no such process, or a zombie its new parent has not reaped yet.
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in status


# What a worker runs: module-level, as the pool sends functions by name.
# Each chunk is (folder, number); a worker notes its pid in folder/started
# when it starts, and folder/worked on each chunk.


def note_start(folder: str) -> None:
    with open(Path(folder) / "started", "a") as handle:
        handle.write(f"{os.getpid()}\n")


def meet(chunk: tuple[str, int, int]) -> tuple[int, int]:
    """Note this process, then wait until ``count`` processes have: proof that
    that many took part. The chunk's number and this pid come back."""
    folder, number, count = chunk
    worked = Path(folder) / "worked"
    with worked.open("a") as handle:
        handle.write(f"{os.getpid()}\n")
    _wait_for(lambda: len(set(_pids(worked))) >= count, f"{count} processes")
    return number, os.getpid()


def square(chunk: tuple[str, int]) -> int:
    return chunk[1] * chunk[1]


def slow(chunk: tuple[str, int]) -> int:
    folder, number = chunk
    time.sleep(0.02)
    with open(Path(folder) / "done", "a") as handle:
        handle.write(f"{number}\n")
    return number


def raise_source_error(chunk: tuple[str, int]) -> int:
    if chunk[1] == 3:
        raise SourceError("the worker met this", code="source_missing", locator="docs/a.md")
    return chunk[1]


def raise_git_error(chunk: tuple[str, int]) -> int:
    if chunk[1] == 3:
        raise pygit2.GitError("object 0123 is corrupt")
    return chunk[1]


def die_on_three(chunk: tuple[str, int]) -> int:
    if chunk[1] == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return chunk[1]


def interrupt_parent_on_three(chunk: tuple[str, int]) -> int:
    if chunk[1] == 3:
        os.kill(os.getppid(), signal.SIGINT)
    time.sleep(0.01)
    return chunk[1]


def fail_to_start(folder: str) -> None:
    raise OSError(f"cannot open {folder}")


class Unpicklable(Exception):
    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError("not this one")


def raise_unpicklable(chunk: tuple[str, int]) -> int:
    raise Unpicklable("held a socket")


@pytest.fixture(autouse=True)
def no_threads() -> None:
    # A fork copies only the calling thread: these tests fork the test process.
    assert can_fork()


@pytest.mark.parametrize("jobs", [2, 3])
def test_every_worker_works_and_results_come_back_in_chunk_order(tmp_path: Path, jobs: int) -> None:
    chunks = [(str(tmp_path), n, jobs) for n in range(9)]
    results = map_chunks(meet, chunks, jobs=jobs)
    assert [number for number, _ in results] == list(range(9))
    workers = {pid for _, pid in results}
    assert len(workers) == jobs
    assert os.getpid() not in workers


def test_no_more_workers_than_chunks(tmp_path: Path) -> None:
    # 300 jobs for 14 records once started 300 processes.
    chunks = [(str(tmp_path), n) for n in range(2)]
    assert map_chunks(
        square, chunks, jobs=8, initializer=note_start, initargs=(str(tmp_path),)
    ) == [0, 1]
    assert len(_pids(tmp_path / "started")) == 2


def test_done_is_told_each_chunk_once(tmp_path: Path) -> None:
    told: list[int] = []
    chunks = [(str(tmp_path), n) for n in range(20)]
    assert map_chunks(square, chunks, jobs=3, done=told.append) == [n * n for n in range(20)]
    assert sorted(told) == list(range(20))


def test_the_initializer_runs_in_each_worker_before_its_chunks(tmp_path: Path) -> None:
    chunks = [(str(tmp_path), n, 2) for n in range(6)]
    results = map_chunks(meet, chunks, jobs=2, initializer=note_start, initargs=(str(tmp_path),))
    assert sorted(_pids(tmp_path / "started")) == sorted({pid for _, pid in results})


def test_an_error_raised_in_a_worker_is_raised_again_with_its_traceback(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as raised:
        map_chunks(raise_source_error, [(str(tmp_path), n) for n in range(6)], jobs=2)
    assert raised.value.code == "source_missing"
    assert raised.value.details == {"locator": "docs/a.md"}
    assert isinstance(raised.value.__cause__, _RemoteTraceback)
    assert "raise_source_error" in str(raised.value.__cause__)


def test_gits_error_in_a_replay_worker_stays_gits_error(tmp_path: Path) -> None:
    # The serial audit reports git's refusal as git_error: so must a worker's.
    # pickle alone cannot send it (its class names the module _pygit2); the
    # replay pool's initializer registers how.
    pygit2.init_repository(str(tmp_path / "repo"))
    chunks = [(str(tmp_path), n) for n in range(6)]
    with pytest.raises(pygit2.GitError, match="is corrupt"):
        map_chunks(
            raise_git_error, chunks, jobs=2, initializer=pool._start_worker,
            initargs=(str(tmp_path / "repo"),),
        )  # fmt: skip


def test_an_error_that_cannot_cross_is_still_an_error_here(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="not this one"):
        map_chunks(raise_unpicklable, [(str(tmp_path), n) for n in range(4)], jobs=2)


def test_a_worker_killed_is_replay_worker_lost(tmp_path: Path) -> None:
    with pytest.raises(CapsuleError) as raised:
        map_chunks(die_on_three, [(str(tmp_path), n) for n in range(8)], jobs=2)
    assert raised.value.code == "replay_worker_lost"
    assert 0 < raised.value.details["chunks"] <= 8


def test_a_worker_failing_to_start_is_replay_worker_lost(tmp_path: Path) -> None:
    with pytest.raises(CapsuleError) as raised:
        map_chunks(
            square, [(str(tmp_path), n) for n in range(4)], jobs=2,
            initializer=fail_to_start, initargs=(str(tmp_path),),
        )  # fmt: skip
    assert raised.value.code == "replay_worker_lost"
    assert raised.value.details["chunks"] == 4


def test_no_descriptor_is_left_open(tmp_path: Path) -> None:
    before = set(os.listdir("/proc/self/fd"))
    map_chunks(square, [(str(tmp_path), n) for n in range(10)], jobs=2)
    with pytest.raises(CapsuleError):
        map_chunks(die_on_three, [(str(tmp_path), n) for n in range(8)], jobs=2)
    assert set(os.listdir("/proc/self/fd")) == before


def test_a_callers_frozen_objects_stay_frozen(tmp_path: Path) -> None:
    # A server may freeze what it set up (gc.freeze) before forking workers of
    # its own: an audit in it must not unfreeze them.
    assert gc.get_freeze_count() == 0
    map_chunks(square, [(str(tmp_path), n) for n in range(4)], jobs=2)
    assert gc.get_freeze_count() == 0  # nothing left frozen of its own
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        map_chunks(square, [(str(tmp_path), n) for n in range(4)], jobs=2)
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()


def test_a_caller_holding_many_files_open_still_shares_the_work(tmp_path: Path) -> None:
    # A server may hold more than 1,024 descriptors: the pool's pipes then
    # number above what select() takes (FD_SETSIZE), which must not matter.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048:
        resource.setrlimit(resource.RLIMIT_NOFILE, (2048, max(hard, 2048)))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        chunks = [(str(tmp_path), n, 2) for n in range(12)]
        results = map_chunks(meet, chunks, jobs=2)
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert [number for number, _ in results] == list(range(12))


def test_with_another_thread_alive_the_workers_are_spawned(tmp_path: Path) -> None:
    # A fork copies only the thread that calls it: with another thread alive,
    # each worker is a new interpreter (its parent is still this process).
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not can_fork()
        results = map_chunks(meet, [(str(tmp_path), n, 2) for n in range(4)], jobs=2)
    finally:
        stop.set()
        thread.join()
    assert [number for number, _ in results] == list(range(4))


# The two tests below run the pool in a process of their own, which they
# interrupt or kill, and then look for its workers.
SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[2])
    from test_workers import note_start, slow
    from governance.history.workers import map_chunks
    folder = sys.argv[1]
    try:
        map_chunks(slow, [(folder, n) for n in range(400)], jobs=2,
                   initializer=note_start, initargs=(folder,))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    """
)


def _start_pool(tmp_path: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(tmp_path), str(ROOT / "tests")],
        stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=ROOT,
    )  # fmt: skip
    _wait_for(lambda: len(_pids(tmp_path / "started")) == 2, "two workers")
    _wait_for(lambda: len(_pids(tmp_path / "done")) >= 6, "some chunks done")
    return process


def test_a_ctrl_c_ends_the_workers_without_a_traceback_each(tmp_path: Path) -> None:
    process = _start_pool(tmp_path)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal sends it: to the group
    _, stderr = process.communicate(timeout=WAIT)
    assert process.returncode == 130
    assert "Traceback" not in stderr, stderr
    for pid in _pids(tmp_path / "started"):
        _wait_for(functools.partial(_gone, pid), f"worker {pid} to leave")
    assert len(_pids(tmp_path / "done")) < 400


def test_workers_stop_when_the_process_that_started_them_is_killed(tmp_path: Path) -> None:
    # SIGKILL (or SIGTERM, which a command does not catch) ends the audit's
    # process alone: its workers must not go on replaying every chunk left for
    # results nobody will read.
    process = _start_pool(tmp_path)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=WAIT)
    for pid in _pids(tmp_path / "started"):
        _wait_for(functools.partial(_gone, pid), f"worker {pid} to leave")
    assert len(_pids(tmp_path / "done")) < 400


# A ^C raised wherever the main thread was could land inside
# concurrent.futures.wait(), which takes each waited future's lock in turn,
# and leave some taken: the manager thread, failing those futures when the
# workers died of the same ^C, then blocked on them and the audit hung (seen
# once under load; a stress of 60 interrupted pools hung on the first).
INNERMOST = textwrap.dedent(
    """
    import sys, traceback
    sys.path.insert(0, sys.argv[1])
    from test_workers import interrupt_parent_on_three
    from governance.history.workers import map_chunks
    try:
        map_chunks(interrupt_parent_on_three, [("", n) for n in range(2000)], jobs=2)
    except KeyboardInterrupt as exc:
        print(traceback.extract_tb(exc.__traceback__)[-1].filename)
        sys.exit(130)
    """
)


def test_a_ctrl_c_is_raised_by_the_pool_itself_never_inside_its_wait(tmp_path: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-c", INNERMOST, str(ROOT / "tests")],
        check=False, capture_output=True, text=True, timeout=WAIT, cwd=ROOT,
        preexec_fn=functools.partial(signal.signal, signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert process.returncode == 130, process.stderr
    assert process.stdout.strip().endswith("governance/history/workers.py"), process.stdout
