"""Chunks of work on the standard library's process pool.

``map_chunks`` runs a module-level function over chunks on
``concurrent.futures.ProcessPoolExecutor``: with a fork context where this
process may fork (``os.fork`` exists and no other thread is alive, as a fork
copies only the thread that calls it), so each worker starts with what this
process has already read and parsed; with a spawn context elsewhere, each
worker importing governance afresh.

Nothing is lost quietly: every chunk's result comes back in the chunks'
order, an exception a worker raised is raised again here (the worker's
traceback as its cause, by the pool), and a worker that died (killed, out of
memory) or could not start is ``replay_worker_lost``. A worker leaves when
the process that started it is killed (Linux: its parent-death signal), and
a ^C at the terminal ends the workers with it, without a traceback each.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from governance.errors import REPLAY_WORKER_LOST, CapsuleError

C = TypeVar("C")
R = TypeVar("R")

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
# How often, at most, the wait for results looks whether a ^C came (seconds).
_POLL = 0.1


def can_fork() -> bool:
    """True where the pool may fork: ``os.fork`` exists and no other thread is alive."""
    return hasattr(os, "fork") and threading.active_count() == 1


def _leave_with(parent: int) -> None:
    """In a worker: be killed when ``parent`` goes (Linux), and leave a ^C to
    the terminal's default, which ends the worker without a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # the parent left before the signal was set
        signal.raise_signal(signal.SIGKILL)


@contextlib.contextmanager
def _interrupt_as_flag() -> Iterator[Callable[[], bool]]:
    """While the pool works, a ^C only sets a flag that the wait for results
    reads (the function yielded), where Python would raise KeyboardInterrupt
    wherever the main thread is. Raised inside ``concurrent.futures.wait``,
    which takes the lock of every future it waits on one by one, it left some
    held, and the pool's manager thread, marking those futures as failed when
    the ^C ended the workers too, waited on them forever: the audit hung.
    Only in the main thread with Python's own handler in place; elsewhere the
    flag stays down and a ^C does what the caller set it to."""
    seen: list[int] = []
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield lambda: False
        return
    previous = signal.signal(signal.SIGINT, lambda number, frame: seen.append(number))
    try:
        yield lambda: bool(seen)
    finally:
        signal.signal(signal.SIGINT, previous)


def _start(parent: int, initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    _leave_with(parent)
    if initializer is not None:
        initializer(*initargs)


def map_chunks(
    work: Callable[[C], R],
    chunks: Sequence[C],
    *,
    jobs: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
    done: Callable[[int], None] | None = None,
) -> list[R]:
    """``work(chunk)`` for every chunk, in the chunks' order, on ``jobs``
    worker processes (never more than there are chunks). ``work`` and
    ``initializer`` must be module-level functions (the pool sends them by
    name); ``initializer(*initargs)`` runs first in each worker. ``done`` is
    told the index of each chunk finished, in the order they finish."""
    import multiprocessing  # noqa: PLC0415 (only for --jobs above 1)
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait  # noqa: PLC0415 (as above)
    from concurrent.futures.process import BrokenProcessPool  # noqa: PLC0415 (as above)

    fork = can_fork()
    context = multiprocessing.get_context("fork" if fork else "spawn")
    results: dict[int, R] = {}
    # Frozen, the objects the workers share with this process are left alone by
    # their collectors (which would otherwise copy every page they touch). Not
    # where the caller froze objects of its own: unfreeze would thaw them.
    freeze = fork and gc.get_freeze_count() == 0
    try:
        with (
            _interrupt_as_flag() as interrupted,
            ProcessPoolExecutor(
                max_workers=max(1, min(jobs, len(chunks))),
                mp_context=context,
                initializer=_start,
                initargs=(os.getpid(), initializer, initargs),
            ) as pool,
        ):
            if freeze:
                gc.freeze()
            try:
                # A fork pool starts every worker at the first submit.
                waiting = {pool.submit(work, chunk): at for at, chunk in enumerate(chunks)}
            finally:
                if freeze:
                    gc.unfreeze()
            try:
                while waiting:
                    finished, _ = wait(waiting, timeout=_POLL, return_when=FIRST_COMPLETED)
                    if interrupted():
                        raise KeyboardInterrupt
                    for future in finished:
                        at = waiting.pop(future)
                        results[at] = future.result()
                        if done is not None:
                            done(at)
            except BaseException:
                # Leaving (a worker's exception, the caller's, a ^C): the chunks
                # not begun are dropped, not worked first by the pool's exit,
                # which waits only for those running and the pool's own threads
                # (a thread left alive would keep the next pool from forking).
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    except BrokenProcessPool as exc:
        # A worker that died or could not start (its initializer failed).
        raise worker_lost(f"failed or died ({exc})", len(chunks) - len(results)) from exc
    return [results[at] for at in range(len(chunks))]


def worker_lost(how: str, missing: int) -> CapsuleError:
    """``replay_worker_lost``: a worker process that ``how`` ended without the
    results of ``missing`` chunks."""
    return CapsuleError(
        f"a replay process {how}: {missing} chunk(s) of work came back with no result and "
        "nothing was judged for them; run the audit again, or with --jobs 1 to replay in "
        "this process alone",
        code=REPLAY_WORKER_LOST,
        chunks=missing,
    )
