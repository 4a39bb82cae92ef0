"""``capsule status``: the records committed at HEAD, each verified against HEAD."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.gitrepo import ROADMAP, Repo, clean_environ, packet_yaml
from support.history import (
    P1,
    P2,
    forge_target,
    forge_whole_read,
    record,
    record_on_a_deleted_branch,
)

PHASE_2 = "docs/roadmap.md#phase-2"


def status(cli, repo: Repo, *args: str) -> tuple[int, dict]:
    result = cli(["status", "--json", *args], cwd=repo.path)
    return result.code, json.loads(result.out)


def recorded(cli, repo: Repo, packet: str = P1) -> str:
    path = record(cli, repo, packet)
    repo.commit("record")
    return path


def rows(report: dict) -> dict[str, dict]:
    return {row["path"]: row for row in report["records"]}


def changed(row: dict) -> dict[str, tuple[str, str]]:
    return {p["locator"]: (p["status"], p["code"]) for p in row["changed"]}


def test_a_fresh_record_is_unchanged(cli, repo: Repo) -> None:
    path = recorded(cli, repo)
    code, report = status(cli, repo, "--strict")
    assert code == 0
    assert report["ok"] is True
    assert report["at"] == repo.head()
    (row,) = report["records"]
    assert (row["path"], row["packet"], row["status"]) == (path, "P-1", "unchanged")
    assert row["changed"] == []
    assert row["counts"] == {"unchanged": 5, "intact": 0, "stale": 0, "missing": 0}
    assert row["declared_commit"]["code"] == "verified_at_commit"
    assert row["reachable"] is True
    assert row["blob"] == repo.git("rev-parse", f"HEAD:{path}")


def test_a_moved_section_is_intact_and_passes_strict(cli, repo: Repo) -> None:
    recorded(cli, repo)
    repo.write("docs/roadmap.md", ROADMAP.replace("Intro text.\n", "Intro text.\n\nMore.\n"))
    repo.commit()
    code, report = status(cli, repo, "--strict")
    assert code == 0
    (row,) = report["records"]
    assert row["status"] == "intact"
    assert changed(row) == {PHASE_2: ("intact", "passage_moved")}


def test_a_changed_section_is_stale_and_fails_strict_only(cli, repo: Repo) -> None:
    recorded(cli, repo)
    repo.write("docs/roadmap.md", ROADMAP.replace("Second phase", "The second phase"))
    repo.write("docs/notes.md", "# Notes\n\nOther notes.\n")
    repo.commit()
    code, report = status(cli, repo)
    assert (code, report["ok"]) == (0, False)
    (row,) = report["records"]
    assert row["status"] == "stale"
    assert changed(row) == {
        PHASE_2: ("stale", "passage_stale"),
        "docs/notes.md": ("stale", "source_changed"),
    }
    assert report["counts"]["stale"] == 1
    assert status(cli, repo, "--strict")[0] == 1
    text = cli(["status", "--strict"], cwd=repo.path)
    assert text.code == 1
    first, *parts = text.out.splitlines()
    assert first.startswith("stale     packets/P-1/capsules/")
    assert parts == [
        f"  stale     {PHASE_2}  passage_stale",
        f"  stale     {'docs/notes.md':<{len(PHASE_2)}}  source_changed",
    ]
    assert "1 record verified at HEAD" in text.err
    assert "0 unchanged, 0 intact, 1 stale, 0 missing" in text.err


def test_a_removed_heading_is_missing(cli, repo: Repo) -> None:
    recorded(cli, repo)
    repo.write("docs/roadmap.md", ROADMAP.replace("## Phase 2", "## Phase two"))
    repo.commit()
    code, report = status(cli, repo, "--strict")
    assert code == 1
    (row,) = report["records"]
    assert row["status"] == "missing"
    assert changed(row)[PHASE_2] == ("missing", "heading_missing")


def _records_of_three_commits(cli, repo: Repo) -> list[str]:
    """Three records of P-1, each at a later commit, the newest not the last by
    name (so an order by name cannot pass for the order of history); their
    paths oldest first."""
    paths = [recorded(cli, repo)]
    for n in range(8):
        repo.write("docs/notes.md", f"# Notes\n\nRevision {n}.\n")
        repo.commit(f"notes {n}")
        paths.append(recorded(cli, repo))
        if len(paths) >= 3 and max(paths[-3:]) != paths[-1]:
            break
    assert max(paths[-3:]) != paths[-1]
    for path in paths[:-3]:
        repo.git("rm", "-q", path)
    repo.commit("three records left")
    return paths[-3:]


def test_the_newest_record_of_a_packet_is_the_one_listed(cli, repo: Repo) -> None:
    paths = _records_of_three_commits(cli, repo)
    code, report = status(cli, repo)
    assert code == 0
    assert [r["path"] for r in report["records"]] == [paths[-1]]
    assert report["records"][0]["status"] == "unchanged"
    assert report["counts"] | {} == {
        "found": 3, "verified": 1, "unchanged": 1, "intact": 0, "stale": 0, "missing": 0,
        "error": 0,
    }  # fmt: skip
    text = cli(["status"], cwd=repo.path)
    assert "the newest of each packet; 2 older records not listed (--all lists them)" in text.err


def test_all_lists_every_record_newest_first(cli, repo: Repo) -> None:
    paths = _records_of_three_commits(cli, repo)
    code, report = status(cli, repo, "--all", "--strict")
    # The older two read an older docs/notes.md, whole: stale now.
    assert code == 1
    assert report["all"] is True
    assert [(r["path"], r["status"]) for r in report["records"]] == [
        (paths[2], "unchanged"),
        (paths[1], "stale"),
        (paths[0], "stale"),
    ]


def test_each_packet_gets_its_newest(cli, repo: Repo) -> None:
    repo.write("packets/P-2/packet.yml", packet_yaml("P-2", ["docs/notes.md"]))
    repo.write("packets/P-2/context.md", "# Context\n\nThe second packet.\n")
    repo.commit("P-2")
    one = recorded(cli, repo, P1)
    two = recorded(cli, repo, P2)
    _, report = status(cli, repo)
    assert [(r["path"], r["packet"]) for r in report["records"]] == [(one, "P-1"), (two, "P-2")]


def test_a_record_not_in_heads_history_comes_after_one_that_is(cli, repo: Repo) -> None:
    older = recorded(cli, repo)
    repo.write("docs/notes.md", "# Notes\n\nLater.\n")
    repo.commit("later notes")
    squashed, side = record_on_a_deleted_branch(cli, repo)
    _, report = status(cli, repo, "--all")
    assert [(r["path"], r["reachable"]) for r in report["records"]] == [
        (older, True),
        (squashed, False),
    ]
    _, newest = status(cli, repo)
    assert [r["path"] for r in newest["records"]] == [older]
    text = cli(["status", "--all"], cwd=repo.path)
    assert f"P-1 built at {side[:12]}: 1 stale of 5 parts (not in HEAD's history)" in text.out


def test_a_record_that_cannot_be_verified_is_a_row_of_its_own(cli, repo: Repo) -> None:
    good = recorded(cli, repo)
    data = (repo.path / good).read_bytes()
    # Other packets' folders holding a copy, and a forged copy: not evidence
    # where they are.
    repo.write("packets/P-2/capsules/" + Path(good).name, data)
    repo.write("packets/P-3/capsules/" + Path(good).name, forge_whole_read(data, 1, "# Forged\n"))
    repo.commit("copies")
    code, report = status(cli, repo, "--strict")
    assert code == 1
    found = rows(report)
    assert found[good]["status"] == "unchanged"
    p2 = found["packets/P-2/capsules/" + Path(good).name]
    assert (p2["status"], p2["code"]) == ("error", "record_misplaced")
    p3 = found["packets/P-3/capsules/" + Path(good).name]
    assert (p3["status"], p3["code"]) == ("error", "record_misplaced")
    assert report["counts"]["error"] == 2
    assert status(cli, repo)[0] == 0


def test_a_forged_record_in_place_is_capsule_corrupt(cli, repo: Repo) -> None:
    good = recorded(cli, repo)
    data = (repo.path / good).read_bytes()
    repo.write(good, forge_whole_read(data, 1, "# Forged\n"))
    repo.commit("forged")
    code, report = status(cli, repo, "--strict")
    (row,) = report["records"]
    assert (code, row["status"], row["code"]) == (1, "error", "capsule_corrupt")
    assert row["commit"] is None
    assert row["changed"] == []


def test_a_record_forged_in_its_policy_is_capsule_corrupt(cli, repo: Repo) -> None:
    # A target its commit's policy does not give: verify at its own commit tells.
    good = recorded(cli, repo)
    repo.write(good, forge_target((repo.path / good).read_bytes()))
    repo.commit("forged target")
    _, report = status(cli, repo)
    assert report["records"][0]["code"] == "capsule_corrupt"


def test_a_link_at_a_record_path_is_record_not_file(cli, repo: Repo) -> None:
    folder = repo.path / "packets/P-1/capsules"
    folder.mkdir(parents=True)
    os.symlink("../packet.yml", folder / "0123456789ab.json")
    repo.commit("link")
    _, report = status(cli, repo)
    (row,) = report["records"]
    assert (row["status"], row["code"]) == ("error", "record_not_file")


def test_no_records_and_no_commits(cli, repo: Repo, tmp_path: Path) -> None:
    code, report = status(cli, repo, "--strict")
    assert (code, report["records"], report["counts"]["found"]) == (0, [], 0)
    empty = Repo(tmp_path / "empty")
    code, report = status(cli, empty, "--strict")
    assert (code, report["at"], report["records"]) == (0, None, [])
    assert "no commits yet" in cli(["status"], cwd=empty.path).err


def test_a_bare_clone_is_verified_from_its_objects(cli, repo: Repo, tmp_path: Path) -> None:
    recorded(cli, repo)
    repo.write("docs/roadmap.md", ROADMAP.replace("Second phase", "The second phase"))
    repo.commit()
    bare = tmp_path / "bare.git"
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(repo.path), str(bare)],
        check=True, env=clean_environ() | {"HOME": str(tmp_path)},
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "governance", "status", "--json", "--strict"],
        cwd=bare, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["records"][0]["status"] == "stale"


def test_a_shallow_clone_lists_records_it_cannot_place(cli, repo: Repo, tmp_path: Path) -> None:
    recorded(cli, repo)
    repo.write("docs/notes.md", "# Notes\n\nLater.\n")
    repo.commit()
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{repo.path}", str(shallow)],
        check=True, env=clean_environ() | {"HOME": str(tmp_path)},
    )  # fmt: skip
    code, report = status(cli, Repo(shallow, init=False), "--strict")
    (row,) = report["records"]
    # Its commit is not in the clone: checked at HEAD only, and said.
    assert (code, row["status"]) == (1, "stale")
    assert row["declared_commit"]["code"] == "commit_missing"
    assert row["reachable"] is False


def test_a_hostile_record_path_never_reaches_the_terminal_raw(cli, repo: Repo) -> None:
    repo.write("packets/P-\x1b[2J/capsules/0123456789ab.json", "{}\n")
    repo.commit("a record path holding an escape")
    text = cli(["status"], cwd=repo.path)
    assert text.code == 0
    assert "\x1b" not in text.out + text.err
    assert "packets/P-\\x1b[2J/capsules/0123456789ab.json" in text.out
    _, report = status(cli, repo)
    (row,) = report["records"]
    assert row["path"] == "packets/P-\x1b[2J/capsules/0123456789ab.json"
    assert (row["status"], row["code"]) == ("error", "unsafe_path")
