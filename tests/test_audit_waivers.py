"""Audit waivers (policies/audit-waivers.yml): a committed list of known-bad
record blobs, each with a reason, reported as ``waived``; a waiver that
matches nothing is ``waiver_unused``; a malformed file is ``waivers_malformed``."""

from __future__ import annotations

import json

import pytest

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


def rows_of(report: dict) -> list[tuple[str, str, str | None]]:
    return [(row["path"], row["result"], row["code"]) for row in report["results"]]


def test_a_forged_record_turns_the_audit_red(cli, forged) -> None:
    history, path, _ = forged
    code, report = audit(cli, history.repo)
    assert code == 1
    assert (path, "drift", "replay_differs") in rows_of(report)


def test_a_waived_blob_is_reported_waived_not_failed(cli, forged) -> None:
    history, path, blob = forged
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


def test_a_waiver_with_a_path_waives_only_that_path(cli, forged) -> None:
    history, path, blob = forged
    copy = "packets/P-1/capsules/copy.json"
    history.repo.write(copy, (history.repo.path / path).read_bytes())
    history.repo.write(WAIVERS, waiver_file({"blob": blob, "path": path, "reason": REASON}))
    history.repo.commit("waive the forged record where it was found")
    code, report = audit(cli, history.repo)
    assert code == 1
    results = {row["path"]: row for row in report["results"] if row["blob"] == blob}
    assert results[path]["result"] == "waived"
    assert (results[copy]["result"], results[copy]["code"]) == ("error", "record_misplaced")


def test_a_waiver_that_matches_nothing_is_an_error(cli, forged) -> None:
    history, _, blob = forged
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
    repo.write(WAIVERS, waiver_file({"blob": blob, "reason": "not needed"}))
    repo.commit("a waiver for a good record")
    code, report = audit(cli, repo)
    assert code == 0
    assert report["counts"]["waived"] == 0
    assert [w["status"] for w in report["waivers"]] == ["matched"]


def test_in_a_range_a_waiver_of_earlier_history_is_not_unused(cli, forged) -> None:
    history, _, blob = forged
    history.repo.write(WAIVERS, waiver_file({"blob": blob, "reason": REASON}))
    base = history.repo.commit("waive the forged record")
    history.repo.write("docs/later.md", "# Later\n")
    history.repo.commit("later work")
    code, report = audit(cli, history.repo, f"{base}..HEAD")
    assert code == 0, report
    assert [w["status"] for w in report["waivers"]] == ["before_range"]
    # The same waiver file with a mistyped blob is unused in the range too.
    history.repo.write(WAIVERS, waiver_file({"blob": "1" * 40, "reason": REASON}))
    history.repo.commit("a waiver for nothing")
    code, report = audit(cli, history.repo, f"{base}..HEAD")
    assert code == 1
    assert [w["status"] for w in report["waivers"]] == ["unused"]


def test_every_shard_agrees_on_the_waivers(cli, forged) -> None:
    history, _, blob = forged
    history.repo.write(WAIVERS, waiver_file({"blob": blob, "reason": REASON}))
    history.repo.commit("waive the forged record")
    waived = 0
    for index in (1, 2, 3):
        code, report = audit(cli, history.repo, "--shard", f"{index}/3")
        assert code == 0, (index, report)
        assert [w["status"] for w in report["waivers"]] == ["matched"]
        waived += report["counts"]["waived"]
    assert waived == 1


def test_the_waivers_are_read_from_the_tip_commit_not_the_working_tree(cli, forged) -> None:
    history, _, blob = forged
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
