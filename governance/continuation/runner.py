"""Running the two agents of a continuation proof, and recording what we saw.

Each agent gets a new, empty, read-only temporary directory as its working
directory, the capsule bytes on stdin, no arguments beyond its own command
line, and an environment of exactly PATH, a UTF-8 locale, HOME (its empty
workspace), CAPSULE_AGENT_SLOT and the names the caller passes on. It starts
in a session of its own, so it has no controlling terminal.

Run as root, each agent runs as its own otherwise-unused uid and gid, picked
at random for this run: the operating system, not only a mode bit, keeps the
workspace read-only, the two agents cannot read each other's processes, and
once an agent ends the runner kills every process of that uid, wherever it
went. Run as anyone else, agents run as that user: the workspace is read-only
by its mode bits only, and only the agent's session can be cleaned up.

Either way the workspace is observed before and after, and anything that
changed it fails the agent; the agent's stdout is read up to 1 MiB; the
runner makes itself non-dumpable so that agents of its own uid cannot read
its environment or open files through /proc; and SIGTERM or SIGHUP stop the
agents and remove their workspaces before the runner exits.

This is not a sandbox: an agent can still reach the network, read whatever
its user can read, and see other processes' command lines. The evidence
records what the runner gave and saw, nothing more.

Linux only: the runner reads /proc and calls prctl(2).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import grp
import os
import pwd
import re
import resource
import secrets
import selectors
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import FrameType, TracebackType
from typing import IO, Any

from governance.continuation.verdict import MAX_RESULT_BYTES, MAX_RESULT_TEXT, Attestation
from governance.core.hashing import sha256_hex
from governance.errors import CapsuleError, UsageError
from governance.output import shown

EVIDENCE_SCHEMA = "continuation-evidence/1"
SLOTS = ("a", "b")

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
LOCALE = "C.UTF-8"
SLOT_VARIABLE = "CAPSULE_AGENT_SLOT"
# Names the runner sets itself; passing them on would undo the fresh start.
RESERVED_ENV = frozenset({"HOME", "LANG", "LC_ALL", SLOT_VARIABLE})

WORKSPACE_MODE = 0o555
STDERR_TAIL_BYTES = 4096
MAX_LISTED_ENTRIES = 20
MAX_LISTED_PROCESSES = 20
READ_CHUNK = 65536

# How often the runner looks at its agents while it waits for their output.
POLL_SECONDS = 0.05
# After an agent exits, how long its output may take to reach end of file
# before the runner decides a process it left behind is holding it open.
EOF_GRACE_SECONDS = 0.5
# After a kill, how long to wait for the pipes to close before giving up on them.
KILL_GRACE_SECONDS = 2.0
# How long to keep killing a uid's (or session's) processes before reporting
# the ones still alive as survivors.
KILL_ROUNDS_SECONDS = 1.0

# The dedicated ids agents get when the runner is root: far above any range
# that distributions hand out to users or services.
DEDICATED_IDS = (0x60000000, 0x6FFFFFFF)

# Resource limits for every agent. NPROC counts all processes (and threads) of
# a uid, so it is only set for a dedicated uid, never for the runner's own.
NPROC_LIMIT = 256
FSIZE_LIMIT = 1 << 30

_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Interrupted(CapsuleError):
    """SIGTERM reached the runner while agents ran: they were stopped."""

    default_code = "interrupted"
    exit_code = 128 + signal.SIGTERM


class HungUp(Interrupted):
    """SIGHUP reached the runner while agents ran: they were stopped."""

    exit_code = 128 + signal.SIGHUP


@dataclass(frozen=True)
class RunAs:
    """The user an agent runs as."""

    name: str | None
    uid: int
    gid: int
    dedicated: bool

    @property
    def isolation(self) -> str:
        return "dedicated_uid" if self.dedicated else "mode_bits_only"

    def describe(self) -> str:
        if self.dedicated:
            return f"dedicated uid {self.uid}"
        return f"uid {self.uid}" + ("" if self.name is None else f" ({self.name})")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "uid": self.uid,
            "gid": self.gid,
            "privilege_dropped": self.dedicated,
            "isolation": self.isolation,
        }


@dataclass(frozen=True)
class Observation:
    """What the runner saw of a workspace at one moment."""

    kind: str
    mode: int | None = None
    owner_uid: int | None = None
    mtime_ns: int | None = None
    ctime_ns: int | None = None
    entries: tuple[str, ...] | None = None

    @property
    def fresh(self) -> bool:
        """An empty directory with the mode the runner gave it."""
        return self.kind == "directory" and self.entries == () and self.mode == WORKSPACE_MODE

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "mode": None if self.mode is None else f"{self.mode:04o}",
            "owner_uid": self.owner_uid,
            "mtime_ns": self.mtime_ns,
            "ctime_ns": self.ctime_ns,
            "entry_count": None if self.entries is None else len(self.entries),
            "entries": None if self.entries is None else list(self.entries[:MAX_LISTED_ENTRIES]),
        }


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


@dataclass(frozen=True)
class Limits:
    """The resource limits an agent starts with."""

    nproc: int | None
    fsize: int

    def to_json(self) -> dict[str, Any]:
        return {"nproc": self.nproc, "fsize": self.fsize, "core": 0, "no_new_privs": True}


@dataclass(frozen=True)
class AgentRun:
    """One agent's invocation as the runner observed it."""

    slot: str
    argv: tuple[str, ...]
    run_as: RunAs
    env_names: tuple[str, ...]
    passed_env: tuple[str, ...]
    limits: Limits
    started_at: str
    ended_at: str
    duration_ms: int
    timeout: float
    start_error: str | None
    exit_status: int | None
    timed_out: bool
    stdout: bytes
    stdout_truncated: bool
    stderr_tail: bytes
    stderr_bytes: int
    output_held: tuple[str, ...]
    left_running: tuple[Process, ...]
    survivors: tuple[Process, ...]
    stdin_bytes: int
    workspace: str
    before: Observation
    after: Observation

    @property
    def workspace_change(self) -> str | None:
        return workspace_change(self.before, self.after)

    @property
    def workspace_observed(self) -> bool:
        """The runner saw this agent start in a fresh workspace and leave it unchanged."""
        return self.start_error is None and self.before.fresh and self.workspace_change is None

    @property
    def problem(self) -> str | None:
        """Why this run's output cannot count as a result, or None."""
        found: list[str] = []
        if self.start_error is not None:
            found.append(f"the agent could not start: {self.start_error}")
        elif self.stdout_truncated:
            found.append(
                f"its output went over {MAX_RESULT_TEXT}: the runner stopped reading and killed it"
            )
        elif self.timed_out:
            found.append(
                f"the agent did not finish within {self.timeout:g} s; it and its "
                "processes were killed"
            )
        elif self.exit_status is None:
            found.append("the runner could not collect its exit status")
        elif self.exit_status < 0:
            found.append(f"the agent was killed by signal {-self.exit_status}")
        elif self.exit_status != 0:
            found.append(f"the agent exited with status {self.exit_status}")
        elif "stdout" in self.output_held:
            found.append(
                "it exited 0 but a process it left behind held its output; the runner "
                f"killed it and kept the {len(self.stdout)} bytes printed by then"
            )
        change = self.workspace_change
        if change is not None:
            found.append(f"its workspace changed: {change}")
        if self.survivors:
            found.append(f"processes it left survived the runner: {_processes(self.survivors)}")
        return "; ".join(found) if found else None

    def observed(self) -> list[str]:
        """What the runner saw of this agent, in plain words."""
        slot = f"agent {self.slot}"
        if self.start_error is not None:
            return [f"{slot} could not start ({self.start_error}); nothing else was observed"]
        if self.run_as.dedicated:
            user = (
                f"{slot} ran as dedicated uid {self.run_as.uid} and gid {self.run_as.gid}, "
                "with no supplementary groups, no passwd entry and no process running as it "
                "beforehand"
            )
        else:
            user = (
                f"{slot} ran as the runner's own uid {self.run_as.uid}: its workspace was "
                "read-only by mode bits only, and it could read and write whatever that "
                "user can"
            )
        before = self.before
        workspace = (
            f"its workspace was a new, empty directory (mode {before.mode or 0:04o}, owner "
            f"uid {before.owner_uid}) when it started"
            if before.fresh
            else f"its workspace was not a fresh empty directory when it started ({before.kind})"
        )
        change = self.workspace_change
        workspace += (
            ", and unchanged (entries, mode, owner, mtime, ctime) after it ended"
            if change is None
            else f", and afterwards {change}"
        )
        names = ", ".join(self.env_names)
        notes = [
            user,
            workspace,
            f"its environment held only {names}; its stdin was the {self.stdin_bytes} "
            "capsule bytes; it had no controlling terminal",
        ]
        if self.left_running:
            notes.append(
                f"{len(self.left_running)} other process(es) of it were still running when "
                f"it ended and were killed: {_processes(self.left_running)}"
            )
        return [f"{slot}: {note}" if index else note for index, note in enumerate(notes)]

    def to_json(self) -> dict[str, Any]:
        started = self.start_error is None
        return {
            "slot": self.slot,
            "argv": [shown(arg) for arg in self.argv],
            "user": self.run_as.to_json(),
            "env_names": list(self.env_names),
            "passed_env": list(self.passed_env),
            "limits": self.limits.to_json(),
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "duration_ms": self.duration_ms,
            "start_error": self.start_error,
            "exit_status": self.exit_status,
            "timed_out": self.timed_out,
            # The hash of exactly the bytes the verdict judged (results[].sha256).
            "stdout_sha256": sha256_hex(self.stdout) if started else None,
            "stdout_bytes": len(self.stdout),
            "stdout_truncated": self.stdout_truncated,
            "stderr_tail": _text(self.stderr_tail),
            "stderr_bytes": self.stderr_bytes,
            "output_held": list(self.output_held),
            "left_running": [p.to_json() for p in self.left_running[:MAX_LISTED_PROCESSES]],
            "survivors": [p.to_json() for p in self.survivors[:MAX_LISTED_PROCESSES]],
            "workspace": {
                "path": shown(self.workspace),
                "before": self.before.to_json(),
                "after": self.after.to_json(),
                "changed": self.workspace_change,
            },
            "observed": self.observed(),
        }


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _processes(found: Sequence[Process]) -> str:
    shown = ", ".join(f"{p.pid} ({p.name})" for p in found[:MAX_LISTED_PROCESSES])
    more = len(found) - MAX_LISTED_PROCESSES
    return shown + (f" and {more} more" if more > 0 else "")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- before anything runs -------------------------------------------------------


