"""Rule 5 of the record rules: is a record's declared commit in the history of
the given tips (``commit_unreachable``: amended, rebased away, or another
branch). Audit's tips are the commit that introduced the record; the hook's
and replay's are HEAD and, during a merge, the commits being merged."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pygit2

from governance.core.capsule import FULL_COMMIT
from governance.errors import COMMIT_UNREACHABLE, SourceError


@dataclass(frozen=True)
class Tips:
    """The commits whose history a record's commit must be in, and their name
    for a message."""

    commits: tuple[str, ...]
    where: str


def introduced_by(commit: str) -> Tips:
    """Audit's tips: the commit that introduced the record version."""
    return Tips((commit,), f"{commit[:12]}, which introduced this record")


def _merge_heads(repo: pygit2.Repository) -> list[str]:
    """The commits being merged, while a merge is in progress.

    A merge stopped for conflicts (committed later with ``git commit``, which
    runs pre-commit) names them in MERGE_HEAD, one per line. While ``git
    merge`` runs the pre-merge-commit hook, MERGE_HEAD is not written yet; git
    names each merged commit in its environment instead, as ``GITHEAD_<id>``
    (the label merge strategies show for it).
    """
    names: list[str] = [
        key.removeprefix("GITHEAD_") for key in os.environ if key.startswith("GITHEAD_")
    ]
    try:
        with open(os.path.join(repo.path, "MERGE_HEAD"), encoding="ascii") as file:
            names += file.read().split()
    except (OSError, UnicodeDecodeError):
        pass
    return [name for name in names if FULL_COMMIT.fullmatch(name)]


def branch_tips(repo: pygit2.Repository) -> Tips:
    """The hook's and replay's tips: HEAD, and during a merge the commits being
    merged: the history the next commit extends."""
    if repo.head_is_unborn:
        return Tips((), "HEAD (there are no commits yet)")
    head = str(repo.head.target)
    merging = _merge_heads(repo)
    where = f"HEAD ({head[:12]})" + (" or of the commit being merged" if merging else "")
    return Tips((head, *merging), where)


def _parent_of(repo: pygit2.Repository, tip: str, declared: str) -> bool:
    # The common case, a record committed on top of the commit it was built
    # at, without the graph walk of descendant_of.
    commit = repo.get(tip)
    return isinstance(commit, pygit2.Commit) and any(
        str(parent) == declared for parent in commit.parent_ids
    )


def unreachable(repo: pygit2.Repository, declared: str, tips: Tips) -> SourceError | None:
    """None when ``declared`` is one of ``tips`` or an ancestor of one; else
    ``commit_unreachable``."""
    for tip in tips.commits:
        try:
            if (
                tip == declared
                or _parent_of(repo, tip, declared)
                or repo.descendant_of(tip, declared)
            ):
                return None
        except (pygit2.GitError, ValueError, KeyError):
            continue  # not a commit of this repository: no history to be in
    return SourceError(
        f"declared commit {declared[:12]} is not in the history of {tips.where}: amended, "
        "rebased away, or from another branch",
        code=COMMIT_UNREACHABLE,
        commit=declared,
    )
