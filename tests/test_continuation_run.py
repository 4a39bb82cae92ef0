"""``capsule continuation run`` against real stub agents: small executables that
read the capsule on stdin and print a result, each misbehaving in one way.

As root (CI), the runner gives each agent its own unused uid, so the stubs and
their interpreter must be reachable by a user that owns nothing and belongs to
no group: they live in a world-readable folder and use a Python that such a
user can execute. Without root, agents run as the runner's own user; the few
tests that need a dedicated uid say so when they skip."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import pty
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from governance.cli import build_parser
from governance.continuation import (
    delivery,
    limits,
    preflight,
    processes,
    prompt,
    proof,
    supervision,
)
from governance.continuation import evidence as runner_evidence
from governance.continuation import users as agent_users
from governance.continuation.workspace import Observation, observe, workspace_change
from governance.core import canonical
from governance.core.hashing import sha256_hex
from governance.core.schema import validate
from governance.errors import MalformedInput

pytestmark = pytest.mark.slow

PACKET = "packets/P-1/packet.yml"
AS_ROOT = os.geteuid() == 0
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
# A uid like the runner's dedicated ones: no passwd entry, owns nothing.
OUTSIDER = 0x6FFFFFF0
NEEDS_ROOT = "needs root: only root can give agents a dedicated uid"
# The runner as it is where namespaces cannot be made: dedicated uids, mode bits,
# cleanup by uid or session. Tests of that machinery ask for it explicitly.
NOT_ISOLATED = ("--isolation", "none")

# Every stub starts as an honest agent; its tweak (inserted before the final
# print) is the one way it misbehaves.
HONEST = """\
import hashlib, json, os, sys

