from __future__ import annotations

import json
import os

import pytest

from governance.cli import main
from governance.core.hashing import sha256_hex
from support.gitrepo import Repo
from support.history import P1, forge_target, record


def test_record_is_written_under_the_packet_by_commit(cli, repo: Repo) -> None:
    result = cli(["build", P1, "--record", "--json"], cwd=repo.path)
    assert result.code == 0, result
    summary = json.loads(result.out)
    path = f"packets/P-1/capsules/{repo.head()[:12]}.json"
    assert summary["record"] == path
    assert summary["record_status"] == "written"
    data = (repo.path / path).read_bytes()
    assert summary["sha256"] == sha256_hex(data)
    assert json.loads(data)["commit"] == repo.head()


def test_record_text_mode_prints_nothing_on_stdout(cli, repo: Repo) -> None:
    result = cli(["build", P1, "--record"], cwd=repo.path)
    assert result.code == 0
    assert result.out == ""
    assert f"-> packets/P-1/capsules/{repo.head()[:12]}.json (written)" in result.err


def test_record_from_a_subfolder_lands_in_the_same_place(cli, repo: Repo) -> None:
    result = cli(
        ["build", "../packets/P-1/packet.yml", "--record", "--json"], cwd=repo.path / "docs"
    )
    assert result.code == 0, result
    assert json.loads(result.out)["record"] == f"packets/P-1/capsules/{repo.head()[:12]}.json"
    assert not (repo.path / "docs/packets").exists()


def test_record_at_an_older_commit_is_named_by_that_commit(cli, repo: Repo) -> None:
    first = repo.head()
    repo.write("docs/notes.md", "# Notes\n\nChanged.\n")
    repo.commit()
    path = record(cli, repo, P1, "--at", first)
    assert path == f"packets/P-1/capsules/{first[:12]}.json"
    assert json.loads((repo.path / path).read_bytes())["commit"] == first


def test_same_record_again_is_unchanged(cli, repo: Repo) -> None:
    path = repo.path / record(cli, repo)
    before = path.stat()
    result = cli(["build", P1, "--record", "--json"], cwd=repo.path)
    assert result.code == 0
    assert json.loads(result.out)["record_status"] == "unchanged"
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_record_conflict_never_overwrites(cli, repo: Repo) -> None:
    path = repo.path / record(cli, repo)
    forged = forge_target(path.read_bytes())
    path.write_bytes(forged)
    result = cli(["build", P1, "--record", "--json"], cwd=repo.path)
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["code"] == "record_conflict"
    assert error["existing_sha256"] == sha256_hex(forged)
    assert error["existing_sha256"] != error["built_sha256"]
    assert "never overwritten" in error["message"]
    assert path.read_bytes() == forged
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_record_conflict_with_a_non_file(cli, repo: Repo) -> None:
    target = repo.path / f"packets/P-1/capsules/{repo.head()[:12]}.json"
    target.mkdir(parents=True)
    result = cli(["build", P1, "--record", "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "record_conflict"
    assert target.is_dir()


def test_record_refuses_a_symlinked_records_folder(cli, repo: Repo, tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, repo.path / "packets/P-1/capsules")
    result = cli(["build", P1, "--record", "--json"], cwd=repo.path)
    assert result.code == 2
    error = json.loads(result.out)["error"]
    # The writers' one check (issue 22 item 5; tests/test_linked_folders.py).
    assert error["code"] == "path_through_link"
    assert "symbolic link" in error["message"]
    assert list(outside.iterdir()) == []


def test_failed_build_writes_no_record(cli, repo: Repo) -> None:
    repo.write("docs/notes.md", "dirty\n")
    result = cli(["build", P1, "--record"], cwd=repo.path)
    assert result.code == 3
    assert not (repo.path / "packets/P-1/capsules").exists()


def test_record_and_output_are_exclusive(cli, repo: Repo, tmp_path) -> None:
    result = cli(["build", P1, "--record", "-o", str(tmp_path / "x.json"), "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "usage"
    assert not (tmp_path / "x.json").exists()


def test_record_needs_a_working_tree(cli, repo: Repo, tmp_path) -> None:
    bare = tmp_path / "bare.git"
    repo.git("clone", "-q", "--bare", str(repo.path), str(bare))
    result = cli(["build", P1, "--at", repo.head(), "--record", "--json"], cwd=bare)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "no_working_tree"


def test_build_help_names_the_record_path_and_conflict(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["build", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "packets/<ID>/capsules/<first 12 hex of the commit>.json" in text
    assert "record_conflict (exit 2)" in text
