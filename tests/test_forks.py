"""The fork pool: chunks shared by this process and forked children, every
result back in order, and nothing lost or left behind when a child fails."""

from __future__ import annotations

import gc
import os
import pickle
import resource
import select
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pygit2
import pytest

from governance.errors import CapsuleError, SourceError
from governance.history import forks, pool
from governance.history.forks import ChildTraceback, fork_map

WAIT = 20.0  # seconds a rendezvous may take before the test says it hung


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def _assert_reaped(pid: int) -> None:
    # Neither running nor a zombie: no process of that id is left to wait for.
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


class Meeting:
    """A file each process appends its pid to on its first chunk, then waits
    until ``count`` processes have: proof that that many took part."""

    def __init__(self, folder: Path, count: int) -> None:
        self.path = folder / "pids"
        self.path.touch()
        self.count = count
        self.met: set[int] = set()

    def pids(self) -> set[int]:
        return {int(line) for line in self.path.read_text().split()}

    def arrive(self) -> None:
        if os.getpid() in self.met:
            return
        self.met.add(os.getpid())
        with self.path.open("a") as handle:
            handle.write(f"{os.getpid()}\n")
        _wait_for(lambda: len(self.pids()) >= self.count, f"{self.count} processes")


@pytest.fixture(autouse=True)
def no_threads() -> None:
    # A fork copies only the calling thread; these tests fork the test process.
    assert threading.active_count() == 1


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_every_process_works_and_results_come_back_in_chunk_order(
    tmp_path: Path, jobs: int
) -> None:
    meeting = Meeting(tmp_path, jobs)

    def work(chunk: list[int]) -> tuple[list[int], int]:
        meeting.arrive()
        return [n * n for n in chunk], os.getpid()

    chunks = [list(range(start, start + 5)) for start in range(0, 60, 5)]
    fds = _open_fds()
    results = fork_map(chunks, work, jobs=jobs, start_child=lambda: None)
    assert [squares for squares, _ in results] == [[n * n for n in c] for c in chunks]
    workers = {pid for _, pid in results}
    assert len(workers) == jobs
    assert os.getpid() in workers  # this process replays too
    assert meeting.pids() == workers
    assert _open_fds() == fds  # every pipe and temporary file closed
    for pid in workers - {os.getpid()}:
        _assert_reaped(pid)


def test_no_more_processes_than_chunks(tmp_path: Path) -> None:
    meeting = Meeting(tmp_path, 2)

    def work(chunk: int) -> int:
        meeting.arrive()
        return os.getpid()

    started = tmp_path / "started"

    def start() -> None:
        with started.open("a") as handle:
            handle.write(f"{os.getpid()}\n")

    assert len(fork_map([1, 2], work, jobs=8, start_child=start)) == 2
    assert len(meeting.pids()) == 2
    assert len(started.read_text().split()) == 1  # one child for two chunks, not seven


def test_progress_is_told_each_chunk_once(tmp_path: Path) -> None:
    meeting = Meeting(tmp_path, 2)
    told: list[int] = []

    def work(chunk: int) -> int:
        meeting.arrive()
        return chunk

    assert fork_map(
        list(range(40)), work, jobs=2, start_child=lambda: None, progress=told.append
    ) == list(range(40))
    assert sorted(told) == list(range(40))


def test_start_child_runs_in_each_child_before_its_chunks(tmp_path: Path) -> None:
    started: list[str] = ["parent"]
    meeting = Meeting(tmp_path, 2)

    def start() -> None:
        started[0] = f"child {os.getpid()}"

    def work(chunk: int) -> str:
        meeting.arrive()
        return started[0]

    seen = set(fork_map(list(range(10)), work, jobs=2, start_child=start))
    assert "parent" in seen
    assert any(s.startswith("child ") for s in seen)
    assert started == ["parent"]  # the child's change stays in the child


def _raise_in_child(tmp_path: Path, error: BaseException) -> Callable[[int], int]:
    parent = os.getpid()
    marker = tmp_path / "raised"

    def work(chunk: int) -> int:
        if os.getpid() != parent:
            marker.touch()
            raise error
        # The parent leaves chunks for the child until the child has failed.
        _wait_for(marker.exists, "the child to fail")
        return chunk

    return work


def test_an_error_raised_in_a_child_is_raised_again_with_its_traceback(tmp_path: Path) -> None:
    error = SourceError("the child met this", code="source_missing", locator="docs/a.md")
    with pytest.raises(SourceError) as raised:
        fork_map(list(range(6)), _raise_in_child(tmp_path, error), jobs=2, start_child=lambda: None)
    assert raised.value.code == "source_missing"
    assert raised.value.details == {"locator": "docs/a.md"}
    assert isinstance(raised.value.__cause__, ChildTraceback)
    assert "the child met this" in str(raised.value.__cause__)