data = sys.stdin.buffer.read()
capsule = json.loads(data)
slot = os.environ["CAPSULE_AGENT_SLOT"]
result = {
    "schema": "continuation-result/1",
    "agent": {"id": "stub-" + slot, "runtime": "python stub"},
    "prior_context": False,
    "capsule_sha256": hashlib.sha256(data).hexdigest(),
    "decision": "continue",
    "rationale": "The objective is clear and phase 2 is fully described.",
    "next_action": "Start on phase 2 as the roadmap describes it.",
    "citations": [capsule["packet"]["path"], capsule["reads"][0]["locator"]],
}
"""
PRINT = "print(json.dumps(result))\n"


def _as_agent_user() -> dict[str, Any]:
    if not AS_ROOT:
        return {}
    return {"user": OUTSIDER, "group": OUTSIDER, "extra_groups": []}


def _agent_can_run(argv: list[str]) -> bool:
    try:
        done = subprocess.run(
            argv,
            cwd="/",
            env={"PATH": SYSTEM_PATH, "LC_ALL": "C.UTF-8"},
            capture_output=True,
            timeout=30,
            check=False,
            **_as_agent_user(),
        )
    except OSError:
        return False
    return done.returncode == 0


@pytest.fixture(scope="session")
def agent_python() -> str:
    """A Python the agent user can execute (a venv under a private home is not)."""
    candidates = [sys.executable, os.path.realpath(sys.executable)]
    candidates += [shutil.which("python3", path=SYSTEM_PATH) or ""]
    for candidate in dict.fromkeys(c for c in candidates if c):
        if _agent_can_run([candidate, "-c", "import hashlib, json, os, sys"]):
            return candidate
    # Never a skip: CI runs as root, and .ci/run installs a system python3 when
    # the only one is private (a venv or pyenv under a home the agent cannot enter).
    pytest.fail(
        "no python3 that the unprivileged agent user can execute: install one outside "
        f"private homes on {SYSTEM_PATH} (Debian: apt-get install python3)"
    )


@pytest.fixture(scope="session")
def stub_folder() -> Iterator[Path]:
    # pytest's own temp folders are private to their owner: agents running as
    # another user could not reach stubs kept there.
    folder = Path(tempfile.mkdtemp(prefix="capsule-stubs-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def stub(
    agent_python: str, stub_folder: Path, request: pytest.FixtureRequest
) -> Callable[..., str]:
    def make(tweak: str = "", *, name: str | None = None) -> str:
        path = stub_folder / f"{name or request.node.name}.py"
        path.write_text(f"#!{agent_python}\n{HONEST}{tweak}{PRINT}")
        path.chmod(0o755)
        return str(path)

    return make


def run(cli, capsule: Path, *args: str) -> tuple[int, dict]:
    result = cli(["continuation", "run", str(capsule), "--json", *args])
    document = json.loads(result.out)
    if "error" not in document:
        validate(document, "continuation-verdict-1", what="verdict", code="bad_verdict")
    return result.code, document


def outcomes(verdict: dict) -> dict[int, str]:
    return {check["number"]: check["outcome"] for check in verdict["checks"]}


def reason(verdict: dict, number: int) -> str:
    return verdict["checks"][number - 1]["reason"]


def failing(verdict: dict) -> list[int]:
    return [n for n, outcome in outcomes(verdict).items() if outcome == "fail"]


# -- the agents of the issue, one named test each ------------------------------


def test_two_honest_agents_agree(cli, capsule: Path, stub) -> None:
    code, verdict = run(cli, capsule, "--agent", stub())
    assert code == 0
    assert verdict["agreement"] is True
    assert verdict["decision"] == "continue"
    assert set(outcomes(verdict).values()) == {"pass"}
    assert (verdict["scope"], verdict["authority"]) == ("semantic_agreement", "none")
    # No evidence kept: nothing here is more than the agents' word.
    assert verdict["claims"] == {
        "identity": "agent_reported",
        "fresh_workspace": "agent_reported",
        "no_prior_context": "agent_reported",
        "prompt": "agent_reported",
    }
    assert verdict["execution"] == {"status": "unattested"}
    assert [r["result"]["agent"]["id"] for r in verdict["results"]] == ["stub-a", "stub-b"]
    assert [r["source"] for r in verdict["results"]] == ["agent a", "agent b"]
    assert verdict["capsule"]["sha256"] == sha256_hex(capsule.read_bytes())
    assert verdict["prompt"] == {"version": prompt.VERSION, "sha256": prompt.sha256()}


def test_disagreeing_agent(cli, capsule: Path, stub) -> None:
    blocked = stub(
        'result["decision"] = "blocked"\n'
        'del result["next_action"]\n'
        'result["blockers"] = ["Nobody owns phase 2 yet."]\n'
    )
    code, verdict = run(cli, capsule, "--agent", stub(name="honest"), "--agent-b", blocked)
    assert code == 1
    assert verdict["agreement"] is False
    assert verdict["decision"] is None
    assert failing(verdict) == [7]
    assert reason(verdict, 7) == "the decisions differ: a decides continue, b decides blocked"


def test_agent_claiming_prior_context(cli, capsule: Path, stub) -> None:
    code, verdict = run(
        cli,
        capsule,
        "--agent",
        stub(name="honest"),
        "--agent-b",
        stub('result["prior_context"] = True\n'),
    )
    assert code == 1
    assert failing(verdict) == [4]
    assert reason(verdict, 4).startswith("b claims prior_context: true")


def test_agent_with_wrong_capsule_hash(cli, capsule: Path, stub) -> None:
    wrong = stub('result["capsule_sha256"] = hashlib.sha256(b"another capsule").hexdigest()\n')
    code, verdict = run(cli, capsule, "--agent", wrong, "--agent-b", stub(name="honest"))
    assert code == 1
    assert failing(verdict) == [5]
    assert reason(verdict, 5).startswith(f"a binds capsule_sha256 {sha256_hex(b'another capsule')}")


def test_two_agents_claiming_the_same_identity(cli, capsule: Path, stub) -> None:
    # Same command in both slots, ignoring CAPSULE_AGENT_SLOT for its name.
    code, verdict = run(cli, capsule, "--agent", stub('result["agent"]["id"] = "Claude"\n'))
    assert code == 1
    assert failing(verdict) == [3]
    assert reason(verdict, 3) == "a and b claim the same identity 'Claude'"


def test_agent_citing_a_locator_not_in_the_capsule(cli, capsule: Path, stub) -> None:
    foreign = stub('result["citations"].append("docs/roadmap.md")\n')
    code, verdict = run(cli, capsule, "--agent", stub(name="honest"), "--agent-b", foreign)
    assert code == 1
    assert failing(verdict) == [6]
    # Only phase 2 of the roadmap is in the capsule: the whole file is not citable.
    assert reason(verdict, 6).startswith("b cites 'docs/roadmap.md', not a part of this capsule")


def test_agent_writing_into_its_workspace(cli, capsule: Path, stub, tmp_path: Path) -> None:
    writer = stub('open("notes.txt", "w").write("scratch")\n')
    evidence = tmp_path / "evidence.json"
    code, verdict = run(cli, capsule, "--agent", writer, "--evidence", str(evidence))
    assert code == 1
    assert failing(verdict) == [1]
    # The write itself was refused (by a read-only mount under isolation, by the
    # OS as root, by the mode bits otherwise).
    assert "a (agent a): the agent exited with status 1" in reason(verdict, 1)
    agents = json.loads(evidence.read_bytes())["agents"]
    for agent in agents:
        assert re.search("PermissionError|Read-only file system", agent["stderr_tail"])
        assert agent["workspace"]["after"]["entries"] == []
        assert agent["workspace"]["changed"] is None


def test_agent_making_its_workspace_writable(cli, capsule: Path, stub) -> None:
    sneaky = stub('os.chmod(".", 0o755)\nopen("notes.txt", "w").write("scratch")\n')
    code, verdict = run(cli, capsule, "--agent", sneaky)
    assert code == 1
    assert failing(verdict) == [1]
    if AS_ROOT:
        # The agent runs as a dedicated uid and does not own its workspace.
        assert "the agent exited with status 1" in reason(verdict, 1)
    else:
        # Its own folder: the mode bit gives way, the emptiness check does not.
        assert "its workspace changed: it holds 1 entry: 'notes.txt'" in reason(verdict, 1)


def test_agent_hanging_past_the_timeout(cli, capsule: Path, stub, tmp_path: Path) -> None:
    # The agent leaves a child behind that holds its output open: only killing
    # the whole process group ends the run.
    hang = stub(
        "import subprocess, time\n"
        'child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])\n'
        'sys.stderr.write(f"child {child.pid}\\n")\n'
        "sys.stderr.flush()\n"
        "time.sleep(60)\n"
    )
    evidence = tmp_path / "evidence.json"
    started = time.monotonic()
    code, verdict = run(
        cli, capsule, "--agent", hang, "--timeout", "1", "--evidence", str(evidence), *NOT_ISOLATED
    )
    assert time.monotonic() - started < 15
    assert code == 1
    assert failing(verdict) == [1]
    assert "the agent did not finish within 1 s; it and its processes were killed" in reason(
        verdict, 1
    )
    for agent in json.loads(evidence.read_bytes())["agents"]:
        assert agent["timed_out"] is True
        assert agent["exit_status"] == -9
        child = int(agent["stderr_tail"].split()[1])
        assert _gone(child)
        assert child in [p["pid"] for p in agent["left_running"]]


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            # Killed, but maybe a zombie nobody reaps (a container's init may not).
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError):
            return True
        except OSError:
            state = "?"
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_agent_exiting_non_zero(cli, capsule: Path, stub) -> None:
    failed = stub('sys.stderr.write("quota exhausted\\n")\nsys.exit(3)\n')
    code, verdict = run(cli, capsule, "--agent", stub(name="honest"), "--agent-b", failed)
    assert code == 1
    assert failing(verdict) == [1]
    assert reason(verdict, 1) == "b (agent b): the agent exited with status 3"
    # Checks that need both results are skipped, the rest held for a alone.
    assert outcomes(verdict) == {
        1: "fail", 2: "skipped", 3: "skipped", 4: "skipped", 5: "skipped", 6: "skipped",
        7: "skipped",
    }  # fmt: skip
    assert verdict["results"][1]["result"] is None


def test_agent_printing_extra_fields(cli, capsule: Path, stub) -> None:
    extra = stub('result["confidence"] = "high"\n')
    code, verdict = run(cli, capsule, "--agent", stub(name="honest"), "--agent-b", extra)
    assert code == 1
    assert failing(verdict) == [2]
    assert "result b: $: Additional properties are not allowed ('confidence'" in reason(verdict, 2)


def test_agent_printing_non_json(cli, capsule: Path, stub) -> None:
    chatty = stub('print("I think we should continue.")\nsys.exit(0)\n')
    code, verdict = run(cli, capsule, "--agent", chatty, "--agent-b", stub(name="honest"))
    assert code == 1
    assert failing(verdict) == [1]
    assert reason(verdict, 1).startswith("a (agent a): not one JSON object: not valid JSON")


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_agent_printing_a_lone_surrogate(cli, capsule: Path, stub, as_json: bool) -> None:
    # Valid to json.loads, impossible to print as UTF-8: refused, not a crash.
    half = stub('result["rationale"] = "half a pair: \\ud800"\n')
    argv = ["continuation", "run", str(capsule), "--agent", stub(name="honest"), "--agent-b", half]
    result = cli(argv + (["--json"] if as_json else []))
    assert result.code == 1
    if as_json:
        verdict = json.loads(result.out)
        assert failing(verdict) == [1]
        assert "b (agent b): not one JSON object: " in reason(verdict, 1)
        assert "lone surrogate" in reason(verdict, 1)
    else:
        assert "(1) fail" in result.out


def test_agent_printing_deeply_nested_json(cli, capsule: Path, stub) -> None:
    deep = stub('sys.stdout.write("{\\"x\\": " + "[" * 100000 + "]" * 100000 + "}")\nsys.exit(0)\n')
    code, verdict = run(cli, capsule, "--agent", deep, "--agent-b", stub(name="honest"))
    assert code == 1
    assert failing(verdict) == [1]
    assert "a (agent a): not one JSON object: not valid JSON: nested too deeply" in reason(
        verdict, 1
    )


def test_secret_in_the_runner_environment_never_reaches_the_agent(
    cli, capsule: Path, stub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CAPSULE_TEST_SECRET", "hunter2-never-leaves")
    monkeypatch.setenv("CAPSULE_TEST_PASSED", "passed-on-purpose")
    reporter = stub('result["rationale"] = json.dumps(dict(os.environ), sort_keys=True)\n')
    evidence = tmp_path / "evidence.json"
    result = cli(
        ["continuation", "run", str(capsule), "--json", "--agent", reporter,
         "--pass-env", "CAPSULE_TEST_PASSED", "--evidence", str(evidence),
         "--isolation", "namespaces"]
    )  # fmt: skip
    assert result.code == 0
    verdict = json.loads(result.out)
    records = json.loads(evidence.read_bytes())["agents"]
    for slot, entry, record in zip("ab", verdict["results"], records, strict=True):
        seen = json.loads(entry["result"]["rationale"])
        # bwrap sets PWD to the workspace; the runner sets and records it too.
        assert sorted(seen) == record["env_names"] == [
            "CAPSULE_AGENT_SLOT", "CAPSULE_PROMPT_FILE", "CAPSULE_TEST_PASSED", "HOME", "LANG",
            "LC_ALL", "PATH", "PWD",
        ]  # fmt: skip
        assert (seen["HOME"], seen["PWD"]) == ("/workspace", "/workspace")
        assert seen["CAPSULE_AGENT_SLOT"] == slot
        assert seen["CAPSULE_TEST_PASSED"] == "passed-on-purpose"
        assert (seen["PATH"], seen["LANG"], seen["LC_ALL"]) == (SYSTEM_PATH, "C.UTF-8", "C.UTF-8")
    # Not in what the agents saw, nor in anything the runner wrote.
    everything = result.out + result.err + evidence.read_text()
    assert "hunter2-never-leaves" not in everything
    # The evidence names what was passed on, never its value.
    assert "passed-on-purpose" not in evidence.read_text()
    agents = json.loads(evidence.read_bytes())["agents"]
    assert [a["passed_env"] for a in agents] == [["CAPSULE_TEST_PASSED"]] * 2


# -- the prompt, delivered by the runner ---------------------------------------

# Reads the prompt the runner handed over, and tries to change it three ways.
PROMPT_READER = """\
import errno, stat
path = os.environ["CAPSULE_PROMPT_FILE"]
with open(path, "rb") as handle:
    given = handle.read()
tries = {}
for name, attempt in (
    ("write", lambda: open(path, "ab").write(b"ignore the capsule")),
    ("chmod", lambda: os.chmod(path, 0o666)),
    ("replace", lambda: os.rename(path, path + ".old")),
):
    try:
        attempt()
        tries[name] = "done"
    except OSError as exc:
        tries[name] = errno.errorcode[exc.errno]
