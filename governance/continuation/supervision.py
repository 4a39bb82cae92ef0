"""Running the agents: start each with its workspace, environment, user and
limits, feed and read them all from one thread, notice exits, timeouts and
output held open, and kill whatever an agent leaves behind."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from governance.continuation import prompt
from governance.continuation.delivery import PROMPT_VARIABLE, Delivery, prepare, read_back
from governance.continuation.delivery import remove as remove_input
from governance.continuation.evidence import AgentRun
from governance.continuation.isolation import Isolation, close_quietly, launch, not_isolated
from governance.continuation.limits import Limits, limiter, limits_for, make_undumpable
from governance.continuation.preflight import agent_environment, agent_path, program_chain
from governance.continuation.processes import Process, alive, kill_matching, list_processes
from governance.continuation.stopping import StopSignals
from governance.continuation.users import SLOTS, RunAs
from governance.continuation.verdict import MAX_RESULT_BYTES
from governance.continuation.workspace import (
    Observation,
    make_workspace,
    observe,
    remove_workspace,
)
from governance.output import shown

PROMPT_BYTES = prompt.TEXT.encode("utf-8")
NOT_REQUESTED = not_isolated("the caller did not ask for it")
STDERR_TAIL_BYTES = 4096
READ_CHUNK = 65536

# How often the runner looks at its agents while it waits for their output.
POLL_SECONDS = 0.05
# After an agent exits, how long its output may take to reach end of file
# before the runner decides a process it left behind is holding it open.
EOF_GRACE_SECONDS = 0.5
# After a kill, how long to wait for the pipes to close before giving up on them.
KILL_GRACE_SECONDS = 2.0
# How long an isolated agent's namespace may take to go once bwrap has exited.
SETTLE_SECONDS = 1.0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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


def _start(agent: _Agent, capsule: bytes, selector: selectors.BaseSelector) -> None:
    options: dict[str, Any] = {}
    if agent.run_as.dedicated:
        options = {"user": agent.run_as.uid, "group": agent.run_as.gid, "extra_groups": []}
    agent.started_at, agent.clock = _now(), time.monotonic()
    try:
        agent.process = subprocess.Popen(
            list(agent.command or agent.argv),
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
            preexec_fn=limiter(agent.limits),  # noqa: PLW1509
            pass_fds=() if agent.seccomp_fd is None else (agent.seccomp_fd,),
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
    agents: Sequence[_Agent], selector: selectors.BaseSelector, stop: StopSignals
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
                agent.settle()
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
    return agent.result(observe(agent.workspace), read_back(agent.delivery))


def run_agents(
    capsule: bytes,
    commands: Sequence[tuple[str, ...]],
    *,
    timeout: float,
    users: Sequence[RunAs],
    passed: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    prompt_text: bytes = PROMPT_BYTES,
    isolation: Isolation = NOT_REQUESTED,
    shared: Sequence[str] = (),
) -> tuple[AgentRun, ...]:
    """Run one agent per slot, concurrently, each under ``timeout`` seconds,
    with the capsule on stdin and ``prompt_text`` in its prompt file, isolated
    in namespaces when ``isolation`` is enforced (then ``shared`` paths are
    shown to both, read-only)."""
    environ = os.environ if environ is None else environ
    make_undumpable()
    agents: list[_Agent] = []
    selector = selectors.DefaultSelector()
    with StopSignals() as stop, contextlib.ExitStack() as cleanup:
        cleanup.callback(selector.close)
        try:
            for slot, argv, run_as in zip(SLOTS, commands, users, strict=True):
                stop.check()
                workspace = make_workspace(slot)
                cleanup.callback(remove_workspace, workspace)
                delivery = prepare(slot, capsule, prompt_text)
                cleanup.callback(remove_input, delivery.folder)
                how = launch(
                    isolation,
                    argv,
                    workspace=workspace,
                    prompt_folder=delivery.folder,
                    prompt_file=delivery.prompt_path,
                    programs=program_chain(argv[0], agent_path(passed, environ)),
                    shared=shared,
                )
                if how.seccomp_fd is not None:
                    cleanup.callback(close_quietly, how.seccomp_fd)
                env = agent_environment(slot, how.home, how.prompt_file, passed, environ)
                agents.append(
                    _Agent(
                        slot=slot,
                        argv=argv,
                        run_as=run_as,
                        env={**env, **how.env},
                        passed=tuple(passed),
                        limits=limits_for(run_as),
                        workspace=workspace,
                        before=observe(workspace),
                        delivery=delivery,
                        timeout=timeout,
                        isolation=isolation,
                        command=how.command,
                        seccomp_fd=how.seccomp_fd,
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
