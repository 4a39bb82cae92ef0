"""``capsule audit A..B`` with branch, remote-tracking branch and tag names,
on real repositories and a real clone: each end resolves to one commit, the
audit says which, and names that could mean two things are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.gitrepo import Repo
from support.history import audit, git, record


def test_branch_names_resolve_and_are_printed(cli, repo: Repo) -> None:
    base = repo.head()
    repo.git("checkout", "-q", "-b", "feature")
    path = record(cli, repo)
    tip = repo.commit("a record on the feature branch")
    code, report = audit(cli, repo, "main..feature")
    assert code == 0
    assert (report["range"]["hidden"], report["range"]["tip"]) == (base, tip)
    assert report["range"]["ends"] == [
        {"spec": "main", "commit": base, "ref": "refs/heads/main"},
        {"spec": "feature", "commit": tip, "ref": "refs/heads/feature"},
    ]
    assert [row["path"] for row in report["results"]] == [path]
    # The same range by commit ids audits the same records.
    assert audit(cli, repo, f"{base}..{tip}")[1]["results"] == report["results"]
    text = cli(["audit", "main..feature"], cwd=repo.path)
    assert text.code == 0
    assert (
        f"capsule: range main..feature: main is {base[:12]} (refs/heads/main), "
        f"feature is {tip[:12]} (refs/heads/feature)"
    ) in text.err.splitlines()
    # Ids alone print no resolution line: they name themselves.
    assert "capsule: range" not in cli(["audit", f"{base}..{tip}"], cwd=repo.path).err


def test_a_pull_request_range_against_the_remote(cli, repo: Repo, tmp_path: Path) -> None:
    record(cli, repo)
    repo.commit("a record on main")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo.path), str(clone))
    upstream = git(clone, "rev-parse", "origin/main")
    local = Repo(clone, init=False)
    local.write("docs/notes.md", "# Notes\n\nChanged in the pull request.\n")
    local.commit("pull request work")
    new = record(cli, local)
    head = local.commit("its record")
    code, report = audit(cli, clone, "origin/main..HEAD")
    assert code == 0
    assert [row["path"] for row in report["results"]] == [new]
    assert report["range"]["ends"] == [
        {"spec": "origin/main", "commit": upstream, "ref": "refs/remotes/origin/main"},
        {"spec": "HEAD", "commit": head, "ref": None},
    ]
    # The whole history has both records; the full ref name works too.
    assert audit(cli, clone)[1]["counts"]["records"] == 2
    assert audit(cli, clone, "refs/remotes/origin/main..HEAD")[1]["results"] == report["results"]
    text = cli(["audit", "origin/main..HEAD"], cwd=clone)
    assert f"origin/main is {upstream[:12]} (refs/remotes/origin/main)" in text.err


def test_an_annotated_tag_resolves_to_its_commit(cli, repo: Repo) -> None:
    tagged = repo.head()
    repo.git("tag", "-a", "v1", "-m", "release 1")
    record(cli, repo)
    repo.commit("a record after the release")
    code, report = audit(cli, repo, "v1..HEAD")
    assert code == 0
    assert report["range"]["ends"][0] == {"spec": "v1", "commit": tagged, "ref": "refs/tags/v1"}
    assert report["counts"]["records"] == 1


def _refused(cli, repo: Repo, spec: str) -> str:
    result = cli(["audit", spec, "--json"], cwd=repo.path)
    assert result.code == 2, result
    error = json.loads(result.out)["error"]
    assert error["code"] == "invalid_revision"
    return str(error["message"])


def test_a_name_that_is_a_branch_and_a_tag_is_ambiguous(cli, repo: Repo) -> None:
    repo.git("branch", "v2")
    repo.git("tag", "v2")
    message = _refused(cli, repo, "v2..HEAD")
    assert "ambiguous" in message
    assert "refs/heads/v2" in message
    assert "refs/tags/v2" in message
    # Named in full, either one works.
    assert audit(cli, repo, "refs/tags/v2..HEAD")[0] == 0


def test_a_branch_named_like_a_commit_prefix_is_ambiguous(cli, repo: Repo) -> None:
    prefix = repo.head()[:8]
    repo.git("branch", prefix)
    assert "ambiguous" in _refused(cli, repo, f"{prefix}..HEAD")
    assert audit(cli, repo, f"refs/heads/{prefix}..HEAD")[0] == 0


@pytest.mark.parametrize("spec", ["nosuch..HEAD", "main~1..HEAD", "HEAD..main^", "origin/main"])
def test_names_that_resolve_to_nothing_are_refused(cli, repo: Repo, spec: str) -> None:
    assert "rev expressions" in _refused(cli, repo, spec)