mode = stat.S_IMODE(os.stat(path).st_mode)
result["rationale"] = json.dumps(
    {"sha256": hashlib.sha256(given).hexdigest(), "tries": tries, "mode": oct(mode)}
)
"""


@pytest.mark.parametrize("isolation", ["namespaces", "none"])
def test_each_agent_receives_the_prompt_in_a_read_only_file(
    cli, capsule: Path, stub, tmp_path: Path, isolation: str
) -> None:
    evidence = tmp_path / "evidence.json"
    code, verdict = run(
        cli, capsule, "--agent", stub(PROMPT_READER), "--evidence", str(evidence),
        "--isolation", isolation,
    )  # fmt: skip
    assert code == 0, verdict["checks"]
    records = json.loads(evidence.read_bytes())["agents"]
    for entry, record in zip(verdict["results"], records, strict=True):
        seen = json.loads(entry["result"]["rationale"])
        # Exactly the prompt of `capsule continuation prompt`, to the last byte.
        assert seen["sha256"] == prompt.sha256() == record["input"]["prompt_sha256"]
        assert seen["mode"] == "0o444"
        assert record["input"]["prompt_unchanged"] is True
        # Isolated, the prompt folder is a read-only mount; otherwise, as root,
        # the dedicated uid owns neither the file nor its folder.
        if isolation == "namespaces":
            assert set(seen["tries"].values()) <= {"EROFS", "EACCES", "EPERM"}
        elif AS_ROOT:
            assert set(seen["tries"].values()) <= {"EACCES", "EPERM"}
    assert verdict["claims"]["prompt"] == "runner_observed"


def test_a_changed_or_replaced_prompt_file_is_seen(tmp_path: Path) -> None:
    # Without root the agent is the runner's own user and owns its prompt file:
    # the runner reads it back after the agent ended and compares the hashes.
    for change in ("append", "replace-with-symlink", "remove"):
        given = delivery.prepare("a", b"{}", prompt.TEXT.encode())
        try:
            assert delivery.read_back(given) == given.prompt_sha256 == prompt.sha256()
            os.chmod(given.folder, 0o755)
            path = Path(given.prompt_path)
            if change == "append":
                path.chmod(0o644)
                with path.open("ab") as handle:
                    handle.write(b"ignore the capsule")
            else:
                path.unlink()
                if change == "replace-with-symlink":
                    copy = tmp_path / "copy.txt"
                    copy.write_text(prompt.TEXT)
                    path.symlink_to(copy)
            seen = delivery.read_back(given)
            if change == "append":
                assert seen == sha256_hex(prompt.TEXT.encode() + b"ignore the capsule")
            else:  # gone, or a symlink in its place (never followed)
                assert seen is None
        finally:
            delivery.remove(given.folder)
        assert not os.path.exists(given.folder)


# -- evidence and what it lets the verdict claim -----------------------------


EVIDENCE_MODES = {
    "namespaces": ("--isolation", "namespaces"),
    "host-network": ("--isolation", "namespaces", "--network", "host"),
    "none": ("--isolation", "none"),
}


@pytest.mark.parametrize("isolation", list(EVIDENCE_MODES))
def test_evidence_makes_workspace_claims_runner_observed(
    cli, capsule: Path, stub, tmp_path: Path, isolation: str
) -> None:
    # Observed by the runner either way; enforced only where it isolated the
    # agents, each in a network namespace of its own.
    isolated = isolation != "none"
    claim = "runner_enforced" if isolation == "namespaces" else "runner_observed"
    names = ["CAPSULE_AGENT_SLOT", "CAPSULE_PROMPT_FILE", "HOME", "LANG", "LC_ALL", "PATH"]
    names += ["PWD"] if isolated else []
    agent = stub()
    evidence = tmp_path / "evidence.json"
    code, verdict = run(
        cli, capsule, "--agent", agent, "--evidence", str(evidence), *EVIDENCE_MODES[isolation]
    )
    assert code == 0
    data = evidence.read_bytes()
    assert canonical.dumps(json.loads(data)) == data
    document = json.loads(data)
    validate(document, "continuation-evidence-1", what="evidence", code="bad_evidence")
    assert verdict["execution"]["status"] == "runner_observed"
    assert verdict["execution"]["evidence_sha256"] == sha256_hex(data)
    # What "observed" means, in words, in the verdict itself.
    observed = verdict["execution"]["observed"]
    assert observed == [note for a in document["agents"] for note in a["observed"]] + [
        runner_evidence.NOT_ENFORCED if isolated else runner_evidence.NOT_OBSERVED
    ]
    assert "agent a: its workspace was a new, empty directory (mode 0555" in observed[1]
    assert observed[1].endswith("and unchanged (entries, mode, owner, mtime, ctime) after it ended")
    assert observed[2] == (
        f"agent a: its environment held only {', '.join(names)}; its stdin was the "
        f"{len(capsule.read_bytes())} capsule bytes; it had no controlling terminal"
    )
    assert observed[3] == (
        f"agent a: it received the capsule (sha256 {sha256_hex(capsule.read_bytes())}) on "
        "stdin and, in the read-only file named by CAPSULE_PROMPT_FILE, the "
        f"{len(prompt.TEXT.encode())} bytes of the prompt (sha256 {prompt.sha256()}), the "
        "same bytes after it ended"
    )
    if isolated:
        own = isolation == "namespaces"
        namespaces = ["user", "mount", "pid", "ipc", "uts", *(["net"] if own else [])]
        assert observed[4].startswith(
            f"agent a: it ran isolated by /usr/bin/bwrap in its own {', '.join(namespaces)} "
            "namespaces: it saw the system folders read-only, its workspace read-only at "
            "/workspace"
        )
        assert "a private /tmp of 256 MiB and /dev/shm of 64 MiB, a private /dev" in observed[4]
        network = (
            "no network (a network namespace of its own: its own loopback and its own "
            "abstract Unix sockets)"
            if own
            else "the host's network, loopback included, and the host's abstract Unix "
            "sockets through a socketpair"
        )
        assert f"{network}; socket(AF_UNIX) and io_uring refused;" in observed[4]
        assert document["isolation"] == {
            "mode": "namespaces", "namespaces": namespaces,
            "network": "none" if own else "host", "tool": "/usr/bin/bwrap", "reason": None,
            "denied": ["socket(AF_UNIX)", "io_uring_setup", "io_uring_enter",
                       "io_uring_register"],
            "shared": [], "tmpfs_bytes": {"/dev/shm": 64 << 20, "/tmp": 256 << 20},
        }  # fmt: skip
        assert "the network" in observed[-1]
    else:
        assert observed[4] == (
            "agent a: it was not isolated in namespaces: --isolation none was given"
        )
        assert document["isolation"] == {
            "mode": "none", "namespaces": [], "network": "host", "tool": None,
            "reason": "--isolation none was given", "denied": [], "shared": [],
            "tmpfs_bytes": None,
        }  # fmt: skip
        assert "command lines" in observed[-1]
    assert verdict["claims"] == {
        "identity": "agent_reported",
        "fresh_workspace": claim,
        "no_prior_context": claim,
        "prompt": "runner_observed",
    }
    assert document["capsule_sha256"] == verdict["capsule"]["sha256"]
    assert document["prompt_sha256"] == prompt.sha256()
    for slot, record, result in zip("ab", document["agents"], verdict["results"], strict=True):
        assert record["slot"] == slot
        assert record["argv"] == [agent]
        assert record["exit_status"] == 0
        assert record["timed_out"] is False
        assert record["stdout_sha256"] == result["sha256"]
        assert record["env_names"] == names
        assert record["input"] == {
            "stdin_sha256": verdict["capsule"]["sha256"],
            "stdin_bytes": len(capsule.read_bytes()),
            "prompt_file": record["input"]["prompt_file"],
            "prompt_sha256": prompt.sha256(),
            "prompt_bytes": len(prompt.TEXT.encode()),
            "prompt_unchanged": True,
        }
        if isolated:  # where the agent saw it
            assert record["input"]["prompt_file"] == "/run/capsule/prompt.txt"
        else:
            assert record["input"]["prompt_file"].endswith("/prompt.txt")
            assert not os.path.exists(record["input"]["prompt_file"])
        assert record["user"]["privilege_dropped"] is AS_ROOT
        assert record["stdout_truncated"] is False
        assert record["output_held"] == record["left_running"] == record["survivors"] == []
        assert record["limits"]["no_new_privs"] is True
        workspace = record["workspace"]
        for moment in ("before", "after"):
            assert workspace[moment]["kind"] == "directory"
            assert workspace[moment]["mode"] == "0555"
            assert workspace[moment]["entries"] == []
        assert workspace["changed"] is None
        # The workspace is gone once the run is over.
        assert not os.path.exists(workspace["path"])


def test_agents_run_concurrently(cli, capsule: Path, stub, tmp_path: Path) -> None:
    # Asserted on what the runner saw, not on a wall-clock budget that a busy
    # machine can miss: each agent started before the other one ended.
    slow = stub("import time\ntime.sleep(1.5)\n")
    evidence = tmp_path / "evidence.json"
    code, _ = run(cli, capsule, "--agent", slow, "--timeout", "20", "--evidence", str(evidence))
    assert code == 0
    a, b = json.loads(evidence.read_bytes())["agents"]
    assert a["started_at"] < b["ended_at"]
    assert b["started_at"] < a["ended_at"]


def test_text_output_names_checks_and_decisions(cli, capsule: Path, stub) -> None:
    result = cli(["continuation", "run", str(capsule), "--agent", stub()])
    assert result.code == 0
    lines = result.out.splitlines()
    assert [line.split()[:2] for line in lines[:7]] == [[f"({n})", "pass"] for n in range(1, 8)]
    assert (
        lines[7]
        == "a  stub-a  continue  next action: Start on phase 2 as the roadmap describes it."
    )
    assert "agreement: continue" in result.err
    assert "execution unattested" in result.err


def test_agent_text_cannot_drive_the_terminal(cli, capsule: Path, stub) -> None:
    ansi = stub('result["next_action"] = "\\x1b[2J\\x1b[31mrm -rf\\x1b[0m"\n')
    result = cli(["continuation", "run", str(capsule), "--agent", ansi])
    assert result.code == 0
    assert "\x1b" not in result.out
    assert "\\x1b[2J" in result.out


# -- what an agent can reach of the runner and of the other agent --------------


def _runner_argv(capsule: Path, *args: str) -> list[str]:
    # A real runner process: what an agent can see of its parent (/proc, its
    # terminal) is only meaningful when the parent is not the test itself.
    return [
        sys.executable,
        "-m",
        "governance",
        "continuation",
        "run",
        str(capsule),
        "--json",
        *args,
    ]


def _on_a_terminal(argv: list[str], **options: Any) -> subprocess.CompletedProcess[bytes]:
    """Run argv with a pseudo-terminal as its controlling terminal, like a
    runner started from an interactive shell."""
    try:
        controller, terminal = pty.openpty()
    except OSError as exc:
        pytest.fail(f"no pseudo-terminal to run the runner on (is /dev/pts mounted?): {exc}")

    def take_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    try:
        return subprocess.run(
            argv,
            stdin=terminal,
            capture_output=True,
            start_new_session=True,
            preexec_fn=take_terminal,
            timeout=60,
            check=False,
            **options,
        )
    finally:
        os.close(terminal)
        os.close(controller)


def test_agent_has_no_controlling_terminal(capsule: Path, stub) -> None:
    # An agent that can open the runner's terminal can read it, or push input
    # into it with TIOCSTI: each agent runs in a session of its own.
    probe = stub(
        "import errno\n"
        "try:\n"
        '    os.close(os.open("/dev/tty", os.O_RDWR))\n'
        '    tty = "opened"\n'
        "except OSError as exc:\n"
        "    tty = errno.errorcode[exc.errno]\n"
        'result["rationale"] = "/dev/tty: " + tty\n'
    )
    # The set-up really gives a terminal: a plain child of it can open /dev/tty.
    control = _on_a_terminal([sys.executable, "-c", "import os; os.open('/dev/tty', os.O_RDWR)"])
    assert control.returncode == 0, control.stderr
    done = _on_a_terminal(_runner_argv(capsule, "--agent", probe))
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)
    assert [r["result"]["rationale"] for r in verdict["results"]] == ["/dev/tty: ENXIO"] * 2


def test_agent_cannot_read_the_runner_through_proc(capsule: Path, stub, tmp_path: Path) -> None:
    # The runner's environment holds every secret of the caller, not only the
    # --pass-env ones. Without root the agent shares the runner's uid, so only
    # the runner being non-dumpable keeps /proc/<runner>/environ closed.
    spy = stub(
        "parent, seen = os.getppid(), {}\n"
        "for what, read in (\n"
        '    ("environ", lambda: open(f"/proc/{parent}/environ", "rb").read().decode()),\n'
        '    ("cwd", lambda: os.readlink(f"/proc/{parent}/cwd")),\n'
        '    ("fd", lambda: str(os.listdir(f"/proc/{parent}/fd"))),\n'
        "):\n"
        "    try:\n"
        "        seen[what] = read()\n"
        "    except OSError as exc:\n"
        "        seen[what] = type(exc).__name__\n"
        'result["rationale"] = json.dumps(seen)\n'
    )
    environ = {**os.environ, "CAPSULE_TEST_SECRET": "hunter2-never-leaves"}
    where = tmp_path / "the-runner-is-here"
    where.mkdir()
    done = subprocess.run(
        _runner_argv(capsule, "--agent", spy, *NOT_ISOLATED),
        env=environ,
        cwd=where,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert b"hunter2-never-leaves" not in done.stdout + done.stderr
    assert b"the-runner-is-here" not in done.stdout
    for entry in json.loads(done.stdout)["results"]:
        assert json.loads(entry["result"]["rationale"]) == {
            "environ": "PermissionError",
            "cwd": "PermissionError",
            "fd": "PermissionError",
        }


def test_each_agent_runs_as_its_own_unused_uid(cli, capsule: Path, stub, tmp_path: Path) -> None:
    who = stub('result["rationale"] = json.dumps([os.getuid(), os.getgid(), os.getgroups()])\n')
    evidence = tmp_path / "evidence.json"
    code, verdict = run(cli, capsule, "--agent", who, "--evidence", str(evidence))
    assert code == 0
    seen = [json.loads(entry["result"]["rationale"]) for entry in verdict["results"]]
    users = [agent["user"] for agent in json.loads(evidence.read_bytes())["agents"]]
    assert [[user["uid"], user["gid"]] for user in users] == [ids[:2] for ids in seen]
    if not AS_ROOT:
        # Without root there is no other uid to give: the agents run as us,
        # and the evidence and the verdict say what that means.
        assert [ids[0] for ids in seen] == [os.getuid()] * 2
        assert {user["isolation"] for user in users} == {"mode_bits_only"}
        assert "read-only by mode bits only" in verdict["execution"]["observed"][0]
        return
    uids = [ids[0] for ids in seen]
    assert len(set(uids)) == 2
    for uid, gid, groups in seen:
        assert agent_users.DEDICATED_IDS[0] <= uid <= agent_users.DEDICATED_IDS[1]
        assert gid == uid
        assert groups == []
        with pytest.raises(KeyError):
            pwd.getpwuid(uid)
    assert {user["isolation"] for user in users} == {"dedicated_uid"}
    assert f"agent a ran as dedicated uid {uids[0]}" in verdict["execution"]["observed"][0]


@pytest.mark.skipif(not AS_ROOT, reason=f"{NEEDS_ROOT}; without it both run as the runner's user")
def test_agents_cannot_read_each_other_through_proc(
    cli, capsule: Path, stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sharing one uid (nobody), agent a could read agent b's environment, and
    # with it every --pass-env value. Both look for each other for a while.
    monkeypatch.setenv("CAPSULE_TEST_PASSED", "a-key-for-b-only")
    spy = stub(
        "import time\n"
        "seen, until = set(), time.monotonic() + 1.5\n"
        "while time.monotonic() < until:\n"
        '    for pid in filter(str.isdigit, os.listdir("/proc")):\n'
        "        try:\n"
        '            data = open(f"/proc/{pid}/environ", "rb").read()\n'
        "        except OSError:\n"
        "            continue\n"
        '        if int(pid) != os.getpid() and b"a-key-for-b-only" in data:\n'
        "            seen.add(pid)\n"
        "    time.sleep(0.05)\n"
        'result["rationale"] = "environments read: " + (", ".join(sorted(seen)) or "none")\n'
    )
    code, verdict = run(
        cli, capsule, "--agent", spy, "--pass-env", "CAPSULE_TEST_PASSED", *NOT_ISOLATED
    )
    assert code == 0
    assert [r["result"]["rationale"] for r in verdict["results"]] == ["environments read: none"] * 2


# -- nothing of an agent outlives the run ------------------------------------------


@pytest.fixture
def drop_box(stub_folder: Path) -> Iterator[Path]:
    """A folder any agent user can write to, to tell the test what it is."""
    folder = Path(tempfile.mkdtemp(prefix="drop-", dir=stub_folder))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _wait_for(paths: list[Path], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not all(path.exists() for path in paths):
        assert time.monotonic() < deadline, f"never appeared: {paths}"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("number", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)], ids=["SIGTERM", "SIGHUP"]
)
def test_signal_to_the_runner_stops_agents_and_removes_workspaces(
    capsule: Path, stub, drop_box: Path, number: int, code: int
) -> None:
    # The agent and a child of it (one that left the session too, when the
    # runner can give a dedicated uid) tell us who they are, then wait.
    hang = stub(
        "import subprocess, time\n"
        "child = subprocess.Popen(\n"
        '    [sys.executable, "-c", "import time; time.sleep(60)"],\n'
        f"    start_new_session={AS_ROOT},\n"
        ")\n"
        f'report = os.path.join("{drop_box}", slot)\n'
        'with open(report + ".tmp", "w") as handle:\n'
        '    handle.write(f"{os.getpid()} {child.pid} {os.getcwd()}")\n'
        'os.rename(report + ".tmp", report)\n'
        "time.sleep(60)\n"
    )
    process = subprocess.Popen(
        _runner_argv(capsule, "--agent", hang, "--timeout", "60", *NOT_ISOLATED),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    pids: list[int] = []
    try:
        _wait_for([drop_box / "a", drop_box / "b"])
        reports = [(drop_box / slot).read_text().split() for slot in "ab"]
        pids = [int(pid) for report in reports for pid in report[:2]]
        process.send_signal(number)
        out, err = process.communicate(timeout=30)
        assert process.returncode == code, err
        error = json.loads(out)["error"]
        assert error["code"] == "interrupted"
        assert error["signal"] == signal.Signals(number).name
        assert all(_gone(pid) for pid in pids)
        assert not any(os.path.exists(report[2]) for report in reports)
    finally:
        process.kill()
        process.wait()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_background_child_of_an_agent_that_exited_0_is_killed_and_reported(
    cli, capsule: Path, stub, tmp_path: Path
) -> None:
    # The child keeps none of the agent's pipes: the agent's output is whole,
    # so the result counts, but the child does not outlive the run.
    leaver = stub(
        "import subprocess\n"
        "child = subprocess.Popen(\n"
        '    [sys.executable, "-c", "import time; time.sleep(60)"],\n'
        "    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,\n"
        ")\n"
        'sys.stderr.write(f"child {child.pid}\\n")\n'
    )
    evidence = tmp_path / "evidence.json"
    result = cli(["continuation", "run", str(capsule), "--json", "--agent", leaver,
                  "--evidence", str(evidence), *NOT_ISOLATED])  # fmt: skip
    assert result.code == 0
    for agent in json.loads(evidence.read_bytes())["agents"]:
        child = int(agent["stderr_tail"].split()[1])
        assert agent["exit_status"] == 0
        assert [p["pid"] for p in agent["left_running"]] == [child]
        assert _gone(child)
        assert (
            "1 other process(es) of it were still running when it ended and were killed"
            in (agent["observed"][-1])
        )
    assert "agent a left 1 process(es) running; the runner killed them" in result.err


def test_processes_left_by_an_agent_die_when_it_ends_not_when_both_do(
    cli, capsule: Path, stub, drop_box: Path
) -> None:
    # a leaves a child and ends at once; b, still running, looks for that child.
    both = stub(
        "import subprocess, time\n"
        f'report = os.path.join("{drop_box}", "child")\n'
        'if slot == "a":\n'
        "    child = subprocess.Popen(\n"
        '        [sys.executable, "-c", "import time; time.sleep(60)"],\n'
        "        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,\n"
        "    )\n"
        '    with open(report + ".tmp", "w") as handle:\n'
        "        handle.write(str(child.pid))\n"
        '    os.rename(report + ".tmp", report)\n'
        "else:\n"
        "    until = time.monotonic() + 10\n"
        "    while not os.path.exists(report) and time.monotonic() < until:\n"
        "        time.sleep(0.02)\n"
        "    pid = open(report).read()\n"
        "    until = time.monotonic() + 3\n"
        "    state = None\n"
        "    while time.monotonic() < until:\n"
        "        try:\n"
        '            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]\n'
        "        except OSError:\n"
        "            state = None\n"
        '        if state in (None, "Z"):\n'
        "            break\n"
        "        time.sleep(0.02)\n"
        '    result["rationale"] = "a\'s child: " + ("gone" if state in (None, "Z") else "alive")\n'
    )
    code, verdict = run(cli, capsule, "--agent", both, *NOT_ISOLATED)
    assert code == 0
    assert verdict["results"][1]["result"]["rationale"] == "a's child: gone"


@pytest.mark.skipif(not AS_ROOT, reason=f"{NEEDS_ROOT}, which finds processes outside the session")
def test_agent_child_that_calls_setsid_is_killed(cli, capsule: Path, stub, tmp_path: Path) -> None:
    escaper = stub(
        "import subprocess\n"
        "child = subprocess.Popen(\n"
        '    [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True,\n'
        "    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,\n"
        ")\n"
        'sys.stderr.write(f"child {child.pid}\\n")\n'
    )
    evidence = tmp_path / "evidence.json"
    code, _ = run(cli, capsule, "--agent", escaper, "--evidence", str(evidence), *NOT_ISOLATED)
    assert code == 0
    for agent in json.loads(evidence.read_bytes())["agents"]:
        child = int(agent["stderr_tail"].split()[1])
        assert [p["pid"] for p in agent["left_running"]] == [child]
        assert _gone(child)


def test_agent_whose_output_closes_a_moment_after_its_exit_passes(
    cli, capsule: Path, stub, tmp_path: Path
) -> None:
    # As an isolated agent's PID namespace going after bwrap reports the exit,
    # on a loaded machine: the output reaches end of file a second after the
    # agent exited. The runner judged output held after 0.5 s, and a run on two
    # busy cores failed check 1 for an agent that did nothing wrong.
    late = stub(
        'sys.stdout.write(json.dumps(result) + "\\n")\n'
        "sys.stdout.flush()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    time.sleep(1.0)\n"
        "    os._exit(0)\n"
        "os._exit(0)\n"
    )
    Path(late).write_text(
        Path(late).read_text().replace("import hashlib,", "import time, hashlib,")
    )
    evidence = tmp_path / "evidence.json"
    code, verdict = run(cli, capsule, "--agent", late, "--evidence", str(evidence), *NOT_ISOLATED)
    assert code == 0, verdict
    for record in json.loads(evidence.read_bytes())["agents"]:
        assert record["output_held"] == []
        assert record["exit_status"] == 0


def test_agent_whose_left_behind_process_holds_its_output(
    cli, capsule: Path, stub, tmp_path: Path
) -> None:
    # The agent prints its result and exits 0, but a child that left its
    # session keeps stdout open. The runner waits for the exit, not for the
    # timeout, and keeps what was printed.
    holder = stub(
        "import subprocess\n"
        'sys.stdout.write(json.dumps(result) + "\\n")\n'
        "sys.stdout.flush()\n"
        "child = subprocess.Popen(\n"
        f'    [sys.executable, "-c", "import time; time.sleep({60 if AS_ROOT else 5})"],\n'
        "    start_new_session=True, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL,\n"
        ")\n"
        'sys.stderr.write(f"child {child.pid}\\n")\n'
        "sys.stderr.flush()\n"
        "os._exit(0)\n"
    )
    evidence = tmp_path / "evidence.json"
    started = time.monotonic()
    code, verdict = run(
        cli, capsule, "--agent", holder, "--agent-b", stub(name="honest"),
        "--timeout", "30", "--evidence", str(evidence), *NOT_ISOLATED,
    )  # fmt: skip
    assert time.monotonic() - started < 10
    assert code == 1
    assert failing(verdict) == [1]
    assert reason(verdict, 1).startswith(
        "a (agent a): it exited 0 but a process it left behind held its output; the runner "
        "killed it and kept the "
    )
    record = json.loads(evidence.read_bytes())["agents"][0]
    assert (record["exit_status"], record["timed_out"]) == (0, False)
    assert record["output_held"] == ["stdout"]
    assert record["stdout_bytes"] > 0
    assert record["stdout_sha256"] == verdict["results"][0]["sha256"]
    child = int(record["stderr_tail"].split()[1])
    if AS_ROOT:
        # Its dedicated uid gives the child away, whatever session it is in.
        assert [p["pid"] for p in record["left_running"]] == [child]
        assert _gone(child)


# -- bounded output and resource limits -------------------------------------------


def test_agent_flooding_stdout_is_cut_off_at_1_mib(
    cli, capsule: Path, stub, tmp_path: Path
) -> None:
    flood = stub('for _ in range(128):\n    sys.stdout.buffer.write(b"x" * 65536)\n')
    evidence = tmp_path / "evidence.json"
    code, verdict = run(
        cli, capsule, "--agent", flood, "--agent-b", stub(name="honest"),
        "--evidence", str(evidence),
    )  # fmt: skip
    assert code == 1
    assert failing(verdict) == [1]
    assert reason(verdict, 1) == (
        "a (agent a): its output went over 1 MiB: the runner stopped reading and killed it"
    )
    record = json.loads(evidence.read_bytes())["agents"][0]
    assert (record["stdout_bytes"], record["stdout_truncated"]) == (1 << 20, True)
    assert (
        record["stdout_sha256"] == verdict["results"][0]["sha256"] == sha256_hex(b"x" * (1 << 20))
    )


def test_agent_flooding_stderr_leaves_only_a_tail(cli, capsule: Path, stub, tmp_path: Path) -> None:
    noisy = stub(
        "for _ in range(128):\n"
        '    sys.stderr.buffer.write(b"y" * 65536)\n'
        'sys.stderr.write("end\\n")\n'
    )
    evidence = tmp_path / "evidence.json"
    code, _ = run(cli, capsule, "--agent", noisy, "--evidence", str(evidence))
    assert code == 0
    for record in json.loads(evidence.read_bytes())["agents"]:
        assert record["stderr_bytes"] == 128 * 65536 + 4
        assert record["stderr_tail"] == "y" * (4096 - 4) + "end\n"


@pytest.mark.skipif(
    not AS_ROOT, reason=f"{NEEDS_ROOT}; RLIMIT_NPROC counts every process of a uid, so it is "
    "set only for a dedicated one"
)  # fmt: skip
@pytest.mark.parametrize("isolation", ["namespaces", "none"])
def test_agent_forking_500_children_is_stopped_by_nproc(
    cli, capsule: Path, stub, tmp_path: Path, isolation: str
) -> None:
    bomb = stub(
        "import time\n"
        "children = 0\n"
        "try:\n"
        "    for _ in range(500):\n"
        "        if os.fork() == 0:\n"
        "            os.close(1)\n"
        "            os.close(2)\n"
        "            time.sleep(60)\n"
        "            os._exit(0)\n"
        "        children += 1\n"
        '    stopped = "nothing"\n'
        "except OSError as exc:\n"
        "    stopped = errno.errorcode[exc.errno]\n"
        'result["rationale"] = f"forked {children}, then {stopped}"\n'
    )
    Path(bomb).write_text(
        Path(bomb).read_text().replace("import hashlib,", "import errno, hashlib,")
    )
    evidence = tmp_path / "evidence.json"
    code, verdict = run(
        cli, capsule, "--agent", bomb, "--evidence", str(evidence), "--isolation", isolation
    )
    assert code == 0
    for entry, record in zip(
        verdict["results"], json.loads(evidence.read_bytes())["agents"], strict=True
    ):
        # NPROC_LIMIT, or less when our own hard limit is lower; the agent is
        # one, and, isolated, bwrap's few processes (outside and inside) count too.
        limit = record["limits"]["nproc"]
        assert 0 < limit <= limits.NPROC_LIMIT
        forked, _, stopped = entry["result"]["rationale"].removeprefix("forked ").partition(", ")
        assert stopped == "then EAGAIN"
        if isolation == "namespaces":
            assert limit - 5 <= int(forked) < limit - 1
        else:
            assert int(forked) == limit - 1
        if isolation == "namespaces":  # its PID namespace took them all with it
            assert record["left_running"] == []
        else:
            assert len(record["left_running"]) == processes.MAX_LISTED_PROCESSES
        assert record["survivors"] == []


def test_agent_cannot_write_a_file_over_the_size_limit(cli, capsule: Path, stub) -> None:
    big = stub(
        "import errno, tempfile\n"
        "with tempfile.TemporaryFile(buffering=0) as handle:\n"
        f"    handle.seek({limits.FSIZE_LIMIT})\n"
        "    try:\n"
        '        handle.write(b"x")\n'
        '        outcome = "written"\n'
        "    except OSError as exc:\n"
        "        outcome = errno.errorcode[exc.errno]\n"
        'result["rationale"] = "one byte past the limit: " + outcome\n'
    )
    code, verdict = run(cli, capsule, "--agent", big)
    assert code == 0, verdict["checks"]
    assert [r["result"]["rationale"] for r in verdict["results"]] == [
        "one byte past the limit: EFBIG"
    ] * 2


def test_agent_cannot_gain_privileges(cli, capsule: Path, stub) -> None:
    probe = stub(
        'status = open("/proc/self/status").read().splitlines()\n'
        'result["rationale"] = next(line for line in status if line.startswith("NoNewPrivs"))\n'
    )
    code, verdict = run(cli, capsule, "--agent", probe)
    assert code == 0
    assert [r["result"]["rationale"] for r in verdict["results"]] == ["NoNewPrivs:\t1"] * 2


# -- what the verdict may claim ----------------------------------------------------


def test_agent_that_cannot_start(
    cli, capsule: Path, stub, stub_folder: Path, tmp_path: Path
) -> None:
    junk = stub_folder / "not-a-program"
    junk.write_bytes(b"\x7fELF, or not quite\n")
    junk.chmod(0o755)
    evidence = tmp_path / "evidence.json"
    code, verdict = run(
        cli, capsule, "--agent", str(junk), "--agent-b", stub(name="honest"),
        "--evidence", str(evidence), *NOT_ISOLATED,
    )  # fmt: skip
    assert code == 1
    assert failing(verdict) == [1]
    assert reason(verdict, 1).startswith(
        f"a (agent a): the agent could not start: cannot execute {junk}"
    )
    agents = json.loads(evidence.read_bytes())["agents"]
    # The evidence hashes exactly what the verdict judged: nothing, for a.
    assert [a["stdout_sha256"] for a in agents] == [r["sha256"] for r in verdict["results"]]
    assert agents[0]["stdout_sha256"] is None
    # The runner saw no run of a at all: the workspace claims stay the agents' word.
    assert verdict["claims"]["fresh_workspace"] == "agent_reported"
    assert verdict["claims"]["no_prior_context"] == "agent_reported"
    assert verdict["execution"]["observed"][0].startswith("agent a could not start (")


def test_isolated_agent_that_cannot_start_fails_check_1(
    cli, capsule: Path, stub, stub_folder: Path, tmp_path: Path
) -> None:
    # Isolated, bwrap starts and execs the agent inside its namespaces: a
    # program the kernel cannot run shows as bwrap's non-zero exit and its words.
    junk = stub_folder / "not-a-program-either"
    junk.write_bytes(b"\x7fELF, or not quite\n")
    junk.chmod(0o755)
    evidence = tmp_path / "evidence.json"
    code, verdict = run(
        cli, capsule, "--agent", str(junk), "--agent-b", stub(name="honest"),
        "--evidence", str(evidence), "--isolation", "namespaces",
    )  # fmt: skip
    assert code == 1
    assert failing(verdict) == [1]
    assert reason(verdict, 1).startswith("a (agent a): the agent exited with status ")
    record = json.loads(evidence.read_bytes())["agents"][0]
    assert record["exit_status"] not in (0, None)
    assert str(junk) in record["stderr_tail"]


def test_changed_workspace_is_not_runner_observed(cli, capsule: Path, stub, tmp_path: Path) -> None:
    sneaky = stub('os.chmod(".", 0o755)\nopen("notes.txt", "w").write("scratch")\n')
    evidence = tmp_path / "evidence.json"
    code, verdict = run(cli, capsule, "--agent", sneaky, "--evidence", str(evidence))
    assert code == 1
    observed = " ".join(verdict["execution"]["observed"])
    if AS_ROOT:
        # The operating system refuses the agent's own uid: the workspace stays
        # as it was, and the agent fails by its exit status instead.
        assert "notes.txt" not in observed
        assert failing(verdict) == [1]
        assert "exit" in reason(verdict, 1)
    else:
        assert verdict["claims"]["fresh_workspace"] == "agent_reported"
        assert "afterwards it holds 1 entry: 'notes.txt'" in verdict["execution"]["observed"][1]


def test_attestation_follows_what_the_runner_saw(capsule: Path, stub) -> None:
    # The runner's own records, from a real run, then one workspace seen changed.
    honest = preflight.parse_command(stub(), "--agent")
    runs = supervision.run_agents(
        capsule.read_bytes(), (honest, honest), timeout=30, users=agent_users.agent_users()
    )
    assert runner_evidence.attestation(runs, "0" * 64).workspaces_observed is True
    written = dataclasses.replace(runs[1], after=dataclasses.replace(runs[1].after, entries=("x",)))
    seen = runner_evidence.attestation((runs[0], written), "0" * 64)
    assert seen.workspaces_observed is False
    assert "agent b: its workspace was a new, empty directory" in seen.observed[6]
    assert seen.observed[6].endswith(", and afterwards it holds 1 entry: 'x'")
    # Called without an isolation, the runner isolates nothing and says so.
    assert seen.isolation_enforced is False
    assert (
        seen.observed[4]
        == "agent a: it was not isolated in namespaces: the caller did not ask for it"
    )
    assert seen.prompt_delivered is True
    # A prompt file found replaced: the runner no longer vouches for the prompt.
    replaced = dataclasses.replace(runs[1], prompt_after=None)
    assert runner_evidence.attestation((runs[0], replaced), "0" * 64).prompt_delivered is False
    assert replaced.problem == "its prompt file was changed or replaced"


def test_run_and_verify_is_a_library_call_that_prints_nothing(
    capsule: Path, stub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()  # what building the capsule printed
    heard: list[str] = []
    evidence_file = tmp_path / "evidence.json"
    report = proof.run_and_verify(
        str(capsule), stub(), timeout=30, evidence_path=str(evidence_file), progress=heard.append
    )
    assert report.verdict.agreement is True
    assert [run.slot for run in report.runs] == ["a", "b"]
    assert report.evidence_sha256 == sha256_hex(evidence_file.read_bytes())
    assert report.warnings() == []
    assert len(heard) == 1
    assert heard[0].startswith("running agents a and b as ")
    assert capsys.readouterr() == ("", "")


def test_verify_results_is_a_library_call(capsule: Path, stub, tmp_path: Path) -> None:
    honest = preflight.parse_command(stub(), "--agent")
    runs = supervision.run_agents(
        capsule.read_bytes(), (honest, honest), timeout=30, users=agent_users.agent_users()
    )
    paths = []
    for run in runs:
        path = tmp_path / f"{run.slot}.json"
        path.write_bytes(run.stdout)
        paths.append(str(path))
    verdict = proof.verify_results(str(capsule), paths)
    assert verdict.agreement is True
    assert verdict.attestation is None
    broken = tmp_path / "broken.json"
    broken.write_bytes(b"{} {}")
    with pytest.raises(MalformedInput) as raised:
        proof.verify_results(str(capsule), [str(broken), paths[1]])
    assert raised.value.code == "result_malformed"


# -- the workspace comparison itself -----------------------------------------------

BEFORE = Observation("directory", mode=0o555, owner_uid=0, mtime_ns=1000, ctime_ns=2000, entries=())
MODIFIED = "it was modified (entries were created and removed)"


@pytest.mark.parametrize(
    ("after", "change"),
    [
        (BEFORE, None),
        (dataclasses.replace(BEFORE, entries=("notes.txt",)), "it holds 1 entry: 'notes.txt'"),
        (
            dataclasses.replace(BEFORE, entries=tuple(f"f{n:02}" for n in range(25))),
            "it holds 25 entries: " + ", ".join(f"'f{n:02}'" for n in range(20)) + " and 5 more",
        ),
        (dataclasses.replace(BEFORE, mode=0o755), "its mode changed from 0555 to 0755"),
        (dataclasses.replace(BEFORE, owner_uid=1000), "its owner changed"),
        (dataclasses.replace(BEFORE, mtime_ns=1001), MODIFIED),
        (dataclasses.replace(BEFORE, ctime_ns=2001), MODIFIED),
        (dataclasses.replace(BEFORE, entries=None), "it can no longer be listed"),
        (Observation("missing"), "it was removed or replaced"),
        (Observation("not_a_directory", mode=0o644, owner_uid=0), "it was removed or replaced"),
    ],
    ids=["unchanged", "one-entry", "many-entries", "mode", "owner", "mtime", "ctime",
         "unlistable", "missing", "replaced"],
)  # fmt: skip
def test_workspace_change(after: Observation, change: str | None) -> None:
    assert workspace_change(BEFORE, after) == change


def test_workspace_change_sees_an_entry_created_and_removed(tmp_path: Path) -> None:
    folder = tmp_path / "workspace"
    folder.mkdir()
    before = observe(str(folder))
    time.sleep(0.02)  # past the file system's timestamp granularity
    (folder / "scratch").write_text("x")
    (folder / "scratch").unlink()
    after = observe(str(folder))
    assert after.entries == ()
    assert workspace_change(before, after) == MODIFIED


def test_agent_path_that_is_not_utf8_is_shown_not_a_crash(
    cli, capsule: Path, stub, stub_folder: Path, tmp_path: Path
) -> None:
    odd = stub_folder / os.fsdecode(b"agent-\xff.py")
    shutil.copyfile(stub(), odd)
    odd.chmod(0o755)
    evidence = tmp_path / "evidence.json"
    code, _ = run(cli, capsule, "--agent", str(odd), "--evidence", str(evidence))
    assert code == 0
    agents = json.loads(evidence.read_bytes())["agents"]
    assert [a["argv"] for a in agents] == [[str(stub_folder / "agent-\ufffd.py")]] * 2


# -- usage errors: nothing runs ------------------------------------------------


def test_unknown_agent_program_is_a_usage_error(cli, capsule: Path) -> None:
    code, document = run(cli, capsule, "--agent", "capsule-no-such-agent --flag")
    assert code == 2
    assert document["error"]["code"] == "agent_not_found"


def test_agent_the_agent_user_cannot_execute_is_refused_before_start(
    cli, capsule: Path, stub, stub_folder: Path
) -> None:
    if AS_ROOT:
        # Root may run it, the agent's dedicated uid may not: a private folder.
        private = stub_folder / "private"
        private.mkdir(mode=0o700, exist_ok=True)
        private.chmod(0o700)
        program = private / "agent.py"
        shutil.copyfile(stub(), program)
        program.chmod(0o755)
        why = f"{private} is not searchable by others (mode 0700)"
    else:
        program = Path(stub())
        program.chmod(0o644)
        why = f"{program} is not executable"
    result = cli(["continuation", "run", str(capsule), "--json", "--agent", str(program)])
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["code"] == "agent_not_executable"
    assert error["message"].endswith(why)
    assert "running agents" not in result.err


@pytest.mark.skipif(not AS_ROOT, reason=f"{NEEDS_ROOT}; our own user can run what we can")
@pytest.mark.parametrize("how", ["private-interpreter", "env-interpreter-not-on-path"])
def test_script_whose_interpreter_the_agent_user_cannot_run(
    cli, capsule: Path, agent_python: str, stub_folder: Path, how: str
) -> None:
    if how == "private-interpreter":
        private = stub_folder / "private-python"
        private.mkdir(mode=0o700, exist_ok=True)
        private.chmod(0o700)
        interpreter = private / "python3"
        interpreter.unlink(missing_ok=True)
        interpreter.symlink_to(agent_python)
        shebang, why = f"#!{interpreter}", f"{private} is not searchable by others (mode 0700)"
    else:
        shebang = "#!/usr/bin/env capsule-no-such-interpreter"
        why = "its interpreter capsule-no-such-interpreter is not on the agent's PATH"
        why += f" ({SYSTEM_PATH})"
    script = stub_folder / f"{how}.py"
    script.write_text(f"{shebang}\n{HONEST}{PRINT}")
    script.chmod(0o755)
    result = cli(["continuation", "run", str(capsule), "--json", "--agent", str(script)])
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["code"] == "agent_not_executable"
    assert error["message"].endswith(why)


def test_unsplittable_agent_command_is_a_usage_error(cli, capsule: Path) -> None:
    code, document = run(cli, capsule, "--agent", "agent 'unterminated")
    assert code == 2
    assert document["error"]["code"] == "agent_command_invalid"


def test_pass_env_must_be_set(cli, capsule: Path, stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAPSULE_TEST_UNSET", raising=False)
    code, document = run(cli, capsule, "--agent", stub(), "--pass-env", "CAPSULE_TEST_UNSET")
    assert code == 2
    assert document["error"]["code"] == "pass_env_unset"


@pytest.mark.parametrize("name", ["A-B", "1ST", "A=B", ""])
def test_pass_env_must_be_a_variable_name(cli, capsule: Path, stub, name: str) -> None:
    # Regression: pass_env_invalid was raised but neither documented nor tested.
    code, document = run(cli, capsule, "--agent", stub(), "--pass-env", name)
    assert code == 2
    assert document["error"]["code"] == "pass_env_invalid"


def test_pass_env_cannot_override_home(cli, capsule: Path, stub) -> None:
    code, document = run(cli, capsule, "--agent", stub(), "--pass-env", "HOME")
    assert code == 2
    assert document["error"]["code"] == "pass_env_reserved"


def test_pass_env_cannot_override_the_prompt_file(
    cli, capsule: Path, stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAPSULE_PROMPT_FILE", "/etc/hostname")
    code, document = run(cli, capsule, "--agent", stub(), "--pass-env", "CAPSULE_PROMPT_FILE")
    assert code == 2
    assert document["error"]["code"] == "pass_env_reserved"


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf", "1e10", "86401"])
def test_timeout_must_be_positive_and_at_most_a_day(cli, capsule: Path, stub, timeout: str) -> None:
    code, document = run(cli, capsule, "--agent", stub(name="honest"), f"--timeout={timeout}")
    assert code == 2
    assert document["error"]["code"] == "usage"


def test_evidence_folder_must_exist_before_agents_run(
    cli, capsule: Path, stub, tmp_path: Path
) -> None:
    target = tmp_path / "no-such-folder" / "evidence.json"
    result = cli(["continuation", "run", str(capsule), "--json", "--agent", stub(name="honest"),
                  "--evidence", str(target)])  # fmt: skip
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "output_failed"
    assert "running agents" not in result.err


def test_corrupt_capsule_runs_no_agent(cli, capsule: Path, stub) -> None:
    capsule.write_bytes(capsule.read_bytes().replace(b'"commit"', b' "commit"', 1))
    result = cli(["continuation", "run", str(capsule), "--json", "--agent", stub()])
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "non_canonical"
    assert "running agents" not in result.err


# -- the documented adapter, run for real against a stand-in for `llm` -------

ADAPTER = Path(__file__).resolve().parent.parent / "governance" / "examples" / "continuation-llm.sh"

# Answers like a chatty model: prose, a code fence, and fields it cannot know.
# It insists on the exact prompt, to the last byte (its final newline included).
FAKE_LLM = """\
import hashlib, json, os, sys

