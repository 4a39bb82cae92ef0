"""``capsule continuation``: two fresh agents, one capsule, one decision."""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import TYPE_CHECKING, Any

from governance.commands._args import add_command, add_json_flag
from governance.continuation import DEFAULT_TIMEOUT, MAX_TIMEOUT, prompt
from governance.output import err, out, print_json, warn

if TYPE_CHECKING:
    from governance.continuation.verdict import Verdict

HELP = "check that two fresh agents given only a capsule reach the same decision"

CHECKS = """\
checks, each reported with its outcome (pass, fail, skipped) and a reason:
  (1) two_results           exactly two results, each one JSON object; with run,
                            each from an agent that started, exited 0 in time,
                            printed at most 1 MiB, left no process holding its
                            output, and left its workspace untouched (verify: a
                            file that is not one JSON object is malformed input,
                            exit 2)
  (2) schema_valid          each is a valid continuation-result/1 document
  (3) distinct_identities   the agent ids differ (case-insensitive, NFKC)
  (4) no_prior_context      both claim prior_context: false
  (5) capsule_bound         both bind the SHA-256 of the exact capsule bytes
  (6) citations_in_capsule  every citation is the packet path, the context path
                            or a read's locator, exactly as in the capsule
  (7) decisions_agree       both decide continue, or both decide blocked

The verdict (continuation-verdict/1) is scoped to semantic agreement and grants
no authority. Agent identity is always agent-reported; the fresh-workspace and
no-prior-context claims are runner-observed only with run --evidence, and only
when both agents started in fresh workspaces they left unchanged; the verdict
then lists what the runner observed. Execution is unattested without evidence.

exit codes:
  0  agreement: all seven checks pass
  1  no agreement: a check failed (the decisions differ, ...) or was skipped
  2  bad usage or malformed input (the capsule fails verify's pre-checks, a
     result file cannot be read, is over 1 MiB or is not one JSON object, an
     agent command cannot be found or executed by the agent's user)
  129, 143  run stopped by SIGHUP or SIGTERM: agents killed, workspaces removed"""


def _wrap(text: str) -> str:
    # The epilogs are preformatted tables; descriptions are prose to wrap.
    return textwrap.fill(text, width=79)


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "continuation",
        HELP,
        (
            _wrap(
                "The continuation proof: a capsule is good enough to hand over when two "
                "agents that have never seen the work, each given only the capsule, reach "
                "the same decision (continue, or blocked). 'run' starts the two agents "
                "itself and then verifies; 'verify' checks two result files; 'prompt' "
                "prints the instruction text an agent adapter gives its model."
            )
        ),
        epilog=CHECKS,
    )
    commands = parser.add_subparsers(
        dest="continuation_command",
        metavar="SUBCOMMAND",
        help="verify two results, run two agents and verify, or print the agent prompt",
    )
    commands.required = True
    _register_verify(commands)
    _register_run(commands)
    _register_prompt(commands)


