"""One agent while it runs: what it was given, what came back so far, which
processes are its own, and the record of its run once it ends."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import IO

from governance.continuation.delivery import PROMPT_VARIABLE, Delivery
from governance.continuation.evidence import AgentRun
from governance.continuation.isolation import Isolation
from governance.continuation.limits import Limits
from governance.continuation.processes import Process, alive, kill_matching, list_processes
from governance.continuation.users import RunAs
from governance.continuation.workspace import Observation

# How long an isolated agent's namespace may take to go once bwrap has exited.
SETTLE_SECONDS = 1.0


@dataclass
class RunningAgent:
    """An agent while it runs: what it was given, and what came back so far."""

    slot: str
    argv: tuple[str, ...]
    run_as: RunAs
    env: dict[str, str]
    passed: tuple[str, ...]
    limits: Limits
    workspace: str
    before: Observation
    delivery: Delivery
    timeout: float
    isolation: Isolation
    # What is executed: argv itself, or bwrap running it isolated.
    command: tuple[str, ...] = ()
    # The seccomp filter bwrap reads, handed to it and closed here once started.
    seccomp_fd: int | None = None
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

    def settle(self) -> None:
        """Isolated, an agent that ended takes its PID namespace with it: bwrap
        reports the exit a moment before the namespace's first process is gone.
        Give that teardown a moment, so only what really outlived it counts as
        left running."""
        if self.process is None or not self.isolation.enforced:
            return
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline:
            if not any(alive(p) and self.belongs(p) for p in list_processes()):
                return
            time.sleep(0.01)

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

    def result(self, after: Observation, prompt_after: str | None) -> AgentRun:
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
            delivery=self.delivery,
            prompt_after=prompt_after,
            isolation=self.isolation,
            prompt_file=self.env[PROMPT_VARIABLE],
        )
