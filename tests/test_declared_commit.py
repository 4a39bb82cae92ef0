"""Verify checks the commit a capsule declares; replay in a treeless clone; the
cleanliness check and a symlinked parent folder (issue 9, items 6, 7 and 8)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.gitrepo import Repo
from support.history import forge, forge_whole_read, record

PACKET = "packets/P-1/packet.yml"


def built_capsule(cli, repo: Repo, tmp_path: Path, name: str = "c.json") -> Path:
    result = cli(["build", PACKET], cwd=repo.path)
    assert result.code == 0, result.err
    path = tmp_path / name
    path.write_text(result.out)
    return path


def verify(cli, repo: Repo, capsule: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = cli(["verify", str(capsule), "--json", *args], cwd=repo.path)
    assert "Traceback" not in result.err
    return result.code, json.loads(result.out)


# Item 6.


def test_forged_content_at_its_own_commit_is_corrupt_not_stale(
    cli, repo: Repo, tmp_path: Path
) -> None:
    capsule = built_capsule(cli, repo, tmp_path)
    # reads[1] is docs/notes.md, whole: new text, every hash and blob id recomputed.
    capsule.write_bytes(forge_whole_read(capsule.read_bytes(), 1, "# Notes\n\nForged.\n"))
    code, out = verify(cli, repo, capsule)
    assert code == 2
    assert out["error"]["code"] == "capsule_corrupt"
    assert out["error"]["field"] == "reads[1]"


def test_forged_content_is_corrupt_at_its_commit_when_verified_later(
    cli, repo: Repo, tmp_path: Path
) -> None:
    capsule = built_capsule(cli, repo, tmp_path)
    capsule.write_bytes(forge_whole_read(capsule.read_bytes(), 1, "# Notes\n\nForged.\n"))
    repo.write("docs/notes.md", "# Notes\n\nForged.\n")
    repo.commit("the forged text, committed later")
    code, out = verify(cli, repo, capsule)
    # At HEAD the forged read even matches; at its own commit it never did.
    assert (code, out["error"]["code"]) == (2, "capsule_corrupt")


def test_another_commit_id_is_checked(cli, repo: Repo, tmp_path: Path) -> None:
    first = repo.head()
    repo.write("docs/notes.md", "# Notes\n\nRewritten.\n")
    repo.commit("notes rewritten")
    capsule = built_capsule(cli, repo, tmp_path)

    def edit(d: dict[str, Any]) -> None:
        d["commit"] = first

    capsule.write_bytes(forge(capsule.read_bytes(), edit))
    code, out = verify(cli, repo, capsule)
    assert (code, out["error"]["code"]) == (2, "capsule_corrupt")
    assert first[:12] in out["error"]["message"]


def test_a_declared_commit_the_repository_lacks_is_said(cli, repo: Repo, tmp_path: Path) -> None:
    capsule = built_capsule(cli, repo, tmp_path)

    def edit(d: dict[str, Any]) -> None:
        d["commit"] = "0123456789abcdef0123456789abcdef01234567"

    capsule.write_bytes(forge(capsule.read_bytes(), edit))
    code, out = verify(cli, repo, capsule)
    assert code == 0
    assert out["declared_commit"] == {
        "commit": "0123456789abcdef0123456789abcdef01234567",
        "present": False,
        "code": "commit_missing",
    }
    text = cli(["verify", str(capsule)], cwd=repo.path)
    assert "commit_missing" in text.err
    assert "0123456789ab" in text.err


def test_a_genuine_capsule_reports_its_commit_checked(cli, repo: Repo, tmp_path: Path) -> None:
    capsule = built_capsule(cli, repo, tmp_path)
    repo.write("docs/notes.md", "# Notes\n\nLater.\n")
    repo.commit("later")
    code, out = verify(cli, repo, capsule)
    assert code == 1  # stale at HEAD, genuine at its commit
    assert out["declared_commit"]["present"] is True
    assert out["declared_commit"]["code"] == "verified_at_commit"


# Item 7.


def _treeless_clone(repo: Repo, where: Path) -> Path:
    return repo.partial_clone(where / "treeless", "tree:0")


def test_replay_in_a_treeless_clone_is_object_missing(cli, repo: Repo, tmp_path: Path) -> None:
    path = record(cli, repo)
    repo.commit("the record")
    capsule = tmp_path / "record.json"
    shutil.copy(repo.path / path, capsule)
    clone = _treeless_clone(repo, tmp_path)
    result = cli(["replay", str(capsule), "--json"], cwd=clone)
    assert "Traceback" not in result.err
    error = json.loads(result.out)["error"]
    assert (result.code, error["code"]) == (3, "object_missing")


# Item 8.


def test_a_symlinked_parent_folder_is_dirty(cli, repo: Repo, tmp_path: Path) -> None:
    copy = tmp_path / "docs-copy"
    shutil.copytree(repo.path / "docs", copy)
    shutil.rmtree(repo.path / "docs")
    os.symlink(copy, repo.path / "docs")
    result = cli(["build", PACKET, "--json"], cwd=repo.path)
    error = json.loads(result.out)["error"]
    assert (result.code, error["code"]) == (3, "source_dirty")
    assert "symbolic link" in error["message"]


@pytest.mark.parametrize("depth", ["packets", "packets/P-1"])
def test_a_symlinked_packet_folder_is_dirty(cli, repo: Repo, tmp_path: Path, depth: str) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(repo.path / depth, copy)
    shutil.rmtree(repo.path / depth)
    os.symlink(copy, repo.path / depth)
    result = cli(["build", PACKET, "--json"], cwd=repo.path)
    error = json.loads(result.out)["error"]
    assert (result.code, error["code"]) == (3, "source_dirty")