def test_gits_error_in_a_child_stays_gits_error(tmp_path: Path) -> None:
    # The serial audit reports git's refusal as git_error: so must a child's.
    # pickle alone cannot send it (its class names the module _pygit2).
    work = _raise_in_child(tmp_path, pygit2.GitError("object 0123 is corrupt"))
    with pytest.raises(RuntimeError, match="a forked process failed"):
        fork_map(list(range(6)), work, jobs=2, start_child=lambda: None)
    work = _raise_in_child(tmp_path, pygit2.GitError("object 0123 is corrupt"))
    (tmp_path / "raised").unlink()
    with pytest.raises(pygit2.GitError, match="is corrupt"):
        fork_map(
            list(range(6)),
            work,
            jobs=2,
            start_child=lambda: None,
            reducers={pygit2.GitError: pool._reduce_git_error},
        )


class Unpicklable(Exception):
    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError("not this one")


def test_an_error_that_cannot_cross_is_a_bug_with_the_childs_traceback(tmp_path: Path) -> None:
    work = _raise_in_child(tmp_path, Unpicklable("held a socket"))
    with pytest.raises(
        RuntimeError, match=r"(?s)a forked process failed.*Unpicklable: held a socket"
    ):
        fork_map(list(range(6)), work, jobs=2, start_child=lambda: None)


def test_a_child_killed_loses_nothing_quietly(tmp_path: Path) -> None:
    parent = os.getpid()
    marker = tmp_path / "killed"

    def work(chunk: int) -> int:
        if os.getpid() != parent:
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        _wait_for(marker.exists, "the child to die")
        return chunk

    with pytest.raises(CapsuleError) as raised:
        fork_map(list(range(6)), work, jobs=2, start_child=lambda: None)
    assert raised.value.code == "replay_worker_lost"
    assert "killed by signal 9" in raised.value.message
    assert raised.value.details["chunks"] >= 1


def test_a_child_failing_to_start_is_raised(tmp_path: Path) -> None:
    marker = tmp_path / "failed"

    def start() -> None:
        marker.touch()
        raise OSError(24, "Too many open files")

    def work(chunk: int) -> int:
        _wait_for(marker.exists, "the child to fail")
        return chunk

    with pytest.raises(OSError, match="Too many open files"):
        fork_map(list(range(5)), work, jobs=2, start_child=start)


def test_interrupted_parent_kills_and_reaps_its_children(tmp_path: Path) -> None:
    parent = os.getpid()
    pids = tmp_path / "children"

    def start() -> None:
        with pids.open("a") as handle:
            handle.write(f"{os.getpid()}\n")

    def work(chunk: int) -> int:
        if os.getpid() != parent:
            time.sleep(WAIT)  # a child busy for good: only a kill ends it
            return chunk
        _wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 2, "two children")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fork_map(list(range(30)), work, jobs=3, start_child=start)
    for pid in map(int, pids.read_text().split()):
        _assert_reaped(pid)


def test_more_chunks_than_the_pipes_hold_are_refused() -> None:
    with pytest.raises(ValueError, match="more than 8192"):
        fork_map(list(range(forks.MAX_CHUNKS + 1)), lambda c: c, jobs=2, start_child=lambda: None)


def test_the_pool_never_makes_more_chunks_than_a_fork_pool_holds() -> None:
    items = list(range(600_000))
    for jobs in (2, 8, 256):
        chunks = pool._chunks(items, jobs)  # type: ignore[arg-type]
        assert len(chunks) <= forks.MAX_CHUNKS
        assert [n for chunk in chunks for n in chunk] == items


def test_can_fork_is_false_while_another_thread_runs() -> None:
    assert forks.can_fork()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not forks.can_fork()
    finally:
        stop.set()
        thread.join()
    assert forks.can_fork()


def test_a_caller_that_ignores_sigchld_still_gets_every_result(tmp_path: Path) -> None:
    # Some servers ignore SIGCHLD: the kernel then reaps children itself, and
    # waitpid finds no status to give. The results came back all the same.
    meeting = Meeting(tmp_path, 2)

    def work(chunk: int) -> int:
        meeting.arrive()
        return chunk * 2

    old = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        assert fork_map(list(range(10)), work, jobs=2, start_child=lambda: None) == [
            n * 2 for n in range(10)
        ]
    finally:
        signal.signal(signal.SIGCHLD, old)


