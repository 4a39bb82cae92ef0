"""Chunks of work shared by this process and forked copies of it.

``fork_map`` forks ``jobs - 1`` children and works as the last of the
``jobs`` itself, so no process sits waiting while the others work. The
chunks wait in a pipe as fixed-size indices, all written before the first
fork: each process takes the next one by reading an index, so a process
that gets quick chunks takes more of them, with no thread, queue or lock to
manage. A child reports each chunk it finishes on a second pipe, which the
parent reads between its own chunks (for progress), and writes its results
to its own unnamed temporary file, read once it has exited. Children leave
with ``os._exit``: nothing of the parent's runs twice (its buffered output,
its ``atexit`` callbacks, its interpreter's teardown).

Nothing is lost quietly: every chunk's results come back, an exception a
child raised is raised again in the parent (with the child's traceback as its
cause), and a child that died without results (killed, out of memory) is
``replay_worker_lost``. Only where ``os.fork`` exists and this process runs
no other thread, as a fork copies only the thread that calls it
(``can_fork``).
"""

from __future__ import annotations

import contextlib
import copyreg
import gc
import os
import pickle
import select
import signal
import struct
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import IO, Any, NamedTuple, TypeVar

from governance.errors import REPLAY_WORKER_LOST, CapsuleError

C = TypeVar("C")
R = TypeVar("R")
Reducers = dict[type, Callable[[Any], Any]]

# A chunk's index on either pipe: writes of this size are atomic, and every
# read asks for whole ones, so no process ever sees part of an index.
_INDEX = struct.Struct(">I")
# Every index fits in a pipe before any process reads it (Linux gives 64 KiB;
# where it gives less, this process does every chunk), and so does every
# report of a chunk done.
MAX_CHUNKS = 8192
_READ = _INDEX.size * MAX_CHUNKS
_RESULTS, _RAISED, _BUG = "results", "raised", "bug"


class ChildTraceback(Exception):
    """The traceback of an exception raised in a forked child, as text: the
    ``__cause__`` of that exception raised again in the parent."""


def can_fork() -> bool:
    """True where ``fork_map`` may run: ``os.fork`` exists and no other thread is alive."""
    return hasattr(os, "fork") and threading.active_count() == 1


def _indices(data: bytes) -> list[int]:
    return [index for (index,) in _INDEX.iter_unpack(data)]


def _take(queue: int) -> int | None:
    data = os.read(queue, _INDEX.size)
    return _INDEX.unpack(data)[0] if data else None


class _Child(NamedTuple):
    """What a forked child works with: the pipes, its result file, and the work."""

    queue: int
    done: int
    out: IO[bytes]
    reducers: Reducers


def _report(child: _Child, message: tuple[object, ...]) -> None:
    pickler = pickle.Pickler(child.out, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, **child.reducers}
    pickler.dump(message)
    child.out.flush()


def _child(
    child: _Child, start: Callable[[], None], chunks: Sequence[C], work: Callable[[C], R]
) -> None:
    """A forked child's whole life: take chunks until none are left, write the
    results, and leave without running anything of the parent's."""
    status = 1
    try:
        # ^C reaches the whole process group: the parent stops the children.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        results: dict[int, R] = {}
        start()
        while (index := _take(child.queue)) is not None:
            results[index] = work(chunks[index])
            os.write(child.done, _INDEX.pack(index))
        _report(child, (_RESULTS, results))
        status = 0
    except BaseException as exc:
        # Everything a child meets is reported, then it leaves.
        text = traceback.format_exc()
        try:
            _report(child, (_RAISED, exc, text))
        except Exception:
            # An exception pickle cannot send: its traceback goes as text.
            child.out.seek(0)
            child.out.truncate()
            _report(child, (_BUG, text))
    finally:
        os._exit(status)


