"""``capsule continuation run`` against real stub agents: small executables that
read the capsule on stdin and print a result, each misbehaving in one way.

As root (CI), the runner hands agents to the unprivileged user ``nobody``, so
the stubs and their interpreter must be reachable by that user: they live in a
world-readable folder and use a Python that ``nobody`` can execute."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gitrepo import Repo
from governance import canonical
from governance.continuation import prompt
from governance.hashing import sha256_hex
from governance.schema import validate

PACKET = "packets/P-1/packet.yml"
AS_ROOT = os.geteuid() == 0
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"

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


def _as_agent_user() -> dict[str, object]:
    if not AS_ROOT:
        return {}
    entry = pwd.getpwnam("nobody")
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _agent_can_run(argv: list[str]) -> bool:
    try:
        done = subprocess.run(
            argv,
            cwd="/",
            env={"PATH": SYSTEM_PATH, "LC_ALL": "C.UTF-8"},
            capture_output=True,
            timeout=30,
            check=False,
            **_as_agent_user(),  # type: ignore[arg-type]
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
    pytest.skip("no python3 that the unprivileged agent user can execute")


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


@pytest.fixture
def capsule(cli, repo: Repo, tmp_path: Path) -> Path:
    target = tmp_path / "capsule.json"
    assert cli(["build", PACKET, "-o", str(target)], cwd=repo.path).code == 0
    return target


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
    # The write itself was refused (by the OS as root, by the mode bits otherwise).
    assert "a (agent a): the agent exited with status 1" in reason(verdict, 1)
    agents = json.loads(evidence.read_bytes())["agents"]
    for agent in agents:
        assert "PermissionError" in agent["stderr_tail"]
        assert agent["workspace"]["after"]["entries"] == []
        assert agent["workspace"]["changed"] is None


def test_agent_making_its_workspace_writable(cli, capsule: Path, stub) -> None:
    sneaky = stub('os.chmod(".", 0o755)\nopen("notes.txt", "w").write("scratch")\n')
    code, verdict = run(cli, capsule, "--agent", sneaky)
    assert code == 1
    assert failing(verdict) == [1]
    if AS_ROOT:
        # The agent runs as nobody and does not own its workspace.
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
        cli, capsule, "--agent", hang, "--timeout", "1", "--evidence", str(evidence)
    )
    assert time.monotonic() - started < 15
    assert code == 1
    assert failing(verdict) == [1]
    assert "the agent did not finish within 1 s; its process group was killed" in reason(verdict, 1)
    for agent in json.loads(evidence.read_bytes())["agents"]:
        assert agent["timed_out"] is True
        assert agent["exit_status"] == -9
        child = int(agent["stderr_tail"].split()[1])
        assert _gone(child)


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
         "--pass-env", "CAPSULE_TEST_PASSED", "--evidence", str(evidence)]
    )  # fmt: skip
    assert result.code == 0
    verdict = json.loads(result.out)
    for slot, entry in zip("ab", verdict["results"], strict=True):
        seen = json.loads(entry["result"]["rationale"])
        assert sorted(seen) == [
            "CAPSULE_AGENT_SLOT", "CAPSULE_TEST_PASSED", "HOME", "LANG", "LC_ALL", "PATH",
        ]  # fmt: skip
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


# -- evidence and what it lets the verdict claim -----------------------------


def test_evidence_makes_workspace_claims_runner_observed(
    cli, capsule: Path, stub, tmp_path: Path
) -> None:
    agent = stub()
    evidence = tmp_path / "evidence.json"
    code, verdict = run(cli, capsule, "--agent", agent, "--evidence", str(evidence))
    assert code == 0
    data = evidence.read_bytes()
    assert canonical.dumps(json.loads(data)) == data
    document = json.loads(data)
    validate(document, "continuation-evidence-1", what="evidence", code="bad_evidence")
    assert verdict["execution"] == {
        "status": "runner_observed",
        "evidence_sha256": sha256_hex(data),
    }
    assert verdict["claims"] == {
        "identity": "agent_reported",
        "fresh_workspace": "runner_observed",
        "no_prior_context": "runner_observed",
    }
    assert document["capsule_sha256"] == verdict["capsule"]["sha256"]
    assert document["prompt_sha256"] == prompt.sha256()
    for slot, record, result in zip("ab", document["agents"], verdict["results"], strict=True):
        assert record["slot"] == slot
        assert record["argv"] == [agent]
        assert record["exit_status"] == 0
        assert record["timed_out"] is False
        assert record["stdout_sha256"] == result["sha256"]
        assert record["env_names"] == ["CAPSULE_AGENT_SLOT", "HOME", "LANG", "LC_ALL", "PATH"]
        assert record["user"]["privilege_dropped"] is AS_ROOT
        if AS_ROOT:
            assert record["user"]["name"] == "nobody"
        workspace = record["workspace"]
        for moment in ("before", "after"):
            assert workspace[moment]["kind"] == "directory"
            assert workspace[moment]["mode"] == "0555"
            assert workspace[moment]["entries"] == []
        assert workspace["changed"] is None
        # The workspace is gone once the run is over.
        assert not os.path.exists(workspace["path"])


def test_agents_run_concurrently(cli, capsule: Path, stub) -> None:
    slow = stub("import time\ntime.sleep(1.5)\n")
    started = time.monotonic()
    code, _ = run(cli, capsule, "--agent", slow, "--timeout", "20")
    assert code == 0
    assert time.monotonic() - started < 2.9


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


# -- usage errors: nothing runs ------------------------------------------------


def test_unknown_agent_program_is_a_usage_error(cli, capsule: Path) -> None:
    code, document = run(cli, capsule, "--agent", "capsule-no-such-agent --flag")
    assert code == 2
    assert document["error"]["code"] == "agent_not_found"


def test_unsplittable_agent_command_is_a_usage_error(cli, capsule: Path) -> None:
    code, document = run(cli, capsule, "--agent", "agent 'unterminated")
    assert code == 2
    assert document["error"]["code"] == "agent_command_invalid"


def test_pass_env_must_be_set(cli, capsule: Path, stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAPSULE_TEST_UNSET", raising=False)
    code, document = run(cli, capsule, "--agent", stub(), "--pass-env", "CAPSULE_TEST_UNSET")
    assert code == 2
    assert document["error"]["code"] == "pass_env_unset"


def test_pass_env_cannot_override_home(cli, capsule: Path, stub) -> None:
    code, document = run(cli, capsule, "--agent", stub(), "--pass-env", "HOME")
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

ADAPTER = Path(__file__).resolve().parent.parent / "docs" / "examples" / "continuation-llm.sh"

# Answers like a chatty model: prose, a code fence, and fields it cannot know.
FAKE_LLM = """\
import json, sys