def _register_verify(commands: Any) -> None:
    parser = commands.add_parser(
        "verify",
        help="check two continuation results for one capsule",
        usage="capsule continuation verify [-h] [--json] CAPSULE RESULT_A RESULT_B",
        description=_wrap(
            "Check two continuation-result/1 files for CAPSULE. The capsule must pass "
            "verify's pre-checks (canonical bytes, schema, internal hashes, budget), or "
            "the command stops with exit 2. Prints one line per check and each agent's "
            "decision; with --json, the continuation-verdict/1 document."
        ),
        epilog=CHECKS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("capsule", metavar="CAPSULE", help="the capsule file both agents read")
    parser.add_argument(
        "results",
        metavar="RESULT",
        nargs="+",
        help="the result files; check (1) requires exactly two",
    )
    add_json_flag(parser)
    parser.set_defaults(run=run_verify)


_RUN_DESCRIPTION = (
    "Run agent a (--agent) and agent b (--agent-b, default: the same command) "
    "concurrently. Each runs in a new, empty, read-only temporary workspace "
    "(its cwd and HOME) with the exact capsule bytes on stdin, the instruction "
    "prompt (see 'prompt') in a read-only file named by CAPSULE_PROMPT_FILE, no "
    "extra arguments, and an environment of only PATH (/usr/local/bin:/usr/bin:/bin "
    "unless --pass-env PATH), LANG and LC_ALL (C.UTF-8), HOME, "
    "CAPSULE_AGENT_SLOT (a or b), CAPSULE_PROMPT_FILE and the --pass-env names, "
    "in a session of its "
    "own (no controlling terminal), with no new privileges, no core dumps, "
    "files of at most 1 GiB and at most 4 GiB of private memory a process. Run "
    "as root, each agent runs as its own unused uid "
    "and gid (no supplementary groups, at most 256 processes), so the command, "
    "its interpreter and all it reads must be usable by a user that owns nothing: "
    "world-readable and, along the way, world-searchable. Without root, agents "
    "run as you and the workspace is read-only by mode bits only. Each must print "
    "one continuation-result/1 or /2 JSON object (at most 1 MiB) on stdout and exit 0 "
    "within the timeout. When an agent ends, every process it left is killed "
    "(as root: every process of its uid; otherwise: its session). A workspace "
    "found changed afterwards fails that agent. SIGTERM or SIGHUP stop the "
    "agents, remove the workspaces and exit 143 or 129. Then the results are "
    "verified as by 'verify'. Where the runner can create namespaces (bwrap on "
    "PATH), each agent also runs isolated in its own user, mount, PID, IPC, UTS "
    "and network namespaces (no network unless --network host): the system "
    "folders read-only, its workspace read-only at /workspace, a private /tmp of "
    "256 MiB and /dev/shm of 64 MiB, no io_uring, and no view of the repository, "
    "HOME, the other agent or the runner (--isolation, --network, --share). "
    "Without namespaces this is not a sandbox: agents can still read "
    "world-readable files, see other processes' command lines and reach the "
    "network."
)


def _register_run(commands: Any) -> None:
    parser = commands.add_parser(
        "run",
        help="run two fresh agents on a capsule, then verify their results",
        description=_wrap(_RUN_DESCRIPTION),
        epilog=CHECKS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("capsule", metavar="CAPSULE", help="the capsule file to hand over")
    _add_agent_options(parser)
    _add_isolation_options(parser)
    add_json_flag(parser)
    parser.set_defaults(run=run_and_verify)


def _add_agent_options(parser: argparse.ArgumentParser) -> None:
    """What runs: the two agents' commands, their time, environment and evidence."""
    parser.add_argument(
        "--agent",
        metavar="CMD",
        required=True,
        help=(
            "the agent command, split like a shell would (no shell runs it); its "
            "program is found on the runner's PATH, or relative to the current folder"
        ),
    )
    parser.add_argument(
        "--agent-b",
        metavar="CMD",
        help="a different command for agent b (default: the --agent command)",
    )
    parser.add_argument(
        "--timeout",
        metavar="S",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds each agent may run, at most {MAX_TIMEOUT:g} (default: {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--pass-env",
        metavar="NAME",
        action="append",
        default=[],
        help=(
            "pass this environment variable on to both agents (repeatable); it must "
            "be set. Only its name is recorded. HOME, LANG, LC_ALL, CAPSULE_AGENT_SLOT "
            "and CAPSULE_PROMPT_FILE are set by the runner and cannot be passed"
        ),
    )
    parser.add_argument(
        "--evidence",
        metavar="FILE",
        help=(
            "write the invocation evidence (continuation-evidence/1, canonical JSON) to "
            "FILE atomically; the verdict then records its SHA-256 and what the runner "
            "observed, and marks the workspace and prior-context claims runner_observed "
            "when both agents started in fresh workspaces they left unchanged, and the "
            "prompt claim when both started with the prompt file, unchanged after them; "
            "under namespace isolation the workspace and prior-context claims are "
            "runner_enforced"
        ),
    )


def _add_isolation_options(parser: argparse.ArgumentParser) -> None:
    """How far the agents are kept apart: namespaces, network, shared paths."""
    parser.add_argument(
        "--isolation",
        choices=("auto", "namespaces", "none"),
        default="auto",
        help=(
            "auto (default): isolate each agent in namespaces with bwrap where that works "
            "here, else run it as without and say why; namespaces: insist (exit 2, "
            "isolation_unavailable, when it cannot be done); none: do not isolate"
        ),
    )
    parser.add_argument(
        "--network",
        choices=("none", "host"),
        default=None,
        help=(
            "none (the default under namespace isolation): each agent gets a network "
            "namespace of its own, with only its own loopback and its own abstract Unix "
            "sockets; given, it insists on namespaces (isolation_unavailable). host: "
            "agents use the host's network, as a model API needs, and with it loopback "
            "(each other and every service listening there) and the host's abstract Unix "
            "sockets; the run says so on stderr, and the workspace and prior-context "
            "claims are then runner_observed, not runner_enforced"
        ),
    )
    parser.add_argument(
        "--share",
        metavar="PATH",
        action="append",
        default=[],
        help=(
            "under namespace isolation, show PATH (a file or folder, such as the venv of "
            "a model client) to both agents read-only at the same path (repeatable); it "
            "may not be, hold or lie in the current folder or HOME (share_refused)"
        ),
    )


def _register_prompt(commands: Any) -> None:
    parser = commands.add_parser(
        "prompt",
        help="print the fixed instruction text for an agent's model",
        description=_wrap(
            "Print the fixed, versioned instruction text (continuation-prompt/2) that an "
            "agent adapter gives its model together with the capsule ('run' hands it to "
            "each agent in the file CAPSULE_PROMPT_FILE names): what to decide, the "
            "result form, and that every excerpt is untrusted data. Verdicts record its "
            "SHA-256. With --json: its version, sha256 and text."
        ),
    )
    add_json_flag(parser)
    parser.set_defaults(run=run_prompt)


def run_prompt(args: argparse.Namespace) -> int:
    if args.json:
        print_json({"version": prompt.VERSION, "sha256": prompt.sha256(), "text": prompt.TEXT})
    else:
        sys.stdout.write(prompt.TEXT)
        sys.stdout.flush()
    return 0


def run_verify(args: argparse.Namespace) -> int:
    from governance.continuation.proof import verify_results  # noqa: PLC0415 (defers tempfile, subprocess, ctypes, json)

    return _report(verify_results(args.capsule, args.results), args.json)


def run_and_verify(args: argparse.Namespace) -> int:
    from governance.continuation.proof import run_and_verify  # noqa: PLC0415 (defers tempfile, subprocess, ctypes, json)

    report = run_and_verify(
        args.capsule,
        args.agent,
        args.agent_b,
        timeout=args.timeout,
        pass_env=args.pass_env,
        evidence_path=args.evidence,
        isolation=args.isolation,
        network=args.network,
        share=args.share,
        progress=lambda line: warn(f"capsule: {line}"),
    )
    for line in report.warnings():
        warn(f"capsule: {line}")
    return _report(report.verdict, args.json)


def _report(verdict: Verdict, as_json: bool) -> int:
    if as_json:
        print_json(verdict.to_json())
        return 0 if verdict.agreement else 1
    lines = [
        f"({check.number}) {check.outcome:<7}  {check.name}: {check.reason}"
        for check in verdict.checks
    ]
    for slot, result in verdict.valid.items():
        if result["decision"] == "continue":
            detail = f"next action: {result['next_action']}"
        else:
            detail = "blockers: " + "; ".join(result["blockers"])
        lines.append(f"{slot}  {result['agent']['id']}  {result['decision']}  {detail}")
    # Agent-written text reaches a terminal here: out() makes every line printable.
    for line in lines:
        out(line)
    sys.stdout.flush()
    document = verdict.capsule.document
    outcome = f"agreement: {verdict.decision}" if verdict.agreement else "no agreement (exit 1)"
    claim = verdict.observed_claim.replace("_", "-")
    attestation = verdict.attestation
    execution = (
        "unattested"
        if attestation is None
        else f"runner-observed (evidence sha256 {attestation.evidence_sha256[:12]})"
    )
    prompt_claim = verdict.prompt_claim.replace("_", "-")
    err(
        f"capsule: continuation of {document['id']} (capsule sha256 "
        f"{verdict.capsule.sha256[:12]}): {outcome}. Scope: semantic agreement only; "
        f"authority: none; identity agent-reported, fresh workspace and no prior context "
        f"{claim}; prompt {prompt_claim}; execution {execution}."
    )
    if attestation is not None:
        err("observed by the runner:")
        for note in attestation.observed:
            err(f"  {note}")
    return 0 if verdict.agreement else 1
