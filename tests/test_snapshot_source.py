"""Snapshot.source looks a path up with one lookup in its folder once that
folder is walked, and walks it folder by folder otherwise (keeping each
folder) or where the lookup finds no regular file: both ways must give the
same Source, or the same refusal, for any tree and any path."""

from __future__ import annotations

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.core.snapshot import Snapshot, Source
from governance.errors import SourceError

NAMES = ("a", "b.md", "docs", "x y")
# What a tree entry can be: a file, an executable, a link, a submodule, or a folder.
KINDS = ("file", "exec", "link", "gitlink", "tree")


def _write(repo: pygit2.Repository, node: dict[str, object]) -> pygit2.Oid:
    builder = repo.TreeBuilder()
    for name, value in sorted(node.items()):
        if isinstance(value, dict):
            builder.insert(name, _write(repo, value), pygit2.GIT_FILEMODE_TREE)
        elif value == "gitlink":
            builder.insert(name, pygit2.Oid(hex="1" * 40), pygit2.GIT_FILEMODE_COMMIT)
        else:
            mode = {
                "file": pygit2.GIT_FILEMODE_BLOB,
                "exec": pygit2.GIT_FILEMODE_BLOB_EXECUTABLE,
                "link": pygit2.GIT_FILEMODE_LINK,
            }[str(value)]
            builder.insert(name, repo.create_blob(f"{name} {value}\n".encode()), mode)
    return builder.write()


def _trees(depth: int) -> st.SearchStrategy[dict[str, object]]:
    leaf = st.sampled_from(KINDS[:-1])
    child: st.SearchStrategy[object] = leaf if depth == 0 else st.one_of(leaf, _trees(depth - 1))
    return st.dictionaries(st.sampled_from(NAMES), child, max_size=4)


def _outcome(resolve: object, path: str) -> Source | tuple[str, str]:
    assert callable(resolve)
    try:
        found = resolve(path)
    except SourceError as exc:
        return exc.code, exc.message
    assert isinstance(found, Source)
    return found


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path_factory.mktemp("source") / "r"), bare=True)


@settings(max_examples=80, deadline=None)
@given(
    node=_trees(3),
    paths=st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4), max_size=8),
)
def test_one_lookup_and_the_folder_walk_agree(
    repo: pygit2.Repository, node: dict[str, object], paths: list[list[str]]
) -> None:
    tree = repo[_write(repo, node)]
    assert isinstance(tree, pygit2.Tree)
    # One snapshot for every path, so later ones find their folder kept.
    fast = Snapshot(repo=repo, tree=tree, commit_id="0" * 40)
    for parts in paths * 2:
        path = "/".join(parts)
        slow = Snapshot(repo=repo, tree=tree, commit_id="0" * 40)
        assert _outcome(fast.source, path) == _outcome(
            lambda p, by_folder=slow: by_folder._source_by_folder(p, p), path
        )


def test_a_link_on_the_way_is_named_as_such(repo: pygit2.Repository) -> None:
    tree = repo[_write(repo, {"docs": "link", "d": {"e": "gitlink"}})]
    assert isinstance(tree, pygit2.Tree)
    snapshot = Snapshot(repo=repo, tree=tree, commit_id="0" * 40)
    with pytest.raises(SourceError) as link:
        snapshot.source("docs/a.md")
    assert link.value.code == "source_symlink"
    with pytest.raises(SourceError) as submodule:
        snapshot.source("d/e/f.md")
    assert submodule.value.code == "source_submodule"


def test_a_regular_file_in_a_walked_folder_is_found_in_one_lookup(repo: pygit2.Repository) -> None:
    tree = repo[_write(repo, {"docs": {"a": "file", "b.md": "exec"}})]
    assert isinstance(tree, pygit2.Tree)
    snapshot = Snapshot(repo=repo, tree=tree, commit_id="0" * 40)
    found = snapshot.source("docs/b.md")
    assert found.mode == pygit2.GIT_FILEMODE_BLOB_EXECUTABLE
    assert found.blob_id == str(repo[tree["docs"].id]["b.md"].id)  # type: ignore[index]
    # The folder is kept for every later source under it.
    assert list(snapshot._trees) == ["docs"]


def test_a_folder_is_looked_up_once_per_snapshot(repo: pygit2.Repository) -> None:
    # Regression: looking every path up from the root made libgit2 read and
    # parse packets/ again for each packet, so check --all over 1,000 packets
    # went from 0.76 s to 1.19 s (a tree over 4 KiB is not in libgit2's cache).
    # A folder is walked once a snapshot, and packets/ with the first packet.
    packets = {f"P-{index:04d}": {"packet.yml": "file"} for index in range(300)}
    tree = repo[_write(repo, {"packets": packets})]
    assert isinstance(tree, pygit2.Tree)
    snapshot = Snapshot(repo=repo, tree=tree, commit_id="0" * 40)
    snapshot.source("packets/P-0000/packet.yml")
    kept = snapshot._trees["packets"]
    for index in range(1, 300):
        snapshot.source(f"packets/P-{index:04d}/packet.yml")
        snapshot.source(f"packets/P-{index:04d}/packet.yml")
    # packets/ was read once, and every packet's folder is kept beside it.
    assert snapshot._trees["packets"] is kept
    assert len(snapshot._trees) == 301
