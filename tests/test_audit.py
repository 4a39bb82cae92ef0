from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pygit2
import pytest

from governance.commands.audit import Progress
from governance.core.globs import PathGlobs
from governance.errors import CapsuleError
from governance.history import pool
from governance.history.audit import audit as audit_library
from governance.history.ranges import parse_range
from governance.history.record_rules import MAX_RECORD_BYTES
from governance.history.records import RECORDS_GLOB
from governance.history.walk import find_records
from support.gitrepo import ROADMAP, Repo
from support.history import (
    P2,
    History,
    audit,
    forge,
    forge_target,
    forge_whole_read,
    git,
    record,
    record_on_a_deleted_branch,
)


def results(report: dict) -> dict[str, dict]:
    return {row["path"]: row for row in report["results"]}


def test_every_record_in_history_replays(cli, history: History) -> None:
    code, report = audit(cli, history.repo)
    assert code == 0
    assert report["ok"] is True
    assert report["counts"] == {
        "commits": 8, "records": 5, "blobs": 5, "identical": 5, "drift": 0, "error": 0,
        "waived": 0, "waivers_unused": 0, "waivers_at_tip": 0,
    }  # fmt: skip
    rows = results(report)
    assert sorted(rows) == sorted(history.records)
    assert {row["result"] for row in rows.values()} == {"identical"}
    declared = {path: row["commit"] for path, row in rows.items()}
    assert sorted(set(declared.values())) == sorted({history.c1, history.c3, history.c4})
    # Each version is reported with the commit that added it, a child of its build commit.
    for row in rows.values():
        assert git(history.repo.path, "rev-parse", f"{row['introduced']}^") == row["commit"]


def test_records_span_the_policy_change(cli, history: History) -> None:
    rows = results(audit(cli, history.repo)[1])
    targets = {}
    for path, row in rows.items():
        blob = git(history.repo.path, "cat-file", "blob", row["blob"])
        targets[row["commit"]] = json.loads(blob)["policy"]["target_tokens"]
        assert path.endswith(f"{row['commit'][:12]}.json")
    assert targets == {history.c1: 12000, history.c3: 11000, history.c4: 11000}


def test_text_table(cli, history: History) -> None:
    result = cli(["audit"], cwd=history.repo.path)
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0].split() == ["RESULT", "PATH", "INTRODUCED", "BUILT", "AT", "DETAIL"]
    assert len(lines) == 6
    assert all(line.startswith("identical  packets/P-") for line in lines[1:])
    tip = history.repo.head()[:12]
    assert f"5 record versions (5 distinct blobs) in 8 commits of HEAD at {tip}:" in result.err
    assert "5 identical, 0 drift, 0 error" in result.err
    # Shard jobs of a CI matrix can each show they audited the same commit.
    shard = cli(["audit", f"{history.c3[:8]}..HEAD", "--shard", "2/3"], cwd=history.repo.path)
    assert f"of {history.c3[:8]}..HEAD at {tip} (shard 2/3 of 3 record blobs)" in shard.err


def test_hand_edited_record_is_drift_with_the_field(cli, history: History) -> None:
    repo = history.repo
    edited = history.records[1]
    path = repo.path / edited
    # Same length as "Some notes.": the budget numbers stay, only the excerpt differs.
    path.write_bytes(forge_whole_read(path.read_bytes(), 1, "# Notes\n\nSome nodes.\n"))
    repo.commit("hand edit a record")
    code, report = audit(cli, repo)
    assert code == 1
    assert report["ok"] is False
    assert report["counts"]["drift"] == 1
    assert report["counts"]["identical"] == 5  # the original version is still history
    drifted = [row for row in report["results"] if row["result"] == "drift"]
    assert [row["path"] for row in drifted] == [edited]
    assert drifted[0]["introduced"] == repo.head()
    assert [d["path"] for d in drifted[0]["differences"]] == [
        "reads[1].blob", "reads[1].selected_sha256", "reads[1].source_sha256", "reads[1].text",
    ]  # fmt: skip
    text = cli(["audit"], cwd=repo.path)
    assert text.code == 1
    drift_line = next(line for line in text.out.splitlines() if line.startswith("drift"))
    assert drift_line.endswith(
        "differs in reads[1].blob, reads[1].selected_sha256, reads[1].source_sha256, reads[1].text"
    )


