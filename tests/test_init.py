"""``capsule init``: a commented default policy and an example packet that
builds after a commit; never overwrites anything."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import yaml

from governance.authoring.init import CI_WORKFLOW, PRE_COMMIT, README_MAX_BYTES, policy_text
from governance.core.packet import parse_packet
from governance.core.policy import Policy, parse_policy
from support.gitrepo import Repo

ROOT = Path(__file__).resolve().parent.parent
FILES = ["policies/capsule.yml", "packets/EXAMPLE-1/packet.yml", "packets/EXAMPLE-1/context.md"]
PACKET = "packets/EXAMPLE-1/packet.yml"


def fresh(tmp_path: Path, readme: str | None = "# Demo\n\n## Usage\n\nRun it.\n") -> Repo:
    repo = Repo(tmp_path / "fresh")
    if readme is not None:
        repo.write("README.md", readme)
        repo.commit("readme")
    return repo


def test_init_writes_policy_and_a_packet_that_builds_after_commit(cli, tmp_path: Path) -> None:
    repo = fresh(tmp_path)
    result = cli(["init"], cwd=repo.path)
    assert result.code == 0, result.err
    assert all((repo.path / f).is_file() for f in FILES)
    packet = parse_packet((repo.path / PACKET).read_text(), path=PACKET)
    assert packet.id == "EXAMPLE-1"
    assert list(packet.required_reads) == ["README.md"]
    repo.commit("capsule init")
    built = cli(["build", PACKET], cwd=repo.path)
    assert built.code == 0, built.err
    capsule = json.loads(built.out)
    assert [r["locator"] for r in capsule["reads"]] == ["README.md"]
    assert cli(["check", "--all"], cwd=repo.path).code == 0


def test_the_policy_is_the_defaults_with_a_comment_per_value(cli, tmp_path: Path) -> None:
    repo = fresh(tmp_path)
    assert cli(["init"], cwd=repo.path).code == 0
    text = (repo.path / "policies/capsule.yml").read_text()
    assert text == policy_text()
    assert parse_policy(text) == Policy()
    keys = list(yaml.safe_load(text))
    assert keys == [f for f in Policy.__dataclass_fields__]  # every value, in order
    lines = text.splitlines()
    for key in keys:
        at = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:"))
        assert lines[at - 1].startswith("# "), key


def test_init_in_an_empty_repository_reads_nothing_yet(cli, tmp_path: Path) -> None:
    repo = fresh(tmp_path, readme=None)
    result = cli(["init", "--json"], cwd=repo.path)
    assert result.code == 0
    report = json.loads(result.out)
    assert (report["written"], report["reads"]) == (FILES, [])
    repo.commit("capsule init")
    assert cli(["build", PACKET], cwd=repo.path).code == 0


def test_a_dirty_or_large_readme_is_not_read(cli, tmp_path: Path) -> None:
    repo = fresh(tmp_path)
    repo.write("README.md", "# Demo\n\nedited, not committed\n")
    assert json.loads(cli(["init", "--json"], cwd=repo.path).out)["reads"] == []
    big = fresh(tmp_path / "big", readme="# Big\n\n" + "x" * README_MAX_BYTES)
    assert json.loads(cli(["init", "--json"], cwd=big.path).out)["reads"] == []


def test_init_never_overwrites_and_writes_nothing(cli, tmp_path: Path) -> None:
    repo = fresh(tmp_path)
    repo.write("policies/capsule.yml", "target_tokens: 9000\n")
    result = cli(["init", "--json"], cwd=repo.path)
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["code"] == "file_exists"
    assert error["paths"] == ["policies/capsule.yml"]
    assert "policies/capsule.yml exists" in error["message"]
    assert (repo.path / "policies/capsule.yml").read_text() == "target_tokens: 9000\n"
    assert not (repo.path / "packets").exists()


def test_init_names_every_file_in_the_way(cli, tmp_path: Path) -> None:
    repo = fresh(tmp_path)
    repo.write("packets/EXAMPLE-1/packet.yml", "mine\n")
    repo.write("packets/EXAMPLE-1/context.md", "mine too\n")
    result = cli(["init"], cwd=repo.path)
    assert result.code == 2
    assert "packets/EXAMPLE-1/packet.yml exists" in result.err
    assert "packets/EXAMPLE-1/context.md exists" in result.err
    assert not (repo.path / "policies").exists()


def test_init_refuses_a_linked_folder(cli, tmp_path: Path) -> None:
    repo = fresh(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, repo.path / "packets")
    result = cli(["init", "--json"], cwd=repo.path)
    assert result.code == 2
    error = json.loads(result.out)["error"]
    # The writers' one check (issue 22 item 5; tests/test_linked_folders.py).
    assert error["code"] == "path_through_link"
    assert "packets is a symbolic link" in error["message"]
    assert list(outside.iterdir()) == []
    assert not (repo.path / "policies").exists()


def test_init_refuses_a_file_where_a_folder_goes(cli, tmp_path: Path) -> None:
    repo = fresh(tmp_path)
    repo.write("policies", "not a folder\n")
    result = cli(["init"], cwd=repo.path)
    assert result.code == 2
    assert "policies is not a folder" in result.err


def test_init_from_a_subfolder_writes_at_the_root(cli, tmp_path: Path) -> None:
    repo = fresh(tmp_path)
    (repo.path / "src" / "deep").mkdir(parents=True)
    assert cli(["init"], cwd=repo.path / "src" / "deep").code == 0
    assert (repo.path / "policies/capsule.yml").is_file()
    assert not (repo.path / "src" / "deep" / "policies").exists()


def test_init_in_a_bare_repository_or_outside_one(cli, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    Repo(tmp_path / "seed").git("init", "-q", "--bare", str(bare))
    result = cli(["init", "--json"], cwd=bare)
    assert (result.code, json.loads(result.out)["error"]["code"]) == (2, "no_working_tree")
    elsewhere = tmp_path / "nothing"
    elsewhere.mkdir()
    result = cli(["init", "--json"], cwd=elsewhere)
    assert (result.code, json.loads(result.out)["error"]["code"]) == (2, "not_a_repository")


def test_init_prints_the_pre_commit_snippet_and_the_ci_workflow(cli, tmp_path: Path) -> None:
    repo = fresh(tmp_path)
    result = cli(["init"], cwd=repo.path)
    assert result.code == 0
    for line in PRE_COMMIT.splitlines():
        assert f"  {line}" in result.out.splitlines()
    assert CI_WORKFLOW in result.out
    assert "capsule install-hook" in result.out
    assert "capsule: wrote policies/capsule.yml" in result.err


def test_the_snippet_and_the_workflow_are_the_ones_the_docs_show() -> None:
    # What init prints must be what the README tells users, and the workflow
    # it points at must exist in this repository.
    readme = (ROOT / "README.md").read_text()
    assert f"```yaml\n{PRE_COMMIT}```" in readme
    assert (ROOT / CI_WORKFLOW).is_file()
    assert CI_WORKFLOW in readme
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    ids = {hook["id"] for hook in hooks}
    assert set(re.findall(r"- id: (\S+)", PRE_COMMIT)) == ids
