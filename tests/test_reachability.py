"""Rule 5 (governance/history/reachability.py): a declared commit is in the
history of a tip when it is the tip, a parent of it (looked up directly) or
any further ancestor (libgit2's graph walk); anything else is
commit_unreachable."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from governance.history.reachability import Tips, unreachable


@pytest.fixture
def repo(tmp_path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "r"), bare=True)


def _commit(repo: pygit2.Repository, message: str, parents: list[pygit2.Oid]) -> str:
    who = pygit2.Signature("T", "t@example.invalid", 1767225600, 0)
    tree = repo.TreeBuilder().write()
    return str(repo.create_commit(None, who, who, message, tree, parents))


def test_the_tip_its_parents_and_its_ancestors_are_in_its_history(
    repo: pygit2.Repository,
) -> None:
    root = _commit(repo, "root", [])
    side = _commit(repo, "side", [pygit2.Oid(hex=root)])
    middle = _commit(repo, "middle", [pygit2.Oid(hex=root)])
    tip = _commit(repo, "merge", [pygit2.Oid(hex=middle), pygit2.Oid(hex=side)])
    tips = Tips((tip,), "the tip")
    for declared in (tip, middle, side, root):
        assert unreachable(repo, declared, tips) is None


def test_a_commit_of_another_line_is_unreachable(repo: pygit2.Repository) -> None:
    root = _commit(repo, "root", [])
    tip = _commit(repo, "tip", [pygit2.Oid(hex=root)])
    other = _commit(repo, "other", [pygit2.Oid(hex=root)])
    refused = unreachable(repo, other, Tips((tip,), "the tip"))
    assert refused is not None
    assert refused.code == "commit_unreachable"
    # Nor is a child in the history of its parent.
    assert unreachable(repo, tip, Tips((root,), "the root")) is not None


def test_a_tip_that_is_no_commit_of_this_repository_holds_no_history(
    repo: pygit2.Repository,
) -> None:
    root = _commit(repo, "root", [])
    blob = str(repo.create_blob(b"x\n"))
    refused = unreachable(repo, root, Tips(("0" * 40, blob), "nothing"))
    assert refused is not None
    assert refused.code == "commit_unreachable"
