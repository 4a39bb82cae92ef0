"""The pre-push guard: what a push sends, judged before it leaves.

A commit can land without the commit hooks seeing its final state (a rebase's
conflict resolution, ``commit --amend``, a cherry-pick, ``--no-verify``), and
a record can be rebased away from under its commit. Before a push, for each
pushed ref: every packet must build at the pushed tip, and every record (and
every other file under a ``capsules/`` folder) that the pushed commits add or
change is judged by the record rules, its commit reachable from that tip.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pygit2

from governance.core.repository import commit_tree
from governance.core.snapshot import Snapshot
from governance.errors import USAGE, UsageError
from governance.guards.check import Failure, check_packets, find_packets
from governance.guards.hooks import GuardReport, stray_failure
from governance.guards.record_check import check_record
from governance.history.reachability import Tips
from governance.history.records import is_record_path, stray_in_records_folder

ZERO = "0" * 40


@dataclass(frozen=True)
class Pushed:
    """One line git gives a pre-push hook on stdin."""

    local_ref: str
    local_sha: str
    remote_ref: str
    remote_sha: str


def parse_push_lines(text: str) -> list[Pushed]:
    """``<local ref> <local sha> <remote ref> <remote sha>`` per line."""
    pushes = []
    for line in text.splitlines():
        parts = line.rsplit(maxsplit=3)
        if len(parts) != 4:
            raise UsageError(f"pre-push: unexpected line from git: {line[:200]!r}", code=USAGE)
        pushes.append(Pushed(*parts))
    return pushes


def from_pre_commit(environ: Mapping[str, str]) -> list[Pushed] | None:
    """The push pre-commit describes in its environment (it reads git's lines
    itself, and names one ref): None when not run by pre-commit's pre-push."""
    to_ref = environ.get("PRE_COMMIT_TO_REF")
    local = environ.get("PRE_COMMIT_LOCAL_BRANCH")
    if not to_ref and not local:
        return None
    return [
        Pushed(
            local or to_ref or "",
            to_ref or local or "",
            environ.get("PRE_COMMIT_REMOTE_BRANCH", ""),
            environ.get("PRE_COMMIT_FROM_REF") or ZERO,
        )
    ]


def _commit(repo: pygit2.Repository, name: str) -> pygit2.Commit | None:
    try:
        obj = repo.revparse_single(name)
        peeled = obj.peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    return peeled if isinstance(peeled, pygit2.Commit) else None


def _pushed_commits(
    repo: pygit2.Repository, tip: pygit2.Commit, push: Pushed, remote: str | None
) -> list[pygit2.Commit]:
    """The commits this push sends: reachable from the tip, not from what the
    remote already has (its old sha, else every remote-tracking ref of it)."""
    walker = repo.walk(tip.id, pygit2.enums.SortMode.TOPOLOGICAL)
    old = _commit(repo, push.remote_sha) if push.remote_sha != ZERO else None
    if old is not None:
        walker.hide(old.id)
    elif remote:
        prefix = f"refs/remotes/{remote}/"
        for ref in repo.references:
            if ref.startswith(prefix):
                known = _commit(repo, ref)
                if known is not None:
                    walker.hide(known.id)
    return list(walker)


def _changed_paths(repo: pygit2.Repository, commit: pygit2.Commit) -> list[str]:
    """Paths ``commit`` adds or changes, against each parent (a merge's
    resolution counts) or the empty tree for a root commit."""
    tree = commit_tree(commit)
    paths: set[str] = set()
    parents: list[pygit2.Commit | None] = list(commit.parents) or [None]
    for parent in parents:
        if parent is None:
            diff = tree.diff_to_tree(swap=True)
        else:
            diff = commit_tree(parent).diff_to_tree(tree)
        for delta in diff.deltas:
            if delta.status != pygit2.enums.DeltaStatus.DELETED:
                paths.add(delta.new_file.path)
    return sorted(paths)


def push_guard(
    repo: pygit2.Repository, pushes: Sequence[Pushed], remote: str | None = None
) -> GuardReport:
    """Every failure of what ``pushes`` send (see the module docstring)."""
    checked: list[str] = []
    failures: list[Failure] = []
    judged: set[tuple[str, str]] = set()
    sent: list[str] = []
    for push in pushes:
        if push.local_sha == ZERO:
            continue  # a deletion sends nothing
        tip = _commit(repo, push.local_sha)
        if tip is None:
            raise UsageError(f"pre-push: {push.local_sha} is not a commit here", code=USAGE)
        sent.append(f"{push.local_ref} at {str(tip.id)[:12]}")
        snapshot = Snapshot(repo=repo, tree=commit_tree(tip), commit_id=str(tip.id))
        packets = find_packets(snapshot.tree)
        results = check_packets(snapshot, packets)
        checked += packets
        failures += [f for packet in packets for f in results[packet]]
        tips = Tips((str(tip.id),), f"the pushed {push.local_ref} ({str(tip.id)[:12]})")
        for commit in _pushed_commits(repo, tip, push, remote):
            at = Snapshot(repo=repo, tree=commit_tree(commit), commit_id=str(commit.id))
            for path in _changed_paths(repo, commit):
                if not (is_record_path(path) or stray_in_records_folder(path)):
                    continue
                try:
                    blob = str(at.tree[path].id)
                except KeyError:
                    continue
                if (path, blob) in judged:
                    continue
                judged.add((path, blob))
                checked.append(path)
                if is_record_path(path):
                    failures += check_record(repo, at, path, tips=tips)
                else:
                    failures.append(stray_failure(path))
    against = "the pushed " + (", ".join(sent) if sent else "nothing (only deletions)")
    return GuardReport("packet or record", tuple(dict.fromkeys(checked)), tuple(failures), against)
