"""Audit waivers (policies/audit-waivers.yml): a committed list of known-bad
record blobs, each with a reason, reported as ``waived``; a waiver that
matches nothing is ``waiver_unused``; a malformed file is ``waivers_malformed``."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from support.gitrepo import Repo
from support.history import History, audit, forge_whole_read, git, make_history

WAIVERS = "policies/audit-waivers.yml"
REASON = "forged in review; the agent never used it (incident 7)"


def waiver_file(*entries: dict[str, str]) -> str:
    lines = ["waivers:"]
    for entry in entries:
        first = True
        for key, value in entry.items():
            lines.append(f"  {'- ' if first else '  '}{key}: {json.dumps(value)}")
            first = False
    return "\n".join(lines) + "\n"


@pytest.fixture
def forged(cli, repo: Repo) -> tuple[History, str, str]:
    """A history with one forged record version committed: (history, its path,
    its blob id)."""
    history = make_history(cli, repo)
    path = history.records[1]
    target = repo.path / path
    target.write_bytes(forge_whole_read(target.read_bytes(), 1, "# Notes\n\nSome nodes.\n"))
    repo.commit("a forged record, found after the fact")
    blob = git(repo.path, "rev-parse", f"HEAD:{path}")
    return history, path, blob


@pytest.fixture
def removed(forged) -> tuple[History, str, str]:
    """``forged``, with the forged record then deleted from the tree (a waiver
    excuses known-bad history, never a record still there)."""
    history, path, blob = forged
    history.repo.git("rm", "-q", path)
    history.repo.commit("the forged record deleted")
    return history, path, blob


def rows_of(report: dict) -> list[tuple[str, str, str | None]]:
    return [(row["path"], row["result"], row["code"]) for row in report["results"]]


def test_a_forged_record_turns_the_audit_red(cli, forged) -> None:
    history, path, _ = forged
    code, report = audit(cli, history.repo)
    assert code == 1
    assert (path, "drift", "replay_differs") in rows_of(report)


def test_a_waived_blob_is_reported_waived_not_failed(cli, removed) -> None:
    history, path, blob = removed
    history.repo.write(WAIVERS, waiver_file({"blob": blob, "reason": REASON}))
    history.repo.commit("waive the forged record")
    code, report = audit(cli, history.repo)
    assert code == 0, report
    assert report["ok"] is True
    (row,) = [row for row in report["results"] if row["blob"] == blob]
    assert (row["result"], row["code"], row["waiver"]) == ("waived", "replay_differs", REASON)
    assert row["differences"]  # what was wrong with it stays in the report
    assert report["counts"]["waived"] == 1
    assert report["counts"]["identical"] == 5
    assert report["waivers"] == [
        {"index": 1, "blob": blob, "path": None, "reason": REASON, "status": "matched",
         "code": None},
    ]  # fmt: skip
    text = cli(["audit"], cwd=history.repo.path)
    assert text.code == 0
    line = next(line for line in text.out.splitlines() if line.startswith("waived"))
    assert path in line
    assert line.endswith(f"replay_differs: waived: {REASON}")
    assert "1 waived" in text.err


def test_a_waiver_with_a_path_waives_only_that_path(cli, removed) -> None:
    history, path, blob = removed
    copy = "packets/P-1/capsules/copy.json"
    history.repo.write(copy, git(history.repo.path, "cat-file", "blob", blob) + "\n")
    history.repo.write(WAIVERS, waiver_file({"blob": blob, "path": path, "reason": REASON}))
    history.repo.commit("waive the forged record where it was found")
    code, report = audit(cli, history.repo)
    assert code == 1
    results = {row["path"]: row for row in report["results"] if row["blob"] == blob}
    assert results[path]["result"] == "waived"
    assert (results[copy]["result"], results[copy]["code"]) == ("error", "record_misplaced")


def test_a_waiver_that_matches_nothing_is_an_error(cli, removed) -> None:
    history, _, blob = removed
    mistyped = "0" * 40
    history.repo.write(
        WAIVERS,
        waiver_file({"blob": blob, "reason": REASON}, {"blob": mistyped, "reason": "typo"}),
    )
    history.repo.commit("two waivers, one of them for nothing")
    code, report = audit(cli, history.repo)
    assert code == 1
    assert report["ok"] is False
    assert report["counts"]["waivers_unused"] == 1
    statuses = [(w["index"], w["status"], w["code"]) for w in report["waivers"]]
    assert statuses == [(1, "matched", None), (2, "unused", "waiver_unused")]
    text = cli(["audit"], cwd=history.repo.path)
    assert text.code == 1
    (line,) = [line for line in text.out.splitlines() if "waiver_unused" in line]
    assert line.split()[:4] == ["error", WAIVERS, "-", "-"]
    assert f"waiver 2 (blob {mistyped[:12]})" in line
    assert "1 unused waiver" in text.err


def test_a_waiver_for_a_record_that_replays_is_matched_and_changes_nothing(cli, repo: Repo) -> None:
    history = make_history(cli, repo)
    blob = git(repo.path, "rev-parse", f"HEAD:{history.records[0]}")
    repo.git("rm", "-q", history.records[0])
    repo.write(WAIVERS, waiver_file({"blob": blob, "reason": "not needed"}))
    repo.commit("a waiver for a good record")
    code, report = audit(cli, repo)
    assert code == 0
    assert report["counts"]["waived"] == 0
    assert [w["status"] for w in report["waivers"]] == ["matched"]


def test_in_a_range_a_waiver_of_earlier_history_is_not_unused(cli, removed) -> None:
    history, _, blob = removed
    history.repo.write(WAIVERS, waiver_file({"blob": blob, "reason": REASON}))
    base = history.repo.commit("waive the forged record")
    history.repo.write("docs/later.md", "# Later\n")
    history.repo.commit("later work")
    code, report = audit(cli, history.repo, f"{base}..HEAD")
    assert code == 0, report
    assert [w["status"] for w in report["waivers"]] == ["before_range"]
    # The same waiver file with a mistyped blob is unused in the range too.
    history.repo.write(WAIVERS, waiver_file({"blob": "1" * 40, "reason": REASON}))
    base = history.repo.commit("a waiver for nothing")
    history.repo.write("docs/later.md", "# Later\n\nstill later\n")
    history.repo.commit("more work")
    code, report = audit(cli, history.repo, f"{base}..HEAD")
    assert code == 1
    assert [w["status"] for w in report["waivers"]] == ["unused"]


def test_every_shard_agrees_on_the_waivers(cli, removed) -> None:
    history, _, blob = removed
    history.repo.write(WAIVERS, waiver_file({"blob": blob, "reason": REASON}))
    history.repo.commit("waive the forged record")
    waived = 0
    for index in (1, 2, 3):
        code, report = audit(cli, history.repo, "--shard", f"{index}/3")
        assert code == 0, (index, report)
        assert [w["status"] for w in report["waivers"]] == ["matched"]
        waived += report["counts"]["waived"]
    assert waived == 1


def test_the_waivers_are_read_from_a_commit_not_the_working_tree(cli, removed) -> None:
    history, _, blob = removed
    history.repo.write(WAIVERS, waiver_file({"blob": blob, "reason": REASON}))
    code, _ = audit(cli, history.repo)  # written, not committed
    assert code == 1
    waived_at = history.repo.commit("waive it")
    history.repo.write("docs/notes.md", "# Notes\n\nchanged\n")
    history.repo.git("rm", "-q", WAIVERS)
    history.repo.commit("the waiver removed")
    assert audit(cli, history.repo)[0] == 1
    assert audit(cli, history.repo, waived_at)[0] == 0


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("waivers:\n  - blob: abc\n    reason: short id\n", "blob"),
        (f"waivers:\n  - blob: {'a' * 40}\n", "reason"),
        (f"waivers:\n  - blob: {'a' * 40}\n    reason: '  '\n", "reason"),
        (f"waivers:\n  - blob: {'a' * 40}\n    reason: r\n    by: me\n", "by"),
        ("waived: []\n", "waived"),
        ("waivers: [\n", "YAML"),
        (f"waivers:\n  - {{blob: {'a' * 40}, reason: r}}\n  - {{blob: {'a' * 40}, reason: s}}\n",
         "repeats"),
    ],
)  # fmt: skip
def test_a_malformed_waiver_file_stops_the_audit(cli, repo: Repo, text: str, why: str) -> None:
    repo.write(WAIVERS, text)
    repo.commit("a bad waiver file")
    result = cli(["audit", "--json"], cwd=repo.path)
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["code"] == "waivers_malformed"
    assert WAIVERS in error["message"]
    assert why in error["message"] or why == "YAML"


def test_an_oversized_waiver_file_is_refused_unread(cli, repo: Repo) -> None:
    repo.write(WAIVERS, "#" * (256 << 10) + "\n")
    repo.commit("a huge waiver file")
    result = cli(["audit", "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "waivers_malformed"


# --- issue 22 item 2: a pull request cannot waive its own forged record ------------


def _pull_request(history: History, *, delete: bool) -> tuple[str, str, str]:
    """A branch off main that forges a record (hashes and budget recomputed),
    deletes it again when ``delete``, and then waives its blob: (base, the
    forged path, its blob)."""
    repo = history.repo
    base = repo.head()
    repo.git("checkout", "-q", "-b", "pr")
    path = history.records[1]
    target = repo.path / path
    target.write_bytes(forge_whole_read(target.read_bytes(), 1, "# Notes\n\nSome nodes.\n"))
    repo.commit("a record, forged")
    blob = git(repo.path, "rev-parse", f"HEAD:{path}")
    if delete:
        repo.git("rm", "-q", path)
        repo.commit("the forged record deleted again")
    repo.write(WAIVERS, waiver_file({"blob": blob, "reason": "trust me"}))
    repo.commit("waive it")
    return base, path, blob


def test_issue22_a_pull_request_cannot_waive_its_own_forged_record(cli, repo: Repo) -> None:
    history = make_history(cli, repo)
    base, path, blob = _pull_request(history, delete=False)
    # The pull request's audit reads the waivers of the branch it merges into.
    code, report = audit(cli, repo, f"{base}..pr")
    assert code == 1, report
    (row,) = [row for row in report["results"] if row["blob"] == blob]
    assert (row["path"], row["result"], row["code"]) == (path, "drift", "replay_differs")
    assert report["waivers"] == []
    assert report["counts"]["waived"] == 0
    # The full-history audit the workflow runs reads the tip's waivers, and
    # refuses one for a blob that is still there.
    code, report = audit(cli, repo, "pr")
    assert code == 1, report
    (row,) = [row for row in report["results"] if row["blob"] == blob]
    assert row["result"] == "drift"
    assert [(w["status"], w["code"]) for w in report["waivers"]] == [("at_tip", "waiver_at_tip")]


def test_issue22_a_pull_request_that_forges_deletes_and_waives_fails_its_range(
    cli, repo: Repo
) -> None:
    history = make_history(cli, repo)
    base, path, blob = _pull_request(history, delete=True)
    code, report = audit(cli, repo, f"{base}..pr")
    assert code == 1, report
    (row,) = [row for row in report["results"] if row["blob"] == blob]
    assert (row["path"], row["result"], row["code"]) == (path, "drift", "replay_differs")


def test_issue22_a_waiver_for_a_blob_still_at_the_tip_is_refused(cli, forged) -> None:
    history, path, blob = forged
    history.repo.write(WAIVERS, waiver_file({"blob": blob, "path": path, "reason": REASON}))
    history.repo.commit("waive the forged record, still in the tree")
    code, report = audit(cli, history.repo)
    assert code == 1, report
    assert report["ok"] is False
    assert report["counts"]["waived"] == 0
    assert report["counts"]["waivers_at_tip"] == 1
    (row,) = [row for row in report["results"] if row["blob"] == blob]
    assert (row["result"], row["waiver"]) == ("drift", None)
    assert [(w["index"], w["status"], w["code"]) for w in report["waivers"]] == [
        (1, "at_tip", "waiver_at_tip")
    ]
    text = cli(["audit"], cwd=history.repo.path)
    assert text.code == 1
    (line,) = [line for line in text.out.splitlines() if "waiver_at_tip" in line]
    assert line.split()[:4] == ["error", WAIVERS, "-", "-"]
    assert f"waiver 1 (blob {blob[:12]} at {path})" in line
    assert "delete" in line
    assert "1 waiver at the tip" in text.err
    # Deleted from the tree, the record is known bad history: the waiver holds.
    history.repo.git("rm", "-q", path)
    history.repo.commit("the forged record deleted")
    code, report = audit(cli, history.repo)
    assert code == 0, report
    assert [w["status"] for w in report["waivers"]] == ["matched"]
    assert report["counts"]["waived"] == 1


WORKFLOW = Path(__file__).resolve().parents[1] / "hooks/github-workflow.yml"


def workflow_audits(job: dict, base_ref: str) -> list[list[str]]:
    """The ``capsule audit`` commands the shipped workflow's audit job runs on
    a pull request into ``base_ref``, as argv (one shard of one)."""
    commands = []
    for step in job["steps"]:
        command = step.get("run", "")
        if not command.startswith("capsule audit"):
            continue
        condition = step.get("if", "github.event_name == 'pull_request'")
        assert condition in ("github.event_name == 'pull_request'",), condition
        # What GitHub puts in each expression, for one shard of one.
        context = {
            "${{ matrix.shard }}": "1",
            "${{ strategy.job-total }}": "1",
            "${{ github.base_ref }}": base_ref,
        }
        assert "${{" not in command, command  # values come through the environment
        for name, value in step.get("env", {}).items():
            command = command.replace("${" + name + "}", context[value])
        commands.append(shlex.split(command)[1:])
    return commands


@pytest.mark.parametrize("delete", [False, True])
def test_issue22_the_shipped_workflow_fails_a_pull_request_that_waives_its_forgery(
    cli, repo: Repo, tmp_path: Path, delete: bool
) -> None:
    history = make_history(cli, repo)
    _pull_request(history, delete=delete)
    repo.git("checkout", "-q", "main")
    # A CI checkout: origin/main is the branch the pull request merges into.
    clone = Repo(tmp_path / "clone", init=False)
    git(tmp_path, "clone", "-q", f"file://{repo.path}", str(clone.path))
    clone.git("checkout", "-q", "pr")
    commands = workflow_audits(yaml.safe_load(WORKFLOW.read_text())["jobs"]["audit"], "main")
    assert len(commands) == 2
    codes = [cli(argv, cwd=clone.path).code for argv in commands]
    assert 1 in codes, (commands, codes)


def test_issue22_the_shipped_workflow_passes_a_pull_request_that_waives_old_history(
    cli, removed, tmp_path: Path
) -> None:
    # The forged record reached main and was deleted there; a pull request
    # waives it, as docs/history.md's steps say.
    history, _, blob = removed
    history.repo.git("checkout", "-q", "-b", "pr")
    history.repo.write(WAIVERS, waiver_file({"blob": blob, "reason": REASON}))
    history.repo.commit("waive the forged record of main's history")
    history.repo.git("checkout", "-q", "main")
    clone = Repo(tmp_path / "clone", init=False)
    git(tmp_path, "clone", "-q", f"file://{history.repo.path}", str(clone.path))
    clone.git("checkout", "-q", "pr")
    commands = workflow_audits(yaml.safe_load(WORKFLOW.read_text())["jobs"]["audit"], "main")
    codes = [cli(argv, cwd=clone.path).code for argv in commands]
    assert codes == [0, 0], commands