def parse_command(command: str, option: str) -> tuple[str, ...]:
    """Split CMD like a POSIX shell would (no shell runs it) and resolve its
    program now, against the runner's PATH and cwd: the agent's own cwd is its
    empty workspace."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(
            f"{option}: cannot split {shown(command)!r}: {exc}", code="agent_command_invalid"
        ) from None
    if not argv:
        raise UsageError(f"{option}: the command is empty", code="agent_command_invalid")
    program = argv[0]
    found = program if "/" in program else shutil.which(program)
    # Absolute: the agent starts in its workspace, not in our cwd.
    found = None if found is None else os.path.abspath(found)
    if found is None or not os.path.isfile(found):
        raise UsageError(
            f"{option}: {shown(program)}: no such program" + ("" if "/" in program else " on PATH"),
            code="agent_not_found",
            program=shown(program),
        )
    return (found, *argv[1:])


def check_executable(program: str, option: str, run_as: RunAs, agent_path: str) -> None:
    """Refuse, before anything starts, a program the agent's user cannot run.

    A dedicated uid owns nothing and belongs to no group, so only the "others"
    permission bits speak for it: every folder on the way must be searchable,
    the program executable and, for a script, readable, and so its interpreter
    (ACLs are not consulted). Otherwise the agent runs as the runner's own
    user, and ``os.access`` answers for it.
    """
    if run_as.dedicated:
        problem = _others_cannot_run(program, agent_path, depth=0)
    else:
        problem = None if os.access(program, os.X_OK) else f"{program} is not executable"
    if problem is not None:
        raise UsageError(
            f"{option}: {shown(program)}: the agent's user ({run_as.describe()}) cannot run "
            f"it: {shown(problem)}",
            code="agent_not_executable",
            program=shown(program),
        )


def _folders(path: str) -> Iterator[str]:
    """Every folder the kernel walks to reach ``path``, as named and as resolved."""
    seen: set[str] = set()
    for full in (os.path.abspath(path), os.path.realpath(path)):
        folder = os.path.dirname(full)
        while folder not in seen:
            seen.add(folder)
            yield folder
            folder = os.path.dirname(folder)


def _shebang(path: str) -> tuple[str, str] | None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", errors="replace").strip()
    interpreter, _, argument = line.partition(" ")
    return interpreter, argument.strip()


def _others_cannot_run(path: str, agent_path: str, *, depth: int) -> str | None:
    for folder in _folders(path):
        try:
            mode = os.stat(folder).st_mode
        except OSError as exc:
            return f"{folder}: {exc.strerror}"
        if not mode & stat.S_IXOTH:
            return f"{folder} is not searchable by others (mode {stat.S_IMODE(mode):04o})"
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    mode = stat.S_IMODE(st.st_mode)
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    if not mode & stat.S_IXOTH:
        return f"{path} is not executable by others (mode {mode:04o})"
    script = _shebang(path)
    if script is None or depth >= 4:
        return None
    if not mode & stat.S_IROTH:
        return f"{path} is a script that others cannot read (mode {mode:04o})"
    interpreter, argument = script
    problem = _others_cannot_run(interpreter, agent_path, depth=depth + 1)
    if problem is not None or os.path.basename(interpreter) != "env":
        return problem
    # `#!/usr/bin/env NAME`: NAME is looked up on the agent's PATH, not ours.
    name = next((word for word in argument.split() if not word.startswith("-")), None)
    if name is None:
        return None
    found = shutil.which(name, path=agent_path)
    if found is None:
        return f"its interpreter {name} is not on the agent's PATH ({agent_path})"
    return _others_cannot_run(found, agent_path, depth=depth + 1)


def check_pass_env(names: Sequence[str], environ: Mapping[str, str]) -> tuple[str, ...]:
    for name in names:
        if not _ENV_NAME.match(name):
            raise UsageError(
                f"--pass-env {name!r}: not an environment variable name", code="pass_env_invalid"
            )
        if name in RESERVED_ENV:
            raise UsageError(
                f"--pass-env {name}: the runner sets {name} itself "
                f"(reserved: {', '.join(sorted(RESERVED_ENV))})",
                code="pass_env_reserved",
            )
        if name not in environ:
            raise UsageError(
                f"--pass-env {name}: {name} is not set in this environment",
                code="pass_env_unset",
            )
    return tuple(sorted(set(names)))


def agent_environment(
    slot: str, workspace: str, passed: Sequence[str], environ: Mapping[str, str]
) -> dict[str, str]:
    env = {
        "PATH": DEFAULT_PATH,
        "LANG": LOCALE,
        "LC_ALL": LOCALE,
        "HOME": workspace,
        SLOT_VARIABLE: slot,
    }
    env.update({name: environ[name] for name in passed})
    return env


def agent_path(passed: Sequence[str], environ: Mapping[str, str]) -> str:
    """The PATH the agents will see."""
    return environ["PATH"] if "PATH" in passed else DEFAULT_PATH


# -- users ----------------------------------------------------------------------


def agent_users(count: int = len(SLOTS)) -> tuple[RunAs, ...]:
    """Whom the agents run as: root gives each its own unused uid and gid;
    anyone else runs them as themselves (then only the mode bits and the
    emptiness check guard the workspace)."""
    if os.geteuid() == 0:
        return tuple(RunAs(None, number, number, True) for number in _unused_ids(count))
    uid = os.geteuid()
    try:
        name: str | None = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = None
    return tuple(RunAs(name, uid, os.getegid(), False) for _ in range(count))


def _mapped(path: str) -> Ranges:
    """The ids this user namespace can use, as inclusive ranges."""
    try:
        with open(path, encoding="ascii") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return [(0, 0xFFFFFFFE)]
    ranges = []
    for line in lines:
        inside, _, length = (int(word) for word in line.split())
        ranges.append((inside, inside + length - 1))
    return ranges


Ranges = list[tuple[int, int]]


def _intersect(first: Ranges, second: Ranges) -> Ranges:
    found = []
    for low_a, high_a in first:
        for low_b, high_b in second:
            low, high = max(low_a, low_b), min(high_a, high_b)
            if low <= high:
                found.append((low, high))
    return found


def _unused_ids(count: int) -> list[int]:
    """``count`` distinct numbers, each free as a uid and as a gid: no passwd or
    group entry, and no process running with it."""
    ranges = _intersect(
        _intersect([DEDICATED_IDS], _mapped("/proc/self/uid_map")), _mapped("/proc/self/gid_map")
    )
    busy: set[int] = set()
    for process in list_processes():
        busy.update(process.uids)
        busy.update(process.gids)
    chosen: list[int] = []
    for _ in range(1000):
        if len(chosen) == count or not ranges:
            break
        low, high = ranges[secrets.randbelow(len(ranges))]
        candidate = low + secrets.randbelow(high - low + 1)
        if candidate in busy or candidate in chosen or _has_entry(candidate):
            continue
        chosen.append(candidate)
    if len(chosen) < count:
        raise UsageError(
            "cannot find unused ids for the agents between "
            f"{DEDICATED_IDS[0]} and {DEDICATED_IDS[1]} in this user namespace",
            code="agent_user_unavailable",
        )
    return chosen


def _has_entry(number: int) -> bool:
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(number)
        except KeyError:
            continue
        return True
    return False


# -- processes --------------------------------------------------------------------


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
        name=_text(head.partition(b"(")[2]),
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


def _alive(process: Process) -> bool:
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
        live = [p for p in list_processes() if _alive(p) and match(p)]
        if not live:
            return list(killed.values()), []
        if time.monotonic() > deadline:
            return list(killed.values()), live
        for process in live:
            _kill_if(process.pid, match)
            killed.setdefault(process.pid, process)
        time.sleep(0.01)


# -- the runner process itself ----------------------------------------------------


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> None:
    zero = ctypes.c_ulong(0)
    if _libc().prctl(option, ctypes.c_ulong(value), zero, zero, zero) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"prctl({option}): {os.strerror(number)}")


def make_undumpable() -> None:
    """Make /proc/<runner>/{environ,cwd,fd,maps,...} root-only: an agent running
    as the runner's own uid must not read the runner's environment (the values
    behind --pass-env and everything else) or follow its file descriptors.
    /proc/<pid>/cmdline stays world-readable, as for every process."""
    _prctl(_PR_SET_DUMPABLE, 0)


class _StopSignals:
    """While agents run, SIGTERM and SIGHUP only note that the runner must stop;
    the runner checks between steps, kills its agents, removes their workspaces
    and raises ``Interrupted``. Outside the main thread (no signals there), it
    does nothing."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _StopSignals:
        if threading.current_thread() is threading.main_thread():
            for number in self.SIGNALS:
                self._previous[number] = signal.signal(number, self._note)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _note(self, number: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = number

    def check(self) -> None:
        if self.received is None:
            return
        name = signal.Signals(self.received).name
        kind = HungUp if self.received == signal.SIGHUP else Interrupted
        raise kind(
            f"stopped by {name} while the agents ran: every agent process was killed and "
            "the workspaces were removed; no verdict",
            code="interrupted",
            signal=name,
        )


# -- workspaces -----------------------------------------------------------------


def observe(path: str) -> Observation:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return Observation("missing")
    if not stat.S_ISDIR(st.st_mode):
        return Observation("not_a_directory", mode=stat.S_IMODE(st.st_mode), owner_uid=st.st_uid)
    try:
        entries: tuple[str, ...] | None = tuple(
            _text(os.fsencode(name)) for name in sorted(os.listdir(path))
        )
    except OSError:
        entries = None
    return Observation(
        "directory",
        mode=stat.S_IMODE(st.st_mode),
        owner_uid=st.st_uid,
        mtime_ns=st.st_mtime_ns,
        ctime_ns=st.st_ctime_ns,
        entries=entries,
    )


def workspace_change(before: Observation, after: Observation) -> str | None:
    """How the workspace differs from the empty, read-only one the agent got."""
    if after.kind != "directory":
        return "it was removed or replaced"
    if after.entries is None:
        return "it can no longer be listed"
    if after.entries:
        count = len(after.entries)
        shown = ", ".join(repr(name) for name in after.entries[:MAX_LISTED_ENTRIES])
        more = "" if count <= MAX_LISTED_ENTRIES else f" and {count - MAX_LISTED_ENTRIES} more"
        return f"it holds {count} {'entry' if count == 1 else 'entries'}: {shown}{more}"
    if after.mode != before.mode:
        return f"its mode changed from {before.mode or 0:04o} to {after.mode or 0:04o}"
    if after.owner_uid != before.owner_uid:
        return "its owner changed"
    if (after.mtime_ns, after.ctime_ns) != (before.mtime_ns, before.ctime_ns):
        return "it was modified (entries were created and removed)"
    return None


def _make_workspace(slot: str) -> str:
    path = tempfile.mkdtemp(prefix=f"capsule-agent-{slot}-")
    os.chmod(path, WORKSPACE_MODE)
    return path


def _remove_workspace(path: str) -> None:
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    shutil.rmtree(path, ignore_errors=True)


# -- one agent ------------------------------------------------------------------


def _limits(run_as: RunAs) -> Limits:
    def capped(kind: int, wanted: int) -> int:
        hard = resource.getrlimit(kind)[1]
        return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)

    nproc = capped(resource.RLIMIT_NPROC, NPROC_LIMIT) if run_as.dedicated else None
    return Limits(nproc=nproc, fsize=capped(resource.RLIMIT_FSIZE, FSIZE_LIMIT))