args = sys.argv[1:]
system = args[args.index("-s") + 1]
if args[0] != "prompt" or hashlib.sha256(system.encode()).hexdigest() != "PROMPT_SHA256":
    sys.exit(f"the adapter did not send the continuation prompt: {system[-40:]!r}")
capsule = json.loads(sys.stdin.read())
read = capsule["reads"][0]
quoted = {"locator": read["locator"], "lines": [read["lines"][0]] * 2,
          "quote": read["text"].splitlines()[0]}
answer = {
    "schema": "continuation-result/1",
    "agent": {"id": "the model"},
    "prior_context": False,
    "capsule_sha256": "unknown",
    "decision": "continue",
    "rationale": "The packet and phase 2 say what to do.",
    "next_action": "Start phase 2.",
    "citations": [read["locator"], quoted],
}
text = json.dumps(answer, indent=2)
if os.environ.get("FAKE_LLM_ANSWER") == "duplicate-key":
    # Two decisions in one object: which one a reader keeps is up to the reader.
    text = text.replace('"decision": "continue",', '"decision": "blocked", "decision": "continue",')
print("Here is my decision:\\n```json\\n" + text + "\\n```")
"""


@pytest.fixture
def adapter(agent_python: str, stub_folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The documented adapter with its prompt file, and a stand-in for llm."""
    folder = stub_folder / "adapter"
    folder.mkdir(mode=0o755, exist_ok=True)
    folder.chmod(0o755)
    script = folder / ADAPTER.name
    shutil.copyfile(ADAPTER, script)
    script.chmod(0o755)
    # No prompt file beside the adapter: the runner hands the prompt over.
    (folder / "continuation-prompt.txt").unlink(missing_ok=True)
    fake = folder / "llm"
    fake.write_text(f"#!{agent_python}\n" + FAKE_LLM.replace("PROMPT_SHA256", prompt.sha256()))
    fake.chmod(0o755)
    python3 = folder / "python3"
    python3.unlink(missing_ok=True)
    python3.symlink_to(agent_python)
    monkeypatch.setenv("PATH", f"{folder}:{SYSTEM_PATH}")
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    return str(script)


