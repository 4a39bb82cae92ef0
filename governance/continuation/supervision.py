"""Running the agents: start each with its workspace, environment, user and
limits, feed and read them all from one thread, notice exits, timeouts and
output held open, and kill whatever an agent leaves behind."""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from governance.continuation import prompt
from governance.continuation.agent import RunningAgent
from governance.continuation.delivery import prepare, read_back
from governance.continuation.delivery import remove as remove_input
from governance.continuation.evidence import AgentRun
from governance.continuation.isolation import Isolation, close_quietly, launch, not_isolated
from governance.continuation.limits import limiter, limits_for, make_undumpable
from governance.continuation.preflight import agent_environment, agent_path, program_chain
from governance.continuation.result import MAX_RESULT_BYTES
from governance.continuation.stopping import StopSignals
from governance.continuation.users import SLOTS, RunAs
from governance.continuation.workspace import (
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
# before the runner decides a process it left behind is holding it open. An
# isolated agent's PID namespace goes a moment after bwrap reports the exit,
# and on a loaded machine (two cores, two suites) that moment passed 0.5 s.
EOF_GRACE_SECONDS = 2.0
# Before that verdict, at most this many reads of what is ready now: a runner
# descheduled past the grace finds the end of file waiting behind the data.
DRAIN_ROUNDS = 64
# After a kill, how long to wait for the pipes to close before giving up on them.
KILL_GRACE_SECONDS = 2.0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _start(agent: RunningAgent, capsule: bytes, selector: selectors.BaseSelector) -> None:
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


def _close(agent: RunningAgent, fd: int, selector: selectors.BaseSelector) -> None:
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


def _transfer(agent: RunningAgent, fd: int, name: str, selector: selectors.BaseSelector) -> None:
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


def _advance(agent: RunningAgent, now: float, selector: selectors.BaseSelector) -> None:
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
        _drain(agent, selector)
        if agent.open_output:
            # It exited, but something it started still holds its output open.
            agent.output_held = agent.open_output
            agent.kill()
            agent.give_up_at = now + KILL_GRACE_SECONDS
    if agent.give_up_at is not None and now >= agent.give_up_at:
        for fd in list(agent.pipes):
            _close(agent, fd, selector)


def _drain(agent: RunningAgent, selector: selectors.BaseSelector) -> None:
    """Read what ``agent``'s output pipes hold now, up to their end of file where
    it is there already (bounded: a process it left may write without end)."""
    for _ in range(DRAIN_ROUNDS):
        ready = [
            key for key, _ in selector.select(0) if key.data[0] is agent and key.data[1] != "stdin"
        ]
        if not ready:
            return
        for key in ready:
            _transfer(agent, key.fd, key.data[1], selector)


def _supervise(
    agents: Sequence[RunningAgent], selector: selectors.BaseSelector, stop: StopSignals
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


def _finish(agent: RunningAgent, selector: selectors.BaseSelector) -> AgentRun:
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
    agents: list[RunningAgent] = []
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
                    RunningAgent(
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