def test_corrupt_record_is_an_error_row(cli, history: History) -> None:
    repo = history.repo
    path = repo.path / history.records[0]
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    repo.commit("break a record's bytes")
    code, report = audit(cli, repo)
    assert code == 1
    (row,) = (r for r in report["results"] if r["result"] == "error")
    assert row["code"] == "non_canonical"
    assert row["commit"] is None
    result = cli(["audit"], cwd=repo.path)
    assert any(
        line.startswith("error") and "non_canonical: " in line for line in result.out.splitlines()
    )


def test_unreachable_declared_commit(cli, repo: Repo, tmp_path) -> None:
    _, side = record_on_a_deleted_branch(cli, repo)
    # Here the commit object survives (unreachable), so the replay itself works, but
    # the record's own history does not hold it.
    code, report = audit(cli, repo)
    assert code == 1
    (row,) = report["results"]
    assert (row["result"], row["code"], row["commit"]) == ("error", "commit_unreachable", side)
    # A fresh clone does not have it at all.
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--no-local", str(repo.path), str(clone))
    code, report = audit(cli, clone)
    assert code == 1
    (row,) = report["results"]
    assert (row["result"], row["code"]) == ("error", "commit_missing")


def test_shallow_clone_reports_commit_missing_as_shallow(cli, history: History, tmp_path) -> None:
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{history.repo.path}", str(clone))
    code, report = audit(cli, clone)
    assert code == 1
    assert report["counts"]["commits"] == 1
    assert report["counts"]["records"] == 5
    assert {row["code"] for row in report["results"]} == {"commit_missing"}
    assert all("shallow" in row["message"] for row in report["results"])


def test_range_audits_what_the_range_adds(cli, history: History) -> None:
    code, report = audit(cli, history.repo, f"{history.c3[:10]}..HEAD")
    assert code == 0
    assert sorted(results(report)) == sorted(history.records[2:])
    assert report["range"]["hidden"] == history.c3
    assert audit(cli, history.repo, f"{history.c1}")[1]["counts"]["records"] == 0
    assert audit(cli, history.repo, "HEAD..HEAD")[1]["counts"]["commits"] == 0