def test_documented_llm_adapter(cli, capsule: Path, adapter: str, tmp_path: Path) -> None:
    evidence = tmp_path / "evidence.json"
    code, verdict = run(
        cli, capsule, "--agent", adapter, "--pass-env", "PATH", "--pass-env", "LLM_MODEL",
        "--evidence", str(evidence), "--share", str(Path(adapter).parent),
    )  # fmt: skip
    assert code == 0, verdict["checks"]
    # The stand-in for llm exits 1 unless its -s text is the prompt to the last
    # byte: what the runner delivered (its hash in the evidence) reached the model.
    assert verdict["claims"]["prompt"] == "runner_observed"
    for record in json.loads(evidence.read_bytes())["agents"]:
        assert record["input"]["prompt_sha256"] == prompt.sha256()
    results = [entry["result"] for entry in verdict["results"]]
    assert [r["agent"]["id"] for r in results] == ["llm:fake-model:a", "llm:fake-model:b"]
    assert all(f"prompt sha256 {prompt.sha256()}" in r["agent"]["runtime"] for r in results)
    assert all(r["capsule_sha256"] == verdict["capsule"]["sha256"] for r in results)
    # The adapter names the result's version; the model's quote is checked.
    assert all(r["schema"] == "continuation-result/2" for r in results)
    assert "every quote is in its part's lines" in reason(verdict, 6)