def _limiter(limits: Limits) -> Callable[[], None]:
    """What the child runs between fork and exec, after it took the agent's uid.

    A ``preexec_fn`` can deadlock when other threads hold locks at fork time;
    the runner has no other threads (one loop serves both agents) and resolves
    ``prctl`` before forking, so the child only makes system calls."""
    prctl = _libc().prctl
    zero = ctypes.c_ulong(0)

    def apply() -> None:
        if limits.nproc is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.nproc, limits.nproc))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.fsize, limits.fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # Setuid programs cannot lift the agent back out of its uid.
        if prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), zero, zero, zero) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")

    return apply


@dataclass
class _Agent:
    """An agent while it runs: what it was given, and what came back so far."""

    slot: str
    argv: tuple[str, ...]
    run_as: RunAs
    env: dict[str, str]
    passed: tuple[str, ...]
    limits: Limits
    workspace: str
    before: Observation
    timeout: float
    started_at: str = ""
    clock: float = 0.0
    process: subprocess.Popen[bytes] | None = None
    start_error: str | None = None
    stdin: memoryview = field(default_factory=lambda: memoryview(b""))
    stdout: bytearray = field(default_factory=bytearray)
    stdout_truncated: bool = False
    stderr_tail: bytearray = field(default_factory=bytearray)
    stderr_bytes: int = 0
    exit_status: int | None = None
    exited_at: float | None = None
    timed_out: bool = False
    output_held: list[str] = field(default_factory=list)
    give_up_at: float | None = None
    left_running: dict[int, Process] = field(default_factory=dict)
    survivors: list[Process] = field(default_factory=list)
    stdin_bytes: int = 0
    pipes: dict[int, tuple[str, IO[bytes]]] = field(default_factory=dict)
    ended_at: str = ""
    duration_ms: int = 0

    @property
    def deadline(self) -> float:
        return self.clock + self.timeout

    @property
    def done(self) -> bool:
        return self.process is None or (
            (self.exit_status is not None or self.give_up_at is not None) and not self.open_output
        )

    @property
    def open_output(self) -> list[str]:
        return sorted(name for name, _ in self.pipes.values() if name != "stdin")

    def belongs(self, process: Process) -> bool:
        """Is ``process`` this agent's? Its dedicated uid says so wherever the
        process went; without one, only its session does (``setsid`` escapes)."""
        if self.run_as.dedicated:
            return self.run_as.uid in process.uids
        return self.process is not None and process.session == self.process.pid

    def kill(self) -> None:
        """Kill the agent and everything of it that still runs, noting the rest."""
        if self.process is None:
            return
        if self.process.returncode is not None and not self.run_as.dedicated:
            return  # reaped: its pid, and so its session id, may belong to another now
        killed, survivors = kill_matching(self.belongs)
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                # Its session's first group too (already covered by the above);
                # the agent is unreaped, so that id is still its own.
                os.killpg(self.process.pid, signal.SIGKILL)
        for process in killed:
            if process.pid != self.process.pid:
                self.left_running.setdefault(process.pid, process)
        self.survivors = survivors

    def result(self, after: Observation) -> AgentRun:
        return AgentRun(
            slot=self.slot,
            argv=self.argv,
            run_as=self.run_as,
            env_names=tuple(sorted(self.env)),
            passed_env=self.passed,
            limits=self.limits,
            started_at=self.started_at,
            ended_at=self.ended_at,
            duration_ms=self.duration_ms,
            timeout=self.timeout,
            start_error=self.start_error,
            exit_status=self.exit_status,
            timed_out=self.timed_out,
            stdout=bytes(self.stdout),
            stdout_truncated=self.stdout_truncated,
            stderr_tail=bytes(self.stderr_tail),
            stderr_bytes=self.stderr_bytes,
            output_held=tuple(self.output_held),
            left_running=tuple(self.left_running.values()),
            survivors=tuple(self.survivors),
            stdin_bytes=self.stdin_bytes,
            workspace=self.workspace,
            before=self.before,
            after=after,
        )