@pytest.mark.parametrize(
    "spec", ["HEAD~2..HEAD", "main^..HEAD", "main@{1}", "a..", "..HEAD", "HEAD...HEAD", "zz"]
)
def test_range_refuses_names_and_expressions(cli, repo: Repo, spec: str) -> None:
    result = cli(["audit", spec, "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] in ("invalid_revision", "invalid_range")


def test_full_sha256_id_in_a_sha1_repository_is_no_such_commit(cli, repo: Repo) -> None:
    result = cli(["audit", "ab" * 32, "--json"], cwd=repo.path)
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["code"] == "invalid_revision"
    assert "no such commit" in error["message"]
    assert "ambiguous" not in error["message"]


def test_repository_without_commits_has_no_records(cli, tmp_path) -> None:
    empty = Repo(tmp_path / "empty")
    for spec in ([], ["HEAD"]):
        code, report = audit(cli, empty, *spec)
        assert code == 0
        assert report["ok"] is True
        assert report["range"] == {"spec": "HEAD", "tip": None, "hidden": None, "ends": []}
        assert report["counts"] == {
            "commits": 0, "records": 0, "blobs": 0, "identical": 0, "drift": 0, "error": 0,
            "waived": 0, "waivers_unused": 0, "waivers_at_tip": 0,
        }  # fmt: skip
        assert report["results"] == []
    text = cli(["audit"], cwd=empty.path)
    assert text.code == 0
    assert "no commits, no records" in text.err
    # A range names commits, and there are none.
    assert cli(["audit", "HEAD..HEAD"], cwd=empty.path).code == 2


def test_shards_cover_every_record_exactly_once(cli, history: History) -> None:
    full = audit(cli, history.repo)[1]["results"]
    for count in (1, 2, 3, 5, 7):
        seen: list[str] = []
        for index in range(1, count + 1):
            code, report = audit(cli, history.repo, "--shard", f"{index}/{count}")
            assert code == 0
            assert report["shard"] == {"index": index, "count": count, "blobs_in_range": 5}
            seen += [row["blob"] for row in report["results"]]
        assert sorted(seen) == sorted(row["blob"] for row in full), count


def test_shard_partition_is_exact_for_any_total() -> None:
    for total in range(0, 40):
        items = [pool.Item(f"{n:040x}", True, ()) for n in range(total)]
        for count in range(1, 9):
            parts = [pool.shard(items, index, count) for index in range(1, count + 1)]
            assert [item for part in parts for item in part] == items
            assert max(map(len, parts)) - min(map(len, parts)) <= 1


@pytest.mark.parametrize("shard", ["0/2", "3/2", "1/0", "2", "a/b", "-1/2"])
def test_bad_shard(cli, repo: Repo, shard: str) -> None:
    result = cli(["audit", "--shard", shard, "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "usage"


@pytest.mark.parametrize("jobs", ["0", "-1", "two", "257", "100000"])
def test_bad_jobs(cli, repo: Repo, jobs: str) -> None:
    result = cli(["audit", "--jobs", jobs, "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "usage"


def test_the_pool_is_no_larger_than_the_work() -> None:
    # 300 jobs for 14 records started 300 processes; now one per chunk at most.
    items = [pool.Item(f"{n:040x}", True, ()) for n in range(14)]
    assert pool.pool_size(300, items) == 14
    assert pool.pool_size(2, items) == 2
    assert pool.pool_size(256, items * 100) == 256
    assert pool.pool_size(4, items * 100) == 4


def test_two_jobs_give_the_same_results_as_one(cli, history: History) -> None:
    repo = history.repo
    path = repo.path / history.records[3]
    path.write_bytes(forge_target(path.read_bytes()))
    repo.write("packets/P-2/capsules/not-a-capsule.json", "{}\n")
    repo.commit("one drift, one error")
    one = audit(cli, repo, "--jobs", "1")
    two = audit(cli, repo, "--jobs", "2")
    most = audit(cli, repo, "--jobs", "256")  # as many processes as chunks, here 7
    assert one[0] == two[0] == most[0] == 1
    assert one[1]["results"] == two[1]["results"] == most[1]["results"]
    assert one[1]["counts"] == two[1]["counts"] == most[1]["counts"]
    assert one[1]["counts"]["drift"] == 1
    assert one[1]["counts"]["error"] == 1
    assert two[1]["jobs"] == 2


# Where each forked process of this test process writes its pid, while a test
# names a file here (os.register_at_fork has no way to unregister).
FORKS: list[Path] = []


def _note_fork() -> None:
    if FORKS:
        with FORKS[0].open("a") as handle:
            handle.write(f"{os.getpid()}\n")


os.register_at_fork(after_in_child=_note_fork)


@pytest.mark.parametrize("jobs", ["2", "5", "256"])
def test_the_jobs_reported_are_the_processes_that_replayed(
    cli, history: History, tmp_path: Path, jobs: str
) -> None:
    # Five record blobs: five chunks of one. On --jobs 5 or more each worker
    # has one; on 2 the audit's process replays the first record, then forks
    # the two workers of the pool.
    forks = tmp_path / "forks"
    forks.touch()
    FORKS.append(forks)
    try:
        code, report = audit(cli, history.repo, "--jobs", jobs)
    finally:
        FORKS.clear()
    assert code == 0
    assert report["counts"]["blobs"] == 5
    assert report["jobs"] == min(int(jobs), 5)
    assert len(forks.read_text().split()) == report["jobs"]


def test_with_another_thread_alive_the_pool_spawns_and_agrees(
    cli, history: History, tmp_path: Path
) -> None:
    # A fork copies only the thread that calls it: with another thread alive
    # (a server calling the library), the workers are spawned instead (a new
    # interpreter each, started without a fork of this one).
    forks = tmp_path / "forks"
    forks.touch()
    repo = history.repo
    path = repo.path / history.records[3]
    path.write_bytes(forge_target(path.read_bytes()))
    repo.commit("one drift")
    serial = audit_library(pygit2.Repository(str(repo.path)), jobs=1)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    FORKS.append(forks)
    try:
        spawned = audit_library(pygit2.Repository(str(repo.path)), jobs=2)
    finally:
        FORKS.clear()
        stop.set()
        thread.join()
    assert forks.read_text() == ""
    assert spawned.jobs == 2
    assert spawned.rows == serial.rows
    assert spawned.counts == serial.counts
    assert serial.counts["drift"] == 1


def test_spawned_workers_that_cannot_start_are_replay_worker_lost(history: History) -> None:
    # The repository gone between the walk and the workers' start: each spawned
    # worker's initializer fails. Said with the forked pool's code, not as
    # concurrent.futures' BrokenProcessPool traceback.
    repo = pygit2.Repository(str(history.repo.path))
    where = parse_range(repo, None)
    items = pool.work_items(find_records(repo, where, PathGlobs([RECORDS_GLOB])).versions)
    assert len(items) > 1
    moved = history.repo.path.with_name("moved")
    history.repo.path.rename(moved)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        with pytest.raises(CapsuleError) as raised:
            pool.replay_items(repo, items, jobs=2)
    finally:
        stop.set()
        thread.join()
        moved.rename(history.repo.path)
    assert raised.value.code == "replay_worker_lost"
    assert raised.value.details["chunks"] == len(pool._chunks(items, 2))


def test_a_copy_is_replayed_once_and_is_misplaced(cli, history: History) -> None:
    repo = history.repo
    # The same bytes at a second path: a second row, not a second replay. The copy
    # is not at the path its own id and commit give, so it is not evidence there.
    copy = "packets/P-1/capsules/copy.json"
    repo.write(copy, (repo.path / history.records[0]).read_bytes())
    repo.commit("copy a record")
    code, report = audit(cli, repo)
    assert code == 1
    assert report["counts"]["records"] == 6
    assert report["counts"]["blobs"] == 5
    assert (report["counts"]["identical"], report["counts"]["error"]) == (5, 1)
    rows = results(report)
    assert rows[copy]["blob"] == rows[history.records[0]]["blob"]
    assert rows[copy]["introduced"] == repo.head()
    assert (rows[copy]["result"], rows[copy]["code"]) == ("error", "record_misplaced")
    assert history.records[0] in rows[copy]["message"]
    assert rows[history.records[0]]["result"] == "identical"


def test_renamed_record_is_misplaced(cli, history: History) -> None:
    repo = history.repo
    # P-2's record moved into P-1's folder, and one of P-1's renamed: each replays
    # byte for byte, but neither sits where its own id and commit say.
    moved = "packets/P-1/capsules/" + history.records[4].rsplit("/", 1)[1]
    renamed = "packets/P-1/capsules/latest.json"
    os.rename(repo.path / history.records[4], repo.path / moved)
    os.rename(repo.path / history.records[0], repo.path / renamed)
    repo.commit("move records around")
    code, report = audit(cli, repo)
    assert code == 1
    rows = results(report)
    for path, original in ((moved, history.records[4]), (renamed, history.records[0])):
        assert (rows[path]["result"], rows[path]["code"]) == ("error", "record_misplaced"), path
        assert original in rows[path]["message"]
        assert rows[path]["differences"] == []
    # A record found through --paths away from its folder is misplaced too.
    repo.write("evidence/p1.json", (repo.path / history.records[3]).read_bytes())
    repo.commit("evidence elsewhere")
    (row,) = audit(cli, repo, "--paths", "evidence/*.json")[1]["results"]
    assert (row["result"], row["code"]) == ("error", "record_misplaced")
    text = cli(["audit", "--paths", "evidence/*.json"], cwd=repo.path)
    assert text.code == 1
    assert "record_misplaced: " in text.out


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sha256_commit_in_a_sha1_repository_is_an_error_row(
    cli, history: History, jobs: str
) -> None:
    repo = history.repo
    # A well-formed capsule naming a 64-hex commit: no SHA-1 repository can hold it,
    # and pygit2 refuses the lookup outright (InvalidError) instead of not finding it.
    sha256 = "ab" * 32
    path = f"packets/P-1/capsules/{sha256[:12]}.json"
    blob = (repo.path / history.records[3]).read_bytes()
    repo.write(path, forge(blob, lambda d: d.update(commit=sha256)))
    repo.commit("a record from a SHA-256 repository")
    code, report = audit(cli, repo, "--jobs", jobs)
    assert code == 1
    assert report["counts"] == {
        "commits": 9, "records": 6, "blobs": 6, "identical": 5, "drift": 0, "error": 1,
        "waived": 0, "waivers_unused": 0, "waivers_at_tip": 0,
    }  # fmt: skip
    row = results(report)[path]
    assert (row["result"], row["code"], row["commit"]) == ("error", "commit_missing", sha256)


def _corrupt_loose_object(repo: Repo, blob_id: str) -> None:
    loose = Path(git(repo.path, "rev-parse", "--git-path", f"objects/{blob_id[:2]}/{blob_id[2:]}"))
    loose = loose if loose.is_absolute() else repo.path / loose
    data = loose.read_bytes()
    loose.chmod(0o644)
    loose.write_bytes(data[:-4] + bytes(b ^ 0xFF for b in data[-4:]))  # the zlib checksum


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_git_error_in_one_replay_is_that_records_error_row(
    cli, history: History, jobs: str
) -> None:
    repo = history.repo
    # The notes as edited at c4, read by both records built there, are corrupt in the
    # object database: those two records cannot be replayed, every other one can.
    _corrupt_loose_object(repo, git(repo.path, "rev-parse", f"{history.c4}:docs/notes.md"))
    code, report = audit(cli, repo, "--jobs", jobs)
    assert code == 1
    rows = results(report)
    errors = {path for path, row in rows.items() if row["result"] == "error"}
    assert errors == set(history.records[3:])
    for path in errors:
        assert rows[path]["code"] == "git_error"
        assert rows[path]["message"].startswith("git: ")
    assert report["counts"]["identical"] == 3


def test_deleted_and_readded_record_keeps_its_first_introduction(cli, history: History) -> None:
    repo = history.repo
    first = results(audit(cli, repo)[1])[history.records[0]]["introduced"]
    data = (repo.path / history.records[0]).read_bytes()
    (repo.path / history.records[0]).unlink()
    repo.commit("drop a record")
    repo.write(history.records[0], data)
    repo.commit("bring it back")
    report = audit(cli, repo)[1]
    assert report["counts"]["records"] == 5
    assert results(report)[history.records[0]]["introduced"] == first


def test_merge_does_not_reintroduce_branch_records(cli, history: History) -> None:
    repo = history.repo
    repo.git("checkout", "-q", "-b", "side")
    repo.write("docs/roadmap.md", ROADMAP)
    repo.commit("restore the roadmap on a branch")
    side_record = record(cli, repo, P2)
    side = repo.commit("record on the branch")
    repo.git("checkout", "-q", "main")
    repo.write("docs/other.md", "unrelated\n")
    repo.commit("main moves on")
    repo.git("merge", "-q", "--no-edit", "side")
    report = audit(cli, repo)[1]
    assert report["counts"]["records"] == 6
    assert results(report)[side_record]["introduced"] == side


def test_paths_globs(cli, history: History) -> None:
    repo = history.repo
    repo.write("evidence/2026/p1.json", (repo.path / history.records[0]).read_bytes())
    repo.commit("evidence elsewhere")
    assert audit(cli, repo, "--paths", "evidence/**/*.json")[1]["counts"]["records"] == 1
    assert audit(cli, repo, "--paths", "packets/P-2/capsules/*.json")[1]["counts"]["records"] == 2
    both = audit(cli, repo, "--paths", "evidence/*/*.json", "packets/*/capsules/*.json")[1]
    assert both["counts"]["records"] == 6
    assert both["paths"] == ["evidence/*/*.json", "packets/*/capsules/*.json"]
    assert audit(cli, repo, "--paths", "**/*.json")[1]["counts"]["records"] == 6


@pytest.mark.parametrize("glob", ["/abs/*.json", "a//b", "../x", "a/**", "a/x**/b", ""])
def test_bad_globs(cli, repo: Repo, glob: str) -> None:
    result = cli(["audit", "--json", "--paths", glob], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "invalid_glob"


def test_paths_that_are_not_utf8_are_shown_with_replacement_characters(
    cli, history: History
) -> None:
    repo = history.repo
    # A file name with the byte 0xff: Python holds it as the lone surrogate U+DCFF.
    repo.write("packets/P-1/capsules/\udcff.json", (repo.path / history.records[0]).read_bytes())
    repo.commit("a record under a name that is not UTF-8")
    code, report = audit(cli, repo)
    assert code == 1
    row = results(report)["packets/P-1/capsules/\ufffd.json"]
    assert (row["result"], row["code"]) == ("error", "record_misplaced")
    text = cli(["audit"], cwd=repo.path)
    assert text.code == 1
    # The table shows the byte itself, escaped, as printable() shows any byte.
    assert "packets/P-1/capsules/\\xff.json" in text.out
    # A --paths pattern that is not UTF-8, valid or not.
    code, report = audit(cli, repo, "--paths", "packets/*/capsules/\udcff*.json")
    assert code == 1
    assert report["paths"] == ["packets/*/capsules/\ufffd*.json"]
    assert report["counts"]["records"] == 1
    result = cli(["audit", "--json", "--paths", "/\udcff/*.json"], cwd=repo.path)
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert (error["code"], error["glob"]) == ("invalid_glob", "/\ufffd/*.json")


def test_oversized_record_is_refused_unread(cli, history: History) -> None:
    repo = history.repo
    limit = MAX_RECORD_BYTES
    over, at = "packets/P-1/capsules/over.json", "packets/P-1/capsules/at.json"
    repo.write(over, b"x" * (limit + 1))
    repo.write(at, b"x" * limit)
    repo.commit("two huge files where records live")
    code, report = audit(cli, repo)
    assert code == 1
    rows = results(report)
    assert (rows[over]["code"], rows[over]["commit"]) == ("record_too_large", None)
    assert f"{limit + 1:,} bytes" in rows[over]["message"]
    # At the bound it is read, and fails as any file that is not JSON does.
    assert rows[at]["code"] == "capsule_malformed"
    assert report["counts"]["identical"] == 5


def test_symlinked_record_is_an_error_row(cli, repo: Repo) -> None:
    os.makedirs(repo.path / "packets/P-1/capsules")
    os.symlink("../packet.yml", repo.path / "packets/P-1/capsules/link.json")
    repo.commit("a link where a record belongs")
    code, report = audit(cli, repo)
    assert code == 1
    (row,) = report["results"]
    assert (row["result"], row["code"]) == ("error", "record_not_file")


def test_a_record_read_failure_names_the_commit_that_introduced_it(
    cli, repo: Repo, tmp_path
) -> None:
    # Audit reads each record blob by the id, path and mode its walk found:
    # the messages name that commit as reading it from the commit's tree did.
    os.makedirs(repo.path / "packets/P-1/capsules")
    os.symlink("../packet.yml", repo.path / "packets/P-1/capsules/link.json")
    linked = repo.commit("a link where a record belongs")
    repo.write("packets/P-2/capsules/x.json", "{}\n")
    written = repo.commit("a file where a record belongs")
    _, report = audit(cli, repo)
    rows = results(report)
    assert rows["packets/P-1/capsules/link.json"]["message"] == (
        f"packets/P-1/capsules/link.json is a symbolic link at commit {linked[:12]}, "
        "not a record file"
    )
    clone = repo.partial_clone(tmp_path / "blobless", "blob:none")
    _, report = audit(cli, clone)
    blob = repo.git("rev-parse", f"{written}:packets/P-2/capsules/x.json")
    assert results(report)["packets/P-2/capsules/x.json"]["message"] == (
        f"packets/P-2/capsules/x.json: blob {blob[:12]} at commit {written[:12]} is not in "
        "this repository (a partial clone? clone without --filter)"
    )


def test_no_records_is_success(cli, repo: Repo) -> None:
    code, report = audit(cli, repo)
    assert code == 0
    assert report["counts"]["records"] == 0


def test_progress_is_quiet_when_stderr_is_not_a_terminal(cli, history: History) -> None:
    result = cli(["audit"], cwd=history.repo.path)
    assert "replays" not in result.err
    assert "\r" not in result.err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_on_a_terminal() -> None:
    now = [100.0]
    stream = _Terminal()
    progress = Progress(stream, clock=lambda: now[0])
    now[0] += 10
    progress.update(50, 200)
    assert stream.getvalue().endswith("audit: 50/200 replays  5.0/s  ETA 0:30")
    now[0] += 0.01
    progress.update(51, 200)  # too soon: not redrawn
    assert "51/200" not in stream.getvalue()
    now[0] += 30
    progress.update(200, 200)
    progress.finish()
    assert stream.getvalue().endswith("audit: 200/200 replays  5.0/s  done\n")


def test_progress_is_silent_off_a_terminal() -> None:
    stream = io.StringIO()
    progress = Progress(stream)
    progress.update(5, 10)
    progress.finish()
    assert stream.getvalue() == ""


def test_progress_reaches_a_real_terminal(history: History) -> None:
    script = Path(sys.executable).with_name("capsule")
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [str(script), "audit"],
            cwd=history.repo.path,
            stdout=subprocess.PIPE,
            stderr=follower,
            check=False,
        )
        os.close(follower)
        follower = -1
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the other side is closed
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
        if follower != -1:
            os.close(follower)
    assert done.returncode == 0
    assert b"audit: 5/5 replays" in seen
    assert b"done" in seen
    assert b"replays" not in done.stdout


def test_partial_clone_without_the_record_blobs(cli, history: History, tmp_path) -> None:
    clone = history.repo.partial_clone(tmp_path / "blobless", "blob:none")
    code, report = audit(cli, clone)
    assert code == 1
    assert report["counts"]["records"] == 5
    # The record blob is missing as any source blob would be: object_missing.
    assert {row["code"] for row in report["results"]} == {"object_missing"}
    assert all("partial clone" in row["message"] for row in report["results"])


def test_treeless_clone_is_object_missing(cli, history: History, tmp_path) -> None:
    clone = history.repo.partial_clone(tmp_path / "treeless", "tree:0")
    code, report = audit(cli, clone)
    assert code == 3
    error = report["error"]
    assert error["code"] == "object_missing"
    assert "partial clone" in error["message"]
    assert "--filter" in error["message"]
    assert len(error["commit"]) == 40


def test_audit_agrees_with_replay_on_every_record(cli, history: History, tmp_path) -> None:
    """Audit skips the pre-checks of a record that rebuilds byte for byte; every
    other record takes replay's own path. Either way each result is the one
    `capsule replay` gives for that file."""
    repo = history.repo
    blobs = [(repo.path / path).read_bytes() for path in history.records]
    before = git(repo.path, "rev-parse", f"{history.c1}^")
    text = json.dumps(json.loads(blobs[0]), sort_keys=True, separators=(",", ":"))
    naive = json.loads(blobs[1])
    naive["reads"][0]["text"] += "x"
    # Those that pass the pre-checks sit where their id and commit say (audit's
    # record_misplaced is a check of the path, which replay does not know).
    variants = {
        history.records[0]: forge_target(blobs[0]),
        "non-canonical.json": text.encode() + b"\n",
        "corrupt.json": json.dumps(
            naive, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()
        + b"\n",
        "schema.json": forge(blobs[2], lambda d: d.update(schema="capsule/2")),
        # P-2 claiming the commit before P-2 existed: the rebuild fails closed.
        f"packets/P-2/capsules/{before[:12]}.json": forge(
            blobs[4], lambda d: d.update(commit=before)
        ),
        "not-json.json": b"[1, 2\n",
    }
    for name, data in variants.items():
        repo.write(name if "/" in name else f"packets/P-1/capsules/{name}", data)
    repo.commit("every kind of bad record")
    code, report = audit(cli, repo)
    assert code == 1
    seen = set()
    for row in report["results"]:
        target = tmp_path / f"{row['blob']}.json"
        exact = ["git", "cat-file", "blob", row["blob"]]
        target.write_bytes(
            subprocess.run(exact, cwd=repo.path, capture_output=True, check=True).stdout
        )
        result = cli(["replay", str(target), "--json"], cwd=repo.path)
        replayed = json.loads(result.out)
        if row["result"] == "identical":
            assert result.code == 0, row
        elif row["result"] == "drift":
            assert result.code == 1, row
            assert replayed["differences"] == row["differences"]
        else:
            assert result.code in (2, 3, 4), row
            assert replayed["error"]["code"] == row["code"], row
        seen.add(row["result"] if row["result"] != "error" else row["code"])
    assert seen == {
        "identical", "drift", "non_canonical", "capsule_corrupt", "unsupported_schema",
        "capsule_malformed", "source_missing",
    }, seen  # fmt: skip


def test_a_spawned_pool_stops_at_once_when_its_caller_raises(repo: Repo) -> None:
    # An exception of the caller's while the spawned pool runs (its progress
    # callback cancelling, a ^C) must leave it at once, as the forked pool's
    # children are stopped; it waited for every chunk not yet begun. The last
    # chunk's record blob is a FIFO nobody writes: a replay of it never ends.
    for n in range(3900):
        repo.write(f"packets/P-1/capsules/{n:05}.json", f'{{"n": {n}}}\n')
    repo.commit("many record blobs that are no records")
    opened = pygit2.Repository(str(repo.path))
    where = parse_range(opened, None)
    items = pool.work_items(find_records(opened, where, PathGlobs([RECORDS_GLOB])).versions)
    chunks = pool._chunks(items, 2)
    assert len(chunks) >= 60
    last = chunks[-1][-1].blob_id
    fifo = repo.path / ".git" / "objects" / last[:2] / last[2:]
    fifo.unlink()
    os.mkfifo(fifo)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)  # a group of its own, its workers' too: killed as one
            os.close(read)
            stop = threading.Event()
            thread = threading.Thread(target=stop.wait, daemon=True)
            thread.start()

            def cancel(done: int) -> None:
                raise RuntimeError("cancelled by the caller")

            try:
                pool.replay_items(opened, items, jobs=2, progress=cancel)
            except RuntimeError as exc:
                os.write(write, str(exc).encode())
        finally:
            os._exit(0)
    os.close(write)
    try:
        waiting = select.poll()
        waiting.register(read, select.POLLIN)
        finished = waiting.poll(60_000)
        if not finished:
            os.killpg(pid, signal.SIGKILL)
        said = os.read(read, 100) if finished else b""
    finally:
        os.close(read)
        os.waitpid(pid, 0)
        # A worker left waiting on the FIFO (the defect) is let go: it reads nothing.
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert finished, "the pool went on replaying after its caller raised"
    assert said == b"cancelled by the caller"