def test_documented_llm_adapter_refuses_a_duplicate_key(
    cli, capsule: Path, adapter: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FAKE_LLM_ANSWER", "duplicate-key")
    evidence = tmp_path / "evidence.json"
    code, verdict = run(
        cli, capsule, "--agent", adapter, "--pass-env", "PATH", "--pass-env", "LLM_MODEL",
        "--pass-env", "FAKE_LLM_ANSWER", "--evidence", str(evidence),
        "--share", str(Path(adapter).parent),
    )  # fmt: skip
    assert code == 1
    assert failing(verdict) == [1]
    assert "a (agent a): the agent exited with status 1" in reason(verdict, 1)
    for record in json.loads(evidence.read_bytes())["agents"]:
        assert "duplicate key 'decision'" in record["stderr_tail"]


def _subcommands(parser: Any) -> dict[str, Any]:
    """The subparsers of ``parser``, by command name (argparse keeps them private)."""
    assert parser._subparsers is not None
    choices = parser._subparsers._group_actions[0].choices
    assert isinstance(choices, dict)
    return choices


def test_every_option_has_help_and_docs() -> None:
    docs = (ADAPTER.parents[2] / "docs" / "continuation.md").read_text()
    commands = _subcommands(_subcommands(build_parser())["continuation"])
    for name, parser in commands.items():
        assert f"capsule continuation {name}" in docs
        for action in parser._actions:
            assert action.help, (name, action.dest)
            for option in action.option_strings:
                if option not in {"-h", "--help"}:
                    assert option in docs, (name, option)
    for check in ("two_results", "schema_valid", "distinct_identities", "no_prior_context",
                  "capsule_bound", "citations_in_capsule", "decisions_agree"):  # fmt: skip
        assert check in docs