def _start(agent: _Agent, capsule: bytes, selector: selectors.BaseSelector) -> None:
    options: dict[str, Any] = {}
    if agent.run_as.dedicated:
        options = {"user": agent.run_as.uid, "group": agent.run_as.gid, "extra_groups": []}
    agent.started_at, agent.clock = _now(), time.monotonic()
    try:
        agent.process = subprocess.Popen(
            list(agent.argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=agent.workspace,
            env=agent.env,
            close_fds=True,
            # A session of its own: no controlling terminal to read or inject
            # into, and a process group (id = its pid) to kill as a whole.
            start_new_session=True,
            # Safe here: see _limiter (no other threads, no locks taken).
            preexec_fn=_limiter(agent.limits),  # noqa: PLW1509
            **options,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        who = f" as {agent.run_as.describe()}" if agent.run_as.dedicated else ""
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        agent.start_error = f"cannot execute {shown(agent.argv[0])}{who}: {shown(reason)}"
        return
    agent.stdin = memoryview(capsule)
    agent.stdin_bytes = len(capsule)
    process = agent.process
    for stream, name, events in (
        (process.stdin, "stdin", selectors.EVENT_WRITE),
        (process.stdout, "stdout", selectors.EVENT_READ),
        (process.stderr, "stderr", selectors.EVENT_READ),
    ):
        assert stream is not None
        os.set_blocking(stream.fileno(), False)
        selector.register(stream.fileno(), events, (agent, name))
        agent.pipes[stream.fileno()] = (name, stream)


def _close(agent: _Agent, fd: int, selector: selectors.BaseSelector) -> None:
    pipe = agent.pipes.pop(fd, None)
    if pipe is not None:
        selector.unregister(fd)
        with contextlib.suppress(OSError):
            pipe[1].close()


def _exit_status(pid: int) -> int | None:
    """The agent's exit status once it has ended, without reaping it: while it
    is an unreaped zombie, neither its pid nor its group id can be reused."""
    try:
        ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return None
    if ended is None:
        return None
    if ended.si_code == os.CLD_EXITED:
        return ended.si_status
    return -ended.si_status


def _transfer(agent: _Agent, fd: int, name: str, selector: selectors.BaseSelector) -> None:
    try:
        if name == "stdin":
            written = os.write(fd, agent.stdin[:READ_CHUNK])
            agent.stdin = agent.stdin[written:]
            if not agent.stdin:
                _close(agent, fd, selector)
            return
        # Never hold more than one byte over the limit.
        wanted = READ_CHUNK if name == "stderr" else MAX_RESULT_BYTES + 1 - len(agent.stdout)
        data = os.read(fd, wanted)
    except BlockingIOError:
        return
    except OSError:  # the agent closed its end (EPIPE on stdin) or it broke
        _close(agent, fd, selector)
        return
    if not data:
        _close(agent, fd, selector)
    elif name == "stderr":
        agent.stderr_bytes += len(data)
        agent.stderr_tail = (agent.stderr_tail + data)[-STDERR_TAIL_BYTES:]
    else:
        agent.stdout += data
        if len(agent.stdout) > MAX_RESULT_BYTES:
            del agent.stdout[MAX_RESULT_BYTES:]
            agent.stdout_truncated = True
            _close(agent, fd, selector)
            agent.kill()
            agent.give_up_at = time.monotonic() + KILL_GRACE_SECONDS


def _advance(agent: _Agent, now: float, selector: selectors.BaseSelector) -> None:
    """Move one agent on: notice its exit, its timeout, output held open after
    it exited, and pipes that will not close even after a kill."""
    process = agent.process
    if process is None or agent.done:
        return
    if agent.exit_status is None:
        agent.exit_status = _exit_status(process.pid)
        if agent.exit_status is not None:
            agent.exited_at = now
    if agent.exit_status is None and agent.give_up_at is None and now >= agent.deadline:
        agent.timed_out = True
        agent.kill()
        agent.give_up_at = now + KILL_GRACE_SECONDS
    elif (
        agent.exited_at is not None
        and agent.give_up_at is None
        and now >= agent.exited_at + EOF_GRACE_SECONDS
    ):
        # It exited, but something it started still holds its output open.
        agent.output_held = agent.open_output
        agent.kill()
        agent.give_up_at = now + KILL_GRACE_SECONDS
    if agent.give_up_at is not None and now >= agent.give_up_at:
        for fd in list(agent.pipes):
            _close(agent, fd, selector)


def _supervise(
    agents: Sequence[_Agent], selector: selectors.BaseSelector, stop: _StopSignals
) -> None:
    """Feed, read and watch all agents from this one thread until each has
    ended and its output is closed (or given up on)."""
    while True:
        stop.check()
        now = time.monotonic()
        for agent in agents:
            _advance(agent, now, selector)
            if agent.done and not agent.ended_at:
                agent.ended_at = _now()
                agent.duration_ms = int((time.monotonic() - agent.clock) * 1000)
                # Whatever it left dies now, not when the other agent is done.
                agent.kill()
        if all(agent.done for agent in agents):
            return
        for key, _ in selector.select(POLL_SECONDS):
            agent, name = key.data
            _transfer(agent, key.fd, name, selector)


def _finish(agent: _Agent, selector: selectors.BaseSelector) -> AgentRun:
    """Kill what the agent left, reap it, and look at its workspace again."""
    if agent.process is not None:
        for fd in list(agent.pipes):
            _close(agent, fd, selector)
        agent.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            agent.process.wait(timeout=KILL_GRACE_SECONDS)
        if agent.exit_status is None:
            agent.exit_status = agent.process.returncode
    if not agent.ended_at:
        agent.ended_at = _now()
        agent.duration_ms = int((time.monotonic() - agent.clock) * 1000) if agent.clock else 0
    return agent.result(observe(agent.workspace))


def run_agents(
    capsule: bytes,
    commands: Sequence[tuple[str, ...]],
    *,
    timeout: float,
    users: Sequence[RunAs],
    passed: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> tuple[AgentRun, ...]:
    """Run one agent per slot, concurrently, each under ``timeout`` seconds."""
    environ = os.environ if environ is None else environ
    make_undumpable()
    agents: list[_Agent] = []
    selector = selectors.DefaultSelector()
    with _StopSignals() as stop, contextlib.ExitStack() as cleanup:
        cleanup.callback(selector.close)
        try:
            for slot, argv, run_as in zip(SLOTS, commands, users, strict=True):
                stop.check()
                workspace = _make_workspace(slot)
                cleanup.callback(_remove_workspace, workspace)
                agents.append(
                    _Agent(
                        slot=slot,
                        argv=argv,
                        run_as=run_as,
                        env=agent_environment(slot, workspace, passed, environ),
                        passed=tuple(passed),
                        limits=_limits(run_as),
                        workspace=workspace,
                        before=observe(workspace),
                        timeout=timeout,
                    )
                )
            for agent in agents:
                _start(agent, capsule, selector)
            _supervise(agents, selector, stop)
            runs = tuple(_finish(agent, selector) for agent in agents)
            stop.check()
        except BaseException:
            # Interrupted (SIGTERM, SIGHUP, Ctrl-C) or broken: nothing of the
            # agents may outlive the runner.
            for agent in agents:
                for fd in list(agent.pipes):
                    _close(agent, fd, selector)
                agent.kill()
                if agent.process is not None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        agent.process.wait(timeout=KILL_GRACE_SECONDS)
            raise
    return runs


# -- what the run adds up to ------------------------------------------------------


NOT_OBSERVED = (
    "not observed: what an agent read or sent outside its workspace (files its user can "
    "read, other processes' command lines, the network), nor what a model behind it "
    "remembers; agent identity is its own claim"
)


def attestation(runs: Sequence[AgentRun], evidence_sha256: str) -> Attestation:
    """What the verdict may say the runner observed, given kept evidence."""
    observed = [note for run in runs for note in run.observed()]
    return Attestation(
        evidence_sha256=evidence_sha256,
        observed=(*observed, NOT_OBSERVED),
        workspaces_observed=bool(runs) and all(run.workspace_observed for run in runs),
    )


def evidence(
    runs: Sequence[AgentRun],
    *,
    capsule_sha256: str,
    prompt_sha256: str,
    timeout: float,
    version: str,
) -> dict[str, Any]:
    return {
        "schema": EVIDENCE_SCHEMA,
        "capsule_version": version,
        "capsule_sha256": capsule_sha256,
        "prompt_sha256": prompt_sha256,
        "timeout_ms": max(1, round(timeout * 1000)),
        "runner_euid": os.geteuid(),
        "agents": [run.to_json() for run in runs],
    }
