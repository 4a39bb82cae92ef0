"""The processes /proc shows, and killing every one that matches (a uid, a
session) without hitting a process that took over a number."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from governance.core import words

MAX_LISTED_PROCESSES = 20

# How long to keep killing a uid's (or session's) processes before reporting
# the ones still alive as survivors.
KILL_ROUNDS_SECONDS = 1.0


@dataclass(frozen=True)
class Process:
    """One process as /proc shows it."""

    pid: int
    name: str
    state: str
    session: int
    uids: tuple[int, ...]
    gids: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "name": self.name}


def listed(found: Sequence[Process]) -> str:
    """Processes in words: the first few by pid and name, and how many more."""
    return words.listed([f"{p.pid} ({p.name})" for p in found], MAX_LISTED_PROCESSES)


def _read_process(pid: int) -> Process | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            status_line = handle.read()
        with open(f"/proc/{pid}/status", "rb") as handle:
            status = handle.read()
    except OSError:
        return None
    head, _, tail = status_line.rpartition(b")")
    fields = tail.split()
    if len(fields) < 4:
        return None
    ids: dict[bytes, tuple[int, ...]] = {}
    for line in status.splitlines():
        key, _, value = line.partition(b":")
        if key in (b"Uid", b"Gid"):
            ids[key] = tuple(int(word) for word in value.split())
    return Process(
        pid=pid,
        name=head.partition(b"(")[2].decode("utf-8", errors="replace"),
        state=fields[0].decode("ascii", errors="replace"),
        session=int(fields[3]),
        uids=ids.get(b"Uid", ()),
        gids=ids.get(b"Gid", ()),
    )


def list_processes() -> list[Process]:
    """Every process /proc shows us, zombies included."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            process = _read_process(int(name))
            if process is not None:
                found.append(process)
    return found


def alive(process: Process) -> bool:
    # A zombie has ended; only its parent's wait is missing.
    return process.state not in ("Z", "X")


def _kill_if(pid: int, match: Callable[[Process], bool]) -> None:
    """SIGKILL ``pid`` if it still matches, without hitting a process that took
    over the number: the pidfd pins the process, then we look at it again."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:  # no pidfd (an old kernel): look, then kill
        process = _read_process(pid)
        if process is not None and match(process):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        return
    try:
        process = _read_process(pid)
        if process is not None and match(process):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                signal.pidfd_send_signal(handle, signal.SIGKILL)
    finally:
        os.close(handle)


def kill_matching(
    match: Callable[[Process], bool], *, rounds_seconds: float = KILL_ROUNDS_SECONDS
) -> tuple[list[Process], list[Process]]:
    """Kill every live process that ``match`` picks, again and again until none
    is left (a process may fork while we look) or time is up. Returns what was
    killed and what was still alive at the end."""
    killed: dict[int, Process] = {}
    deadline = time.monotonic() + rounds_seconds
    while True:
        live = [p for p in list_processes() if alive(p) and match(p)]
        if not live:
            return list(killed.values()), []
        if time.monotonic() > deadline:
            return list(killed.values()), live
        for process in live:
            _kill_if(process.pid, match)
            killed.setdefault(process.pid, process)
        time.sleep(0.01)