args = sys.argv[1:]
system = args[args.index("-s") + 1]
if args[0] != "prompt" or not system.startswith("continuation-prompt/2\\n"):
    sys.exit("the adapter did not send the continuation prompt")
capsule = json.loads(sys.stdin.read())
answer = {
    "schema": "continuation-result/1",
    "agent": {"id": "the model"},
    "prior_context": False,
    "capsule_sha256": "unknown",
    "decision": "continue",
    "rationale": "The packet and phase 2 say what to do.",
    "next_action": "Start phase 2.",
    "citations": [capsule["reads"][0]["locator"]],
}
print("Here is my decision:\\n```json\\n" + json.dumps(answer, indent=2) + "\\n```")
"""


def test_documented_llm_adapter(
    cli, capsule: Path, agent_python: str, stub_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = stub_folder / "adapter"
    folder.mkdir(mode=0o755, exist_ok=True)
    folder.chmod(0o755)
    adapter = folder / ADAPTER.name
    shutil.copyfile(ADAPTER, adapter)
    adapter.chmod(0o755)
    (folder / "continuation-prompt.txt").write_text(cli(["continuation", "prompt"]).out)
    fake = folder / "llm"
    fake.write_text(f"#!{agent_python}\n{FAKE_LLM}")
    fake.chmod(0o755)
    python3 = folder / "python3"
    python3.unlink(missing_ok=True)
    python3.symlink_to(agent_python)
    monkeypatch.setenv("PATH", f"{folder}:{SYSTEM_PATH}")
    monkeypatch.setenv("LLM_MODEL", "fake-model")
    code, verdict = run(
        cli, capsule, "--agent", str(adapter), "--pass-env", "PATH", "--pass-env", "LLM_MODEL"
    )
    assert code == 0, verdict["checks"]
    results = [entry["result"] for entry in verdict["results"]]
    assert [r["agent"]["id"] for r in results] == ["llm:fake-model:a", "llm:fake-model:b"]
    assert all(f"prompt sha256 {prompt.sha256()}" in r["agent"]["runtime"] for r in results)
    assert all(r["capsule_sha256"] == verdict["capsule"]["sha256"] for r in results)


def test_every_option_has_help_and_docs() -> None:
    from governance.cli import build_parser

    docs = (ADAPTER.parent.parent / "continuation.md").read_text()
    continuation = build_parser()._subparsers._group_actions[0].choices["continuation"]
    commands = continuation._subparsers._group_actions[0].choices
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