def _stop(pids: Sequence[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _reap(pids: Sequence[int], statuses: dict[int, int]) -> None:
    for pid in pids:
        if pid not in statuses:
            with contextlib.suppress(ChildProcessError):
                statuses[pid] = os.waitpid(pid, 0)[1]


def fork_map(
    chunks: Sequence[C],
    work: Callable[[C], R],
    *,
    jobs: int,
    start_child: Callable[[], None],
    progress: Callable[[int], None] | None = None,
    reducers: Reducers | None = None,
    started: Callable[[int], None] | None = None,
) -> list[R]:
    """``work(chunk)`` for every chunk, in the chunks' order, on this process
    and up to ``jobs - 1`` forked children (never more than there are chunks
    to share); ``start_child`` runs first in each child, to open what a child
    must not share with its parent. ``progress`` is told the index of each
    chunk done, in the order they finish. ``reducers`` tell pickle how to send
    back objects it cannot send by itself (``copyreg``'s form, by type).
    ``started`` is told how many processes share the chunks: fewer than asked
    where a fork is refused (a limit on processes, no memory) or no temporary
    file can be made, as the processes started do the work between them; one
    where the pipe holds fewer indices than there are chunks."""
    if len(chunks) > MAX_CHUNKS:
        raise ValueError(f"{len(chunks)} chunks, more than {MAX_CHUNKS}")
    parent = os.getpid()
    outs: dict[int, IO[bytes]] = {}
    statuses: dict[int, int] = {}
    own: dict[int, R] = {}

    def tell(indices: Sequence[int]) -> None:
        if progress is not None:
            for index in indices:
                progress(index)

    with contextlib.ExitStack() as closing:
        queue, feed = os.pipe()
        closing.callback(os.close, queue)
        indices = b"".join(_INDEX.pack(i) for i in range(len(chunks)))
        try:
            # Never blocking: only this process would read. Linux gives a user
            # past its allowance of pipe buffers pipes of 8 KiB (2,048 indices).
            os.set_blocking(feed, False)
            fed = os.write(feed, indices) if indices else 0
        except BlockingIOError:
            fed = 0
        finally:
            os.close(feed)
        if fed < len(indices):
            # Not every chunk fits in the pipe: this process does them all.
            if started is not None:
                started(1)
            alone = []
            for at, chunk in enumerate(chunks):
                alone.append(work(chunk))
                tell([at])
            return alone
        done_read, done_write = os.pipe()
        closing.callback(os.close, done_read)
        try:
            # Frozen, the objects the children share with this process are left
            # alone by their collectors (which would otherwise copy every page).
            # Not where the caller froze objects of its own: unfreeze would thaw them.
            freeze = gc.get_freeze_count() == 0
            if freeze:
                gc.freeze()
            try:
                for _ in range(min(jobs, len(chunks)) - 1):
                    try:
                        out = closing.enter_context(tempfile.TemporaryFile())
                        pid = os.fork()
                    except OSError:
                        break  # no process more: those started share the work
                    if pid == 0:  # the child, which never returns from _child
                        os.close(done_read)
                        child = _Child(queue, done_write, out, reducers or {})
                        _child(child, start_child, chunks, work)
                    outs[pid] = out
            finally:
                if freeze:
                    gc.unfreeze()
                os.close(done_write)
            if started is not None:
                started(len(outs) + 1)
            # poll, not select: a caller may hold descriptors above FD_SETSIZE.
            reports = select.poll()
            reports.register(done_read, select.POLLIN)
            while (index := _take(queue)) is not None:
                own[index] = work(chunks[index])
                tell([index])
                if reports.poll(0):
                    tell(_indices(os.read(done_read, _READ)))
            # Until every child has left (each holds the pipe open until then).
            while data := os.read(done_read, _READ):
                tell(_indices(data))
            _reap(list(outs), statuses)
        except BaseException:
            if os.getpid() != parent:
                # A child that met an exception before its work began (a ^C
                # right after the fork): it leaves, never running its caller's code.
                os._exit(1)
            _stop([pid for pid in outs if pid not in statuses])
            raise
        finally:
            _reap(list(outs), statuses)
        return _collect(len(chunks), own, outs, statuses)


def _collect(
    count: int, own: dict[int, R], children: dict[int, IO[bytes]], statuses: dict[int, int]
) -> list[R]:
    results = dict(own)
    lost: str | None = None
    for pid, out in children.items():
        out.seek(0)
        try:
            message = pickle.load(out)
        except (EOFError, pickle.UnpicklingError):
            message = None
        # No status where something else reaped the child (SIGCHLD ignored, a
        # caller's own waitpid): then its results alone say how it ended.
        status = statuses.get(pid)
        code = None if status is None else os.waitstatus_to_exitcode(status)
        if isinstance(message, tuple) and message[0] == _RAISED:
            raise message[1] from ChildTraceback(message[2])
        if isinstance(message, tuple) and message[0] == _BUG:
            raise RuntimeError(f"a forked process failed:\n{message[1]}")
        if isinstance(message, tuple) and message[0] == _RESULTS and code in (0, None):
            results.update(message[1])
        elif lost is None and code is not None:
            lost = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    missing = count - len(results)
    if missing:
        raise worker_lost(lost or "left early", missing)
    return [results[i] for i in range(count)]


def worker_lost(how: str, missing: int) -> CapsuleError:
    """``replay_worker_lost``: a process (forked here, or spawned by the pool)
    that ``how`` ended without the results of ``missing`` chunks."""
    return CapsuleError(
        f"a replay process {how}: {missing} chunk(s) of work came back with no result and "
        "nothing was judged for them; run the audit again, or with --jobs 1 to replay in "
        "this process alone",
        code=REPLAY_WORKER_LOST,
        chunks=missing,
    )
