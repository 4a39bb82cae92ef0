"""The history walk (governance/history/walk.py) against an oracle written
independently here: random histories with branches, merges, deletions,
symlinks, re-added blobs and commits that change nothing, walked by both;
every record version, its mode and the commit that introduced it must agree,
in the same order."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.core.globs import PathGlobs
from governance.core.trees import RECENT, Trees
from governance.history.ranges import parse_range
from governance.history.walk import GIT_CACHE_BYTES, Version, _Walk, find_records, limit_git_memory

pytestmark = pytest.mark.slow

PACKETS = ("P-1", "P-2", "Q")
NAMES = ("000000000001.json", "a.json", "b.json", "notes.md")


def _tree(repo: pygit2.Repository, files: dict[str, tuple[bytes, int]]) -> pygit2.Oid:
    index = pygit2.Index()
    for path, (data, mode) in sorted(files.items()):
        index.add(pygit2.IndexEntry(path, repo.create_blob(data), pygit2.enums.FileMode(mode)))
    return index.write_tree(repo)


def _history(path: Path, seed: int, steps: int) -> pygit2.Repository:
    rng = random.Random(seed)
    repo = pygit2.init_repository(str(path), bare=True)
    who = pygit2.Signature("T", "t@example.invalid", 1767225600, 0)
    files: dict[str, tuple[bytes, int]] = {"docs/a.md": (b"# A\n", 0o100644)}
    tips = {"main": repo.create_commit(None, who, who, "root", _tree(repo, files), [])}
    states = {"main": dict(files)}
    for step in range(steps):
        branch = rng.choice(sorted(tips))
        files = dict(states[branch])
        action = rng.random()
        if action < 0.1 and len(tips) < 3:
            name = f"b{step}"
            tips[name], states[name] = tips[branch], dict(files)
            continue
        if action < 0.25 and len(tips) > 1:
            other = rng.choice([b for b in sorted(tips) if b != branch])
            merged = {**states[other], **files}
            # (Deletions may have emptied both sides: nothing to drop then.)
            if merged and rng.random() < 0.5:
                merged.pop(rng.choice(sorted(merged)), None)
            parents = [tips[branch], tips[other]]
            tips[branch] = repo.create_commit(None, who, who, "merge", _tree(repo, merged), parents)
            states[branch] = merged
            continue
        for _ in range(rng.randint(0, 3)):
            where = rng.choice(
                [
                    f"packets/{rng.choice(PACKETS)}/capsules/{rng.choice(NAMES)}",
                    f"packets/{rng.choice(PACKETS)}/capsules/deep/{rng.choice(NAMES)}",
                    f"packets/{rng.choice(PACKETS)}/packet.yml",
                    f"docs/{rng.choice(NAMES)}",
                ]
            )
            roll = rng.random()
            if roll < 0.2 and where in files:
                del files[where]
            elif roll < 0.3:
                files[where] = (b"target.json", 0o120000)
            else:
                # Few distinct contents, so a blob comes back at paths and times it was before.
                files[where] = (
                    f"record {rng.randint(0, 4)}\n".encode(),
                    rng.choice([0o100644, 0o100644, 0o100755]),
                )
        # Paths that are now both a file and a folder prefix cannot be in one tree.
        for taken in sorted(files):
            if any(other.startswith(f"{taken}/") for other in files):
                del files[taken]
        tips[branch] = repo.create_commit(
            None, who, who, f"step {step}", _tree(repo, files), [tips[branch]]
        )
        states[branch] = files
    # One tip that reaches everything: merge all branches into main.
    head = tips["main"]
    others = [tips[b] for b in sorted(tips) if b != "main"]
    if others:
        tree = _tree(
            repo,
            {
                k: v
                for b in sorted(states)
                for k, v in states[b].items()
                if not any(o.startswith(f"{k}/") for o in states[b])
            },
        )
        head = repo.create_commit(None, who, who, "all", tree, [head, *others])
    repo.references.create("refs/heads/main", head, force=True)
    repo.set_head("refs/heads/main")
    return repo


def _oracle(repo: pygit2.Repository, globs: PathGlobs, hidden: str | None) -> list[Version]:
    """Every commit of the range, parents first; every blob at a matching path
    that no parent (in the range or not) has at that path with that id; the
    first commit to introduce it reported."""

    def blobs(tree: pygit2.Tree, lead: str = "") -> dict[str, tuple[str, int]]:
        out: dict[str, tuple[str, int]] = {}
        for entry in tree:
            path = f"{lead}{entry.name}"
            if entry.filemode == 0o040000:
                assert isinstance(entry, pygit2.Tree)
                out.update(blobs(entry, f"{path}/"))
            else:
                out[path] = (str(entry.id), entry.filemode)
        return out

    def matches(path: str) -> bool:
        state = globs.start
        for name in path.split("/"):
            state = globs.step(state, name)
            if not state:
                return False
        return globs.matches(state)

    order = (
        pygit2.enums.SortMode.TOPOLOGICAL
        | pygit2.enums.SortMode.TIME
        | pygit2.enums.SortMode.REVERSE
    )
    seen: set[tuple[str, str]] = set()
    found: list[Version] = []
    walker = repo.walk(repo.head.target, order)
    if hidden is not None:
        walker.hide(pygit2.Oid(hex=hidden))
    for commit in walker:
        mine = blobs(commit.tree)
        theirs = [blobs(repo[p].tree) for p in commit.parent_ids]
        for path in sorted(mine, key=lambda p: p.encode()):
            blob_id, mode = mine[path]
            if not matches(path) or any(t.get(path, ("", 0))[0] == blob_id for t in theirs):
                continue
            if (path, blob_id) in seen:
                continue
            seen.add((path, blob_id))
            found.append(Version(path, blob_id, mode, str(commit.id)))
    return found


@pytest.mark.parametrize(
    "patterns",
    [
        ["packets/*/capsules/*.json"],
        ["packets/P-1/capsules/*.json"],
        ["**/*.json"],
        ["packets/*/capsules/deep/*"],
    ],
)
# Folders told from their first parent's bytes when as wide as the walk's own
# threshold, and then whatever their width (these folders are narrow).
@pytest.mark.parametrize("from_base", [Trees.FROM_BASE, 0])
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32), steps=st.integers(1, 40), cut=st.integers(0, 60))
def test_walk_agrees_with_the_oracle(
    tmp_path_factory: pytest.TempPathFactory,
    patterns: list[str],
    from_base: int,
    *,
    seed: int,
    steps: int,
    cut: int,
) -> None:
    repo = _history(tmp_path_factory.mktemp("walk") / "repo.git", seed, steps)
    globs = PathGlobs(patterns)
    default, Trees.FROM_BASE = Trees.FROM_BASE, from_base
    try:
        # Every walk parses every tree again.
        RECENT.clear()
        found = find_records(repo, parse_range(repo, None), globs).versions
        assert found == _oracle(repo, globs, None)
        # A range A..HEAD whose A is some earlier commit: merges then have parents
        # outside the walk, and what those parents hold is not new.
        commits = [str(c.id) for c in repo.walk(repo.head.target)]
        base = commits[cut % len(commits)]
        where = parse_range(repo, f"{base}..HEAD")
        RECENT.clear()
        assert find_records(repo, where, globs).versions == _oracle(repo, globs, base)
    finally:
        Trees.FROM_BASE = default


def test_the_step_memo_holds_no_long_names(tmp_path: Path) -> None:
    # A name may be 64 KiB: a history renaming a folder's every entry at each
    # commit filled the 65,536 memoised steps with gigabytes of names.
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    globs = PathGlobs(["packets/*/capsules/*.json"])
    walk = _Walk(repo, globs, 20)
    inside = globs.step(globs.start, "packets")
    for index in range(50):
        name = f"{index}-" + "n" * 60_000
        assert walk._move(inside, name.encode()).after == globs.step(inside, name)
    assert sum(len(name) for _, name in walk._moves) < 50 * 256


def test_libgit2_s_cache_stays_within_its_bound_over_a_walk(tmp_path: Path) -> None:
    # The cache spares second reads, but what a walk through all of history
    # passes must not stay in it: libgit2 evicts once its bound is reached.
    limit_git_memory()
    current, bound = pygit2.settings.cached_memory
    assert bound == GIT_CACHE_BYTES
    repo = _history(tmp_path / "repo.git", seed=7, steps=120)
    find_records(repo, parse_range(repo, None), PathGlobs(["**/*.json"]))
    current, bound = pygit2.settings.cached_memory
    assert 0 < current <= bound == GIT_CACHE_BYTES


def test_a_tree_nested_deeper_than_the_recursion_limit_is_walked(tmp_path: Path) -> None:
    # A whole '**' segment descends as deep as a tree goes, and git lets a tree
    # nest past Python's recursion limit: such a history ended the audit with a
    # RecursionError traceback. Entries after the deep folder still come after
    # what is below it, in the tree's order.
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    who = pygit2.Signature("T", "t@example.invalid", 1767225600, 0)
    depth = sys.getrecursionlimit() + 100
    beside = {name: repo.create_blob(f"{name}\n".encode()) for name in ("0.json", "b.json")}

    def tree(record: bytes) -> pygit2.Oid:
        builder = repo.TreeBuilder()
        builder.insert("x.json", repo.create_blob(record), pygit2.GIT_FILEMODE_BLOB)
        below = builder.write()
        for _ in range(depth):
            builder = repo.TreeBuilder()
            builder.insert("a", below, pygit2.GIT_FILEMODE_TREE)
            below = builder.write()
        top = repo.TreeBuilder()
        top.insert("a", below, pygit2.GIT_FILEMODE_TREE)
        for name, blob in beside.items():
            top.insert(name, blob, pygit2.GIT_FILEMODE_BLOB)
        return top.write()

    first = repo.create_commit(None, who, who, "deep", tree(b"1\n"), [])
    second = repo.create_commit("HEAD", who, who, "deeper", tree(b"2\n"), [first])
    deep = "a/" * (depth + 1) + "x.json"
    found = find_records(repo, parse_range(repo, None), PathGlobs(["**/*.json"]))
    blob = {1: str(pygit2.hash(b"1\n")), 2: str(pygit2.hash(b"2\n"))}
    assert found.versions == [
        Version("0.json", str(beside["0.json"]), 0o100644, str(first)),
        Version(deep, blob[1], 0o100644, str(first)),
        Version("b.json", str(beside["b.json"]), 0o100644, str(first)),
        Version(deep, blob[2], 0o100644, str(second)),
    ]
