"""The library calls behind ``capsule continuation verify`` and ``run``: read
the inputs, run the agents, keep the evidence, and return the verdict."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from governance import __version__
from governance.continuation import DEFAULT_TIMEOUT, MAX_TIMEOUT, prompt
from governance.continuation.checks import Submission
from governance.continuation.evidence import AgentRun, attestation, evidence
from governance.continuation.isolation import (
    AUTO,
    HOST,
    HOST_NETWORK_OPENS,
    check_share,
    resolve,
    run_probe,
)
from governance.continuation.limits import limiter, limits_for
from governance.continuation.preflight import (
    DEFAULT_PATH,
    agent_path,
    cannot_run,
    check_executable,
    check_pass_env,
    parse_command,
)
from governance.continuation.result import MAX_RESULT_BYTES, MAX_RESULT_TEXT, parse_result
from governance.continuation.supervision import run_agents
from governance.continuation.users import agent_users
from governance.continuation.verdict import Attestation, Verdict, evaluate, slot_name
from governance.core import canonical
from governance.core.hashing import sha256_hex
from governance.core.reader import read_capsule_file
from governance.errors import (
    OUTPUT_FAILED,
    RESULT_MALFORMED,
    RESULT_TOO_LARGE,
    RESULT_UNREADABLE,
    USAGE,
    MalformedInput,
    UsageError,
)
from governance.output import shown, write_atomic


def read_result(path: str) -> bytes:
    """A result file's bytes, if it is one JSON object of at most 1 MiB; any
    other file is malformed input (exit 2), not a failed check."""
    name = shown(path)
    try:
        with open(path, "rb") as handle:
            # One byte more than allowed tells "too large" from "exactly full".
            data = handle.read(MAX_RESULT_BYTES + 1)
    except OSError as exc:
        raise UsageError(
            f"{name}: cannot read result: {exc.strerror}", code=RESULT_UNREADABLE
        ) from None
    if len(data) > MAX_RESULT_BYTES:
        raise MalformedInput(
            f"{name}: result is over {MAX_RESULT_TEXT}; a result is one small JSON object",
            code=RESULT_TOO_LARGE,
        )
    try:
        parse_result(data)
    except ValueError as exc:
        raise MalformedInput(f"{name}: not one JSON object: {exc}", code=RESULT_MALFORMED) from None
    return data


def verify_results(capsule_path: str, result_paths: Sequence[str]) -> Verdict:
    """The verdict on result files for the capsule at ``capsule_path``."""
    capsule = read_capsule_file(capsule_path)
    submissions = [
        Submission(slot_name(index), shown(path), read_result(path))
        for index, path in enumerate(result_paths)
    ]
    return evaluate(capsule, shown(capsule_path), submissions)


@dataclass(frozen=True)
class RunReport:
    """What ``run_and_verify`` saw and concluded."""

    verdict: Verdict
    runs: tuple[AgentRun, ...]
    evidence_sha256: str | None

    def warnings(self) -> list[str]:
        """What the runner had to do about the agents, in plain words."""
        found = []
        for run in self.runs:
            if run.left_running:
                found.append(
                    f"agent {run.slot} left {len(run.left_running)} process(es) running; "
                    "the runner killed them"
                )
            if run.survivors:
                found.append(f"agent {run.slot}: processes survived the runner's kill")
        return found


def run_and_verify(
    capsule_path: str,
    agent: str,
    agent_b: str | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    pass_env: Sequence[str] = (),
    evidence_path: str | None = None,
    isolation: str = AUTO,
    network: str | None = None,
    share: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> RunReport:
    """Run two fresh agents on the capsule, keep the evidence (when asked) and
    verify their results, each isolated in namespaces where that can be done
    (``isolation`` auto), must be done (namespaces, or ``network`` none) or is
    not wanted (none); isolated, each has a network namespace of its own
    unless ``network`` is host. Every usage error is raised before an agent
    starts; ``progress`` hears, in words, what is about to run."""
    environ = os.environ if environ is None else environ
    capsule = read_capsule_file(capsule_path)
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        raise UsageError(
            f"--timeout must be a positive number of seconds, at most {MAX_TIMEOUT:g} "
            f"(a day), not {timeout:g}",
            code=USAGE,
        )
    if evidence_path and not os.path.isdir(os.path.dirname(os.path.abspath(evidence_path))):
        # Fail before the agents run, not after their work is done.
        raise UsageError(
            f"{evidence_path}: cannot write evidence: no such folder", code=OUTPUT_FAILED
        )
    passed = check_pass_env(pass_env, environ)
    users = agent_users()
    path = agent_path(passed, environ)
    commands = []
    for option, command in (("--agent", agent), ("--agent-b", agent_b or agent)):
        argv = parse_command(command, option)
        check_executable(argv[0], option, users[0], path)
        commands.append(argv)
    refused = [os.getcwd(), *([environ["HOME"]] if environ.get("HOME") else [])]
    shared = tuple(dict.fromkeys(check_share(item, refused) for item in share))
    limits = limits_for(users[0])
    ids: dict[str, Any] = {}
    if users[0].dedicated:
        ids = {"user": users[0].uid, "group": users[0].gid, "extra_groups": []}
    in_force = resolve(
        isolation,
        network,
        environ,
        probe=lambda argv: run_probe(argv, limiter(limits), **ids),
        usable=lambda program: cannot_run(program, users[0], DEFAULT_PATH),
    )
    if progress is not None:
        if users[0].dedicated:
            who = "as dedicated uids " + " and ".join(str(user.uid) for user in users)
        else:
            who = (
                f"as yourself ({users[0].describe()}; the workspace is read-only by mode bits only)"
            )
        progress(
            f"running agents a and b {who} in fresh read-only workspaces "
            f"(timeout {timeout:g} s each), {in_force.describe()}"
        )
        if in_force.enforced and in_force.network == HOST:
            progress(HOST_NETWORK_OPENS)
    runs = run_agents(
        capsule.data,
        commands,
        timeout=timeout,
        users=users,
        passed=passed,
        environ=environ,
        isolation=in_force,
        shared=shared,
    )
    attested: Attestation | None = None
    evidence_sha256 = None
    if evidence_path:
        data = canonical.dumps(
            evidence(
                runs,
                capsule_sha256=capsule.sha256,
                prompt_sha256=prompt.sha256(),
                timeout=timeout,
                version=__version__,
                isolation=in_force,
                shared=shared,
            )
        )
        write_atomic(evidence_path, data)
        evidence_sha256 = sha256_hex(data)
        attested = attestation(runs, evidence_sha256)
    submissions = [
        Submission(
            run.slot,
            f"agent {run.slot}",
            None if run.start_error is not None else run.stdout,
            run.problem,
        )
        for run in runs
    ]
    verdict = evaluate(capsule, shown(capsule_path), submissions, attestation=attested)
    return RunReport(verdict=verdict, runs=runs, evidence_sha256=evidence_sha256)
