"""Running the two agents of a continuation proof, and recording what we saw.

Each agent gets a new, empty, read-only temporary directory as its working
directory, the capsule bytes on stdin, no arguments beyond its own command
line, and an environment of exactly PATH, a UTF-8 locale, HOME (its empty
workspace), CAPSULE_AGENT_SLOT and the names the caller passes on. Run as
root, the agent runs as an unprivileged user, so the operating system, not
only a mode bit, keeps the workspace read-only. Either way the workspace is
observed before and after, and anything that changed it fails the agent.

This is not a sandbox: an agent can still reach the network and whatever its
user can read. The evidence records what the runner gave and saw, nothing more.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from governance.errors import UsageError
from governance.hashing import sha256_hex

EVIDENCE_SCHEMA = "continuation-evidence/1"
SLOTS = ("a", "b")

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
LOCALE = "C.UTF-8"
SLOT_VARIABLE = "CAPSULE_AGENT_SLOT"
# Names the runner sets itself; passing them on would undo the fresh start.
RESERVED_ENV = frozenset({"HOME", "LANG", "LC_ALL", SLOT_VARIABLE})
UNPRIVILEGED_USER = "nobody"
UNPRIVILEGED_FALLBACK_ID = 65534

WORKSPACE_MODE = 0o555
STDERR_TAIL_BYTES = 4096
MAX_LISTED_ENTRIES = 20
# After a kill, how long to wait for the pipes to close before giving up on them.
KILL_GRACE_SECONDS = 5.0

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class RunAs:
    """The user an agent runs as."""

    name: str | None
    uid: int
    gid: int
    privilege_dropped: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "uid": self.uid,
            "gid": self.gid,
            "privilege_dropped": self.privilege_dropped,
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
class AgentRun:
    """One agent's invocation as the runner observed it."""

    slot: str
    argv: tuple[str, ...]
    run_as: RunAs
    env_names: tuple[str, ...]
    passed_env: tuple[str, ...]
    started_at: str
    ended_at: str
    duration_ms: int
    timeout: float
    start_error: str | None
    exit_status: int | None
    timed_out: bool
    stdout: bytes
    stderr: bytes
    workspace: str
    before: Observation
    after: Observation

    @property
    def workspace_change(self) -> str | None:
        return workspace_change(self.before, self.after)

    @property
    def problem(self) -> str | None:
        """Why this run's output cannot count as a result, or None."""
        found: list[str] = []
        if self.start_error is not None:
            found.append(f"the agent could not start: {self.start_error}")
        elif self.timed_out:
            found.append(
                f"the agent did not finish within {self.timeout:g} s; its process group was killed"
            )
        elif self.exit_status is not None and self.exit_status < 0:
            found.append(f"the agent was killed by signal {-self.exit_status}")
        elif self.exit_status != 0:
            found.append(f"the agent exited with status {self.exit_status}")
        change = self.workspace_change
        if change is not None:
            found.append(f"its workspace changed: {change}")
        return "; ".join(found) if found else None

    def to_json(self) -> dict[str, Any]:
        return {
            "slot": self.slot,
            "argv": list(self.argv),
            "user": self.run_as.to_json(),
            "env_names": list(self.env_names),
            "passed_env": list(self.passed_env),
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "duration_ms": self.duration_ms,
            "start_error": self.start_error,
            "exit_status": self.exit_status,
            "timed_out": self.timed_out,
            "stdout_sha256": sha256_hex(self.stdout),
            "stdout_bytes": len(self.stdout),
            "stderr_tail": _text(self.stderr[-STDERR_TAIL_BYTES:]),
            "stderr_bytes": len(self.stderr),
            "workspace": {
                "path": _text(os.fsencode(self.workspace)),
                "before": self.before.to_json(),
                "after": self.after.to_json(),
                "changed": self.workspace_change,
            },
        }


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_command(command: str, option: str) -> tuple[str, ...]:
    """Split CMD like a POSIX shell would (no shell runs it) and resolve its
    program now, against the runner's PATH and cwd: the agent's own cwd is its
    empty workspace."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(
            f"{option}: cannot split {command!r}: {exc}", code="agent_command_invalid"
        ) from None
    if not argv:
        raise UsageError(f"{option}: the command is empty", code="agent_command_invalid")
    program = argv[0]
    found = program if "/" in program else shutil.which(program)
    # Absolute: the agent starts in its workspace, not in our cwd.
    found = None if found is None else os.path.abspath(found)
    if found is None or not os.path.isfile(found):
        raise UsageError(
            f"{option}: {program}: no such program" + ("" if "/" in program else " on PATH"),
            code="agent_not_found",
            program=program,
        )
    if not os.access(found, os.X_OK):
        raise UsageError(
            f"{option}: {found}: not executable", code="agent_not_executable", program=program
        )
    return (found, *argv[1:])


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


def agent_user() -> RunAs:
    """Whom agents run as: root hands them to an unprivileged user; anyone
    else runs them as themselves (then only the mode bits and the emptiness
    check guard the workspace)."""
    if os.geteuid() == 0:
        try:
            entry = pwd.getpwnam(UNPRIVILEGED_USER)
        except KeyError:
            return RunAs(None, UNPRIVILEGED_FALLBACK_ID, UNPRIVILEGED_FALLBACK_ID, True)
        return RunAs(entry.pw_name, entry.pw_uid, entry.pw_gid, True)
    uid = os.geteuid()
    try:
        name: str | None = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = None
    return RunAs(name, uid, os.getegid(), False)


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
        return f"its mode changed from {before.mode:04o} to {after.mode:04o}"
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


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


@dataclass
class _Started:
    slot: str
    argv: tuple[str, ...]
    env: dict[str, str]
    workspace: str
    before: Observation
    started_at: str
    clock: float
    process: subprocess.Popen[bytes] | None
    start_error: str | None


def _start(
    slot: str,
    argv: tuple[str, ...],
    run_as: RunAs,
    passed: Sequence[str],
    environ: Mapping[str, str],
) -> _Started:
    workspace = _make_workspace(slot)
    before = observe(workspace)
    env = agent_environment(slot, workspace, passed, environ)
    privilege: dict[str, Any] = {}
    if run_as.privilege_dropped:
        privilege = {"user": run_as.uid, "group": run_as.gid, "extra_groups": []}
    started_at, clock = _now(), time.monotonic()
    try:
        process: subprocess.Popen[bytes] | None = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workspace,
            env=env,
            close_fds=True,
            # Its own process group: a timeout kills the agent and its children.
            process_group=0,
            **privilege,
        )
        error = None
    except OSError as exc:
        process = None
        who = f" as user {run_as.name or run_as.uid}" if run_as.privilege_dropped else ""
        error = f"cannot execute {argv[0]}{who}: {exc.strerror or exc}"
    return _Started(slot, argv, env, workspace, before, started_at, clock, process, error)


def _finish(
    started: _Started, capsule: bytes, timeout: float, run_as: RunAs, passed: Sequence[str]
) -> AgentRun:
    stdout, stderr = b"", b""
    timed_out = False
    exit_status: int | None = None
    process = started.process
    if process is not None:
        try:
            stdout, stderr = process.communicate(capsule, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process.pid)
            try:
                stdout, stderr = process.communicate(timeout=KILL_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                # Something that left the group still holds the pipes open.
                process.kill()
                process.wait()
        # Nothing the agent started may outlive it (or write after we look).
        _kill_group(process.pid)
        exit_status = process.returncode
    ended_at = _now()
    duration_ms = int((time.monotonic() - started.clock) * 1000)
    return AgentRun(
        slot=started.slot,
        argv=started.argv,
        run_as=run_as,
        env_names=tuple(sorted(started.env)),
        passed_env=tuple(passed),
        started_at=started.started_at,
        ended_at=ended_at,
        duration_ms=duration_ms,
        timeout=timeout,
        start_error=started.start_error,
        exit_status=exit_status,
        timed_out=timed_out,
        stdout=stdout,
        stderr=stderr,
        workspace=started.workspace,
        before=started.before,
        after=observe(started.workspace),
    )


def run_agents(
    capsule: bytes,
    commands: Sequence[tuple[str, ...]],
    *,
    timeout: float,
    passed: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> tuple[AgentRun, ...]:
    """Run one agent per slot, concurrently, each under ``timeout`` seconds."""
    environ = os.environ if environ is None else environ
    run_as = agent_user()
    started: list[_Started] = []
    runs: list[AgentRun | None] = [None] * len(commands)
    failures: list[BaseException] = []
    try:
        for slot, argv in zip(SLOTS, commands, strict=True):
            started.append(_start(slot, argv, run_as, passed, environ))

        def finish(index: int) -> None:
            try:
                runs[index] = _finish(started[index], capsule, timeout, run_as, passed)
            except BaseException as exc:  # re-raised in the calling thread below
                failures.append(exc)

        threads = [
            threading.Thread(target=finish, args=(index,), name=f"agent-{item.slot}")
            for index, item in enumerate(started)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        # On an interrupt, do not leave agents running behind us.
        for item in started:
            if item.process is not None and item.process.returncode is None:
                _kill_group(item.process.pid)
        for item in started:
            _remove_workspace(item.workspace)
    if failures:
        raise failures[0]
    return tuple(run for run in runs if run is not None)


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
