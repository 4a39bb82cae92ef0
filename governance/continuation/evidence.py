"""What a run adds up to: each agent's run as the runner observed it, the
evidence document (continuation-evidence/1) and the attestation a verdict may
rest on."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from governance.continuation.delivery import PROMPT_VARIABLE, Delivery
from governance.continuation.isolation import PROMPT_FOLDER, WORKSPACE, Isolation, not_isolated
from governance.continuation.limits import Limits
from governance.continuation.processes import MAX_LISTED_PROCESSES, Process, listed
from governance.continuation.result import MAX_RESULT_TEXT
from governance.continuation.users import RunAs
from governance.continuation.verdict import Attestation
from governance.continuation.workspace import Observation, workspace_change
from governance.core.hashing import sha256_hex
from governance.output import shown

EVIDENCE_SCHEMA = "continuation-evidence/1"


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
    delivery: Delivery
    # The prompt file's SHA-256 once the agent had ended (None: gone or replaced).
    prompt_after: str | None
    isolation: Isolation
    # The prompt file's path as the agent saw it.
    prompt_file: str

    @property
    def prompt_unchanged(self) -> bool:
        return self.prompt_after == self.delivery.prompt_sha256

    @property
    def prompt_delivered(self) -> bool:
        """The runner saw this agent start with its prompt file, and the file was
        the same bytes after it ended."""
        return self.start_error is None and self.prompt_unchanged

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
        if self.start_error is None and not self.prompt_unchanged:
            found.append("its prompt file was changed or replaced")
        if self.survivors:
            found.append(f"processes it left survived the runner: {listed(self.survivors)}")
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
            self._received(),
            self._isolation(),
        ]
        if self.left_running:
            notes.append(
                f"{len(self.left_running)} other process(es) of it were still running when "
                f"it ended and were killed: {listed(self.left_running)}"
            )
        return [f"{slot}: {note}" if index else note for index, note in enumerate(notes)]

    def _received(self) -> str:
        delivery = self.delivery
        after = (
            "the same bytes after it ended"
            if self.prompt_unchanged
            else "changed or replaced by the time it ended"
        )
        return (
            f"it received the capsule (sha256 {delivery.stdin_sha256}) on stdin and, in the "
            f"read-only file named by {PROMPT_VARIABLE}, the {delivery.prompt_bytes} bytes "
            f"of the prompt (sha256 {delivery.prompt_sha256}), {after}"
        )

    def _isolation(self) -> str:
        isolation = self.isolation
        if not isolation.enforced:
            return f"it was not isolated in namespaces: {isolation.reason}"
        if isolation.network == "none":
            network = (
                "no network (a network namespace of its own: its own loopback and its own "
                "abstract Unix sockets)"
            )
        else:
            network = (
                "the host's network, loopback included, and the host's abstract Unix sockets "
                "through a socketpair"
            )
        if isolation.unix_sockets_denied:
            network += "; socket(AF_UNIX) and io_uring refused"
        sizes = isolation.tmpfs_bytes
        tmp = (
            "private /tmp and /dev/shm of unbounded size (this bwrap has no --size)"
            if sizes is None
            else f"a private /tmp of {_mib(sizes['/tmp'])} and /dev/shm of "
            f"{_mib(sizes['/dev/shm'])}"
        )
        return (
            f"it ran isolated by {isolation.tool} in its own "
            f"{', '.join(isolation.namespaces)} namespaces: it saw the system folders "
            f"read-only, its workspace read-only at {WORKSPACE}, its prompt folder "
            f"read-only at {PROMPT_FOLDER}, its own program and interpreters read-only, "
            f"{tmp}, a private /dev and /proc, and nothing else of the file system "
            f"unless shared; {network}; its processes ended with it"
        )

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
            "stderr_tail": self.stderr_tail.decode("utf-8", errors="replace"),
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
            "input": self.delivery.to_json(self.prompt_after, self.prompt_file),
            "observed": self.observed(),
        }


def _mib(size: int) -> str:
    return f"{size >> 20} MiB" if size % (1 << 20) == 0 else f"{size} bytes"


NOT_OBSERVED = (
    "not observed: what an agent read or sent outside its workspace (files its user can "
    "read, other processes' command lines, the network), nor what a model behind it "
    "remembers; agent identity is its own claim"
)
NOT_ENFORCED = (
    "not enforced: what an agent sent or received over the network it was given, what "
    "it read of the system folders and shared paths, nor what a model behind it "
    "remembers; agent identity is its own claim"
)


def attestation(runs: Sequence[AgentRun], evidence_sha256: str) -> Attestation:
    """What the verdict may say the runner observed, given kept evidence."""
    observed = [note for run in runs for note in run.observed()]
    isolated = bool(runs) and all(run.isolation.enforced for run in runs)
    return Attestation(
        evidence_sha256=evidence_sha256,
        observed=(*observed, NOT_ENFORCED if isolated else NOT_OBSERVED),
        # Enforced: isolated, each in a network namespace of its own (the host's
        # shares loopback and abstract sockets, between the agents and the host).
        isolation_enforced=bool(runs) and all(run.isolation.claims_enforced for run in runs),
        workspaces_observed=bool(runs) and all(run.workspace_observed for run in runs),
        prompt_delivered=bool(runs) and all(run.prompt_delivered for run in runs),
    )


def evidence(
    runs: Sequence[AgentRun],
    *,
    capsule_sha256: str,
    prompt_sha256: str,
    timeout: float,
    version: str,
    isolation: Isolation | None = None,
    shared: Sequence[str] = (),
) -> dict[str, Any]:
    """The continuation-evidence/1 document of one run."""
    if isolation is None:
        isolation = runs[0].isolation if runs else not_isolated("no agent ran")
    return {
        "schema": EVIDENCE_SCHEMA,
        "capsule_version": version,
        "capsule_sha256": capsule_sha256,
        "prompt_sha256": prompt_sha256,
        "timeout_ms": max(1, round(timeout * 1000)),
        "runner_euid": os.geteuid(),
        "isolation": {**isolation.to_json(), "shared": [shown(path) for path in shared]},
        "agents": [run.to_json() for run in runs],
    }