def test_a_child_killed_while_sigchld_is_ignored_is_still_lost(tmp_path: Path) -> None:
    parent = os.getpid()
    marker = tmp_path / "killed"

    def work(chunk: int) -> int:
        if os.getpid() != parent:
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        _wait_for(marker.exists, "the child to die")
        return chunk

    old = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        with pytest.raises(CapsuleError) as raised:
            fork_map(list(range(6)), work, jobs=2, start_child=lambda: None)
    finally:
        signal.signal(signal.SIGCHLD, old)
    assert raised.value.code == "replay_worker_lost"
    assert "left early" in raised.value.message


def test_a_callers_frozen_objects_stay_frozen(tmp_path: Path) -> None:
    # A server may freeze what it set up (gc.freeze) before forking workers of
    # its own: an audit in it must not unfreeze them.
    meeting = Meeting(tmp_path, 2)

    def work(chunk: int) -> int:
        meeting.arrive()
        return chunk

    assert gc.get_freeze_count() == 0
    fork_map(list(range(4)), work, jobs=2, start_child=lambda: None)
    assert gc.get_freeze_count() == 0  # nothing left frozen of its own
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        meeting.path.write_text("")
        meeting.met.clear()
        fork_map(list(range(4)), work, jobs=2, start_child=lambda: None)
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()


def test_a_child_interrupted_before_its_work_begins_never_returns_to_the_caller(
    tmp_path: Path,
) -> None:
    # ^C reaches every process of the group. One that lands in a child right
    # after the fork, before the child has set itself to ignore it, is raised
    # there as KeyboardInterrupt, as this trace raises it on the child's first
    # line after the fork: the child must leave, not unwind into its caller's
    # code (a second copy of the command's error path, atexit, buffered output).
    parent = os.getpid()
    escaped = tmp_path / "escaped"

    def interrupt(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and os.getpid() != parent:
            raise KeyboardInterrupt
        return interrupt

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        return interrupt if frame.f_code is fork_map.__code__ else None

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        results = fork_map(list(range(6)), lambda c: c, jobs=2, start_child=lambda: None)
    except BaseException:
        if os.getpid() != parent:
            escaped.touch()
            os._exit(0)
        raise
    finally:
        if os.getpid() == parent:
            sys.settrace(previous)
    assert not escaped.exists()
    assert results == list(range(6))  # this process replayed them all


def _uid_owning_nothing() -> int:
    used = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        used |= {
            int(n)
            for line in text.splitlines()
            if line.startswith("Uid:")
            for n in line.split()[1:]
        }
    # Begun from this process's id: test runs side by side on one machine
    # (each counted against its uid's limit) take different ones.
    start = 60000 + os.getpid() % 4000
    return next(uid for uid in range(start, start + 4000) if uid not in used)


def _with_one_process_more(run: Callable[[], object], *, pipes: int = 0) -> object:
    """``run()`` in a fork of this process running as a uid that owns no
    process, allowed two (RLIMIT_NPROC): itself and one fork more, as under a
    container's or a user's process limit; holding ``pipes`` pipes open first.
    Its value comes back, or its error; one that takes over ``WAIT`` hung."""
    uid = _uid_owning_nothing()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            resource.setrlimit(resource.RLIMIT_NPROC, (2, 2))
            files = 2 * pipes + 256
            if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < files:
                resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            held = [os.pipe() for _ in range(pipes)]
            try:
                answer: object = ("value", run())
            except BaseException as exc:
                answer = ("raised", repr(exc))
            with os.fdopen(write, "wb") as handle:
                pickle.dump(answer, handle)
            del held
        finally:
            os._exit(0)
    os.close(write)
    try:
        waiting = select.poll()
        waiting.register(read, select.POLLIN)
        if not waiting.poll(WAIT * 1000):
            os.kill(pid, signal.SIGKILL)
            raise AssertionError(f"still running after {WAIT} seconds: hung")
        with os.fdopen(read, "rb", closefd=False) as handle:
            data = handle.read()
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    kind, value = pickle.loads(data)
    assert kind == "value", value
    return value


def _on_three() -> tuple[list[int], list[int]]:
    """Twenty chunks on three processes asked for: the results, and how many started."""
    started: list[int] = []
    results = fork_map(
        list(range(20)), lambda c: c * 3, jobs=3, start_child=lambda: None, started=started.append
    )
    return results, started


def test_a_fork_refused_leaves_the_work_to_the_processes_started() -> None:
    # Three processes asked for, two allowed: the second fork fails (EAGAIN),
    # and the two that run replay every chunk between them, and say so.
    assert _with_one_process_more(_on_three) == ([n * 3 for n in range(20)], [2])


def test_no_temporary_file_for_a_child_leaves_the_work_to_this_process(tmp_path: Path) -> None:
    # Where no temporary file can be made (a read-only file system), no child starts.
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)

    def run() -> object:
        tempfile.tempdir = str(closed)
        return _on_three()

    assert _with_one_process_more(run) == ([n * 3 for n in range(20)], [1])


