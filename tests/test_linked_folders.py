"""Issue 22 item 5: no command writes through a folder that is a symbolic
link inside a repository. One shared check (governance.core.paths
``refuse_linked_folders``) is used by every writer: ``new``, ``init``,
``build --record``, ``build -o``, ``render -o``, ``sign`` and
``install-hook``; each refuses with ``path_through_link`` (exit 2) and
leaves the folder the link points at untouched. ``capsule new`` through a
committed symlinked ``packets/`` is the reported hole: it wrote packet.yml
and context.md into a folder outside the work tree."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from governance.core.paths import linked_folder
from support.gitrepo import POLICY, Repo
from support.history import record
from support.signing import make_key

P1 = "packets/P-1/packet.yml"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the work tree that a committed link points at."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "kept.txt").write_text("kept\n")
    return folder


def untouched(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == ["kept.txt"]


def refused(result, where: str) -> None:
    assert result.code == 2, result
    if result.out.startswith("{"):
        error = json.loads(result.out)["error"]
        code, message = error["code"], error["message"]
    else:  # a command without --json (render)
        code = "path_through_link" if "[path_through_link]" in result.err else result.err
        message = result.err
    assert code == "path_through_link", result
    assert f"{where} is a symbolic link" in message


def commit_link(repo: Repo, name: str, target: Path) -> None:
    os.symlink(target, repo.path / name)
    repo.git("add", name)
    repo.git("commit", "-q", "-m", f"{name} is a link")


def test_issue22_new_refuses_a_committed_symlinked_packets_folder(
    cli, tmp_path: Path, outside: Path
) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("policies/capsule.yml", POLICY)
    repo.write("docs/air.md", "# Zeppelin\n\nThe zeppelin section explains airships.\n")
    repo.commit("docs")
    commit_link(repo, "packets", outside)
    result = cli(["new", "AIR-1", "--goal", "Explain the zeppelin", "--json"], cwd=repo.path)
    refused(result, "packets")
    untouched(outside)


def test_issue22_init_refuses_a_symlinked_packets_folder(
    cli, tmp_path: Path, outside: Path
) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("README.md", "# Readme\n")
    repo.commit("readme")
    os.symlink(outside, repo.path / "packets")
    refused(cli(["init", "--json"], cwd=repo.path), "packets")
    untouched(outside)
    assert not (repo.path / "policies").exists()


def test_issue22_build_record_refuses_a_symlinked_records_folder(
    cli, repo: Repo, outside: Path
) -> None:
    os.symlink(outside, repo.path / "packets/P-1/capsules")
    refused(cli(["build", P1, "--record", "--json"], cwd=repo.path), "packets/P-1/capsules")
    untouched(outside)


@pytest.mark.parametrize("command", ["build", "render"])
def test_issue22_an_output_through_a_committed_link_is_refused(
    cli, repo: Repo, outside: Path, tmp_path: Path, command: str
) -> None:
    commit_link(repo, "out", outside)
    argv = ["build", P1] if command == "build" else ["render", str(tmp_path / "capsule.json")]
    if command == "render":
        built = cli(["build", P1, "-o", str(tmp_path / "capsule.json")], cwd=repo.path)
        assert built.code == 0, built
    json_flag = ["--json"] if command == "build" else []
    refused(cli([*argv, "-o", "out/view.md", *json_flag], cwd=repo.path), "out")
    untouched(outside)
    # Below a folder of the work tree too, and named from a subfolder.
    (repo.path / "docs/out").symlink_to(outside)
    if command == "build":
        argv = ["build", f"../{P1}"]
    refused(cli([*argv, "-o", "out/view.md", *json_flag], cwd=repo.path / "docs"), "out")
    untouched(outside)


def test_issue22_sign_refuses_a_record_in_a_symlinked_folder(
    cli, repo: Repo, outside: Path, tmp_path: Path
) -> None:
    path = record(cli, repo)
    repo.commit("a record")
    # The records folder moved outside and linked back: the .sig would go there.
    os.rename(repo.path / "packets/P-1/capsules", outside / "capsules")
    os.symlink(outside / "capsules", repo.path / "packets/P-1/capsules")
    key = make_key(tmp_path / "keys", "alice")
    refused(cli(["sign", path, "--key", str(key.private), "--json"]), "packets/P-1/capsules")
    assert sorted(p.name for p in (outside / "capsules").iterdir()) == [Path(path).name]


def test_issue22_install_hook_refuses_a_hooks_path_through_a_committed_link(
    cli, repo: Repo, outside: Path
) -> None:
    commit_link(repo, ".githooks", outside)
    repo.git("config", "core.hooksPath", ".githooks")
    refused(cli(["install-hook", "--json"], cwd=repo.path), ".githooks")
    untouched(outside)


def test_issue22_install_hook_refuses_a_symlinked_hooks_folder(
    cli, repo: Repo, outside: Path
) -> None:
    hooks = repo.path / ".git/hooks"
    for sample in hooks.iterdir():
        sample.unlink()
    hooks.rmdir()
    hooks.symlink_to(outside)
    refused(cli(["install-hook", "--json"], cwd=repo.path), ".git/hooks")
    untouched(outside)


def test_issue22_links_outside_a_repository_are_the_users_own(
    tmp_path: Path, outside: Path
) -> None:
    # A link on the way to a work tree (a system's /home -> /var/home, say)
    # is no folder of the repository; one below its top is.
    repo = Repo(tmp_path / "real" / "repo")
    (tmp_path / "via").symlink_to(tmp_path / "real")
    assert linked_folder(str(tmp_path / "via/repo/docs/x.md")) is None
    (repo.path / "docs").symlink_to(outside)
    assert linked_folder(str(tmp_path / "via/repo/docs/x.md")) == str(tmp_path / "via/repo/docs")
    assert linked_folder(str(tmp_path / "via/x.md")) is None
