"""Snapshot.source reads the tree objects on the way to a path from their bytes
(governance/core/trees.py), where pygit2's lookups would keep every name asked
for alive: for any tree and any path it must give what pygit2's own lookups,
folder by folder, give (the same Source, or the same refusal), and look each
folder up once a snapshot."""

from __future__ import annotations

import tracemalloc

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.core.repository import Source
from governance.core.snapshot import Snapshot
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


def _by_pygit2(tree: pygit2.Tree, path: str) -> tuple[str, int] | str:
    """What pygit2's own lookups say of ``path``, folder by folder: the blob and
    mode of a regular file, or the code of the refusal."""
    parts = path.split("/")
    for depth, name in enumerate(parts):
        try:
            entry = tree[name]
        except KeyError:
            return "source_missing"
        mode = entry.filemode
        if mode == pygit2.GIT_FILEMODE_LINK:
            return "source_symlink"
        if mode == pygit2.GIT_FILEMODE_COMMIT:
            return "source_submodule"
        if depth < len(parts) - 1:
            if not isinstance(entry, pygit2.Tree):
                return "source_missing"
            tree = entry
        elif mode not in (pygit2.GIT_FILEMODE_BLOB, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE):
            return "source_not_file"
        else:
            return str(entry.id), int(mode)
    raise AssertionError("unreachable")


def _ours(snapshot: Snapshot, path: str) -> tuple[str, int] | str:
    try:
        found = snapshot.source(path)
    except SourceError as exc:
        return exc.code
    assert isinstance(found, Source)
    assert found.path == path
    return found.blob_id, found.mode


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path_factory.mktemp("source") / "r"), bare=True)


@settings(max_examples=80, deadline=None)
@given(
    node=_trees(3),
    paths=st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4), max_size=8),
)
def test_a_path_resolves_as_pygit2_resolves_it(
    repo: pygit2.Repository, node: dict[str, object], paths: list[list[str]]
) -> None:
    tree = repo[_write(repo, node)]
    assert isinstance(tree, pygit2.Tree)
    # One snapshot for every path, so later ones find their folders kept.
    snapshot = Snapshot(repo=repo, tree=tree, commit_id="0" * 40)
    for parts in paths * 2:
        path = "/".join(parts)
        assert _ours(snapshot, path) == _by_pygit2(tree, path)


def test_a_name_that_is_not_utf8_resolves_as_pygit2_resolves_it(
    repo: pygit2.Repository,
) -> None:
    blob = repo.create_blob(b"x\n")
    raw = repo.odb.write(pygit2.enums.ObjectType.TREE, b"100644 \xff.md\x00" + blob.raw)
    tree = repo[raw]
    assert isinstance(tree, pygit2.Tree)
    snapshot = Snapshot(repo=repo, tree=tree, commit_id="0" * 40)
    for path in ("\udcff.md", "\xff.md", "\ufffd.md"):
        assert _ours(snapshot, path) == _by_pygit2(tree, path)


def test_distinct_names_asked_for_are_not_kept_alive(repo: pygit2.Repository) -> None:
    # pygit2 (1.21) keeps a reference to every name it is asked to look up,
    # found or not: a history naming many long missing paths grew an audit's
    # (and the MCP server's) memory without bound, 2,000 names of 2 KB here
    # holding 4 MB for good.
    tree = repo[_write(repo, {"docs": {"a": "file"}})]
    assert isinstance(tree, pygit2.Tree)
    snapshot = Snapshot(repo=repo, tree=tree, commit_id="0" * 40)
    snapshot.source("docs/a")
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for index in range(2_000):
            with pytest.raises(SourceError):
                snapshot.source(f"docs/{index:05d}{'n' * 2_000}")
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 200_000


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
    assert list(snapshot._folders) == ["", "docs"]


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
    kept = snapshot._folders["packets"]
    for index in range(1, 300):
        snapshot.source(f"packets/P-{index:04d}/packet.yml")
        snapshot.source(f"packets/P-{index:04d}/packet.yml")
    # packets/ was read once, and every packet's folder is kept beside it.
    assert snapshot._folders["packets"] is kept
    assert len(snapshot._folders) == 302  # and the top