def test_a_caller_holding_many_files_open_still_shares_the_work(tmp_path: Path) -> None:
    # A server may hold more than 1,024 descriptors: the pool's pipes then
    # number above what select() takes (FD_SETSIZE), which must not matter.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048:
        resource.setrlimit(resource.RLIMIT_NOFILE, (2048, max(hard, 2048)))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    meeting = Meeting(tmp_path, 2)
    told: list[int] = []

    def work(chunk: int) -> int:
        meeting.arrive()
        return chunk * 5

    try:
        assert fork_map(
            list(range(12)), work, jobs=2, start_child=lambda: None, progress=told.append
        ) == [n * 5 for n in range(12)]
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert sorted(told) == list(range(12))


def _gone(pid: int) -> bool:
    # Exited: no such process, or a zombie its new parent has not reaped yet.
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in status


def test_children_stop_when_the_process_that_forked_them_is_killed(tmp_path: Path) -> None:
    # SIGKILL (or SIGTERM, which a command does not catch) ends the audit's
    # process alone: its children must not go on replaying every chunk left
    # for results nobody will read. Each stops at its next report of a chunk
    # done, as the pipe it reports on has no reader left (EPIPE).
    children, done = tmp_path / "children", tmp_path / "done"
    children.touch()
    done.touch()
    chunks = 400

    def start() -> None:
        with children.open("a") as handle:
            handle.write(f"{os.getpid()}\n")

    def work(chunk: int) -> int:
        time.sleep(0.02)
        with done.open("a") as handle:
            handle.write(f"{chunk}\n")
        return chunk

    helper = os.fork()
    if helper == 0:
        try:
            fork_map(list(range(chunks)), work, jobs=3, start_child=start)
        finally:
            os._exit(0)
    _wait_for(lambda: len(children.read_text().split()) == 2, "two children")
    _wait_for(lambda: len(done.read_text().split()) >= 6, "some chunks done")
    os.kill(helper, signal.SIGKILL)
    os.waitpid(helper, 0)
    for pid in map(int, children.read_text().split()):
        _wait_for(lambda pid=pid: _gone(pid), f"child {pid} to leave")
    assert len(done.read_text().split()) < chunks // 2


def test_more_chunks_than_a_small_pipe_holds_are_done_here_not_hung() -> None:
    # Linux gives a user holding more than its allowance of pipe buffers
    # (fs.pipe-user-pages-soft: 1,024 pipes of 64 KiB) new pipes of 8 KiB:
    # 2,048 chunk indices. More indices than that must not block this process
    # writing them to a pipe that only it would read.
    def run() -> object:
        started: list[int] = []
        results = fork_map(
            list(range(3000)),
            lambda c: c + 1,
            jobs=2,
            start_child=lambda: None,
            started=started.append,
        )
        return results == [n + 1 for n in range(3000)], started

    assert _with_one_process_more(run, pipes=1100) == (True, [1])


def test_chunks_done_here_for_a_small_pipe_leave_no_descriptor_open() -> None:
    # Where the pipe cannot hold every chunk's number and this process does
    # them all, the pipe children would have reported on was left open: one
    # descriptor lost at every such call (a server runs out of them).
    def run() -> object:
        fds = _open_fds()
        results = fork_map(list(range(3000)), lambda c: c, jobs=2, start_child=lambda: None)
        return results == list(range(3000)), sorted(_open_fds() - fds)

    assert _with_one_process_more(run, pipes=1100) == (True, [])


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False  # the listing's own descriptor, closed since
    return True


def test_no_descriptor_for_the_second_pipe_leaves_none_of_the_first_open() -> None:
    # Two descriptors free: the first pipe takes them, the second is refused
    # (EMFILE); the error is raised with nothing of the first pipe left open.
    fds = _open_fds()
    numbers = {int(fd) for fd in fds if _is_open(int(fd))}
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = next(n for n in range(soft) if len(set(range(n)) - numbers) == 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        with pytest.raises(OSError, match="Too many open files"):
            fork_map(list(range(6)), lambda c: c, jobs=2, start_child=lambda: None)
        left = _open_fds() - fds
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert left == set()
