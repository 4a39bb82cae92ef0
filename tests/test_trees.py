"""The raw tree reader of the history walk and snapshots (governance/core/trees.py)
against pygit2's own view of the same tree objects: every name, mode and id,
in order, for the modes git writes today and those old versions wrote, names
that are not UTF-8, links and submodules; malformed objects are refused."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from governance.core.trees import RECENT, TreeMemo, Trees, mode_and_id, normalised_mode
from support.gitrepo import write_raw_tree

ID = 20


def _raw_tree(path: Path, data: bytes) -> pygit2.Oid:
    return pygit2.Oid(hex=write_raw_tree(path, data))


def _entry(mode: bytes, name: bytes, oid: pygit2.Oid) -> bytes:
    return mode + b" " + name + b"\x00" + oid.raw


@pytest.fixture
def repo(tmp_path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "r"), bare=True)


def _pygit2_view(repo: pygit2.Repository, oid: pygit2.Oid) -> list[tuple[str, int, str]]:
    tree = repo[oid]
    assert isinstance(tree, pygit2.Tree)
    return [(entry.name or "", int(entry.filemode), str(entry.id)) for entry in tree]


def _our_view(repo: pygit2.Repository, oid: pygit2.Oid) -> list[tuple[str, int, str]]:
    entries = Trees(repo, ID).entries(oid.raw)
    return [
        (name.decode("utf-8", "surrogateescape"), *_hexed(mode_and_id(entry, ID)))
        for name, entry in entries.items()
    ]


def _hexed(found: tuple[int, bytes]) -> tuple[int, str]:
    return found[0], found[1].hex()


def test_every_mode_and_name_reads_as_pygit2_reads_it(repo: pygit2.Repository) -> None:
    blob = repo.create_blob(b"x\n")
    sub = _raw_tree(Path(repo.path), _entry(b"100644", b"f", blob))
    commit = pygit2.Oid(hex="1" * 40)  # a gitlink names a commit of another repository
    entries = [
        _entry(b"100644", b"a file", blob),
        _entry(b"100664", b"b group-writable", blob),  # written by git before 2007
        _entry(b"100755", b"c exec", blob),
        _entry(b"100700", b"d exec owner", blob),
        _entry(b"120000", b"e link", blob),
        _entry(b"160000", b"f submodule", commit),
        _entry(b"40000", b"g folder", sub),
        _entry(b"040000", b"h folder, zero-padded", sub),
        _entry(b"100644", "i caf\u00e9 \u202e.json".encode(), blob),
        _entry(b"100644", b"j \xff\xfe not utf-8", blob),
        _entry(b"100644", b"k " + bytes(range(1, 32)), blob),
    ]
    oid = _raw_tree(Path(repo.path), b"".join(entries))
    assert _our_view(repo, oid) == _pygit2_view(repo, oid)
    assert len(_our_view(repo, oid)) == len(entries)


def test_an_id_that_looks_like_an_entry_is_still_an_id(repo: pygit2.Repository) -> None:
    # Raw ids are any 20 bytes: NUL, spaces and digits included.
    tricky = pygit2.Oid(raw=b"100644 x\x00" + b"\x00" * 11)
    blob = repo.create_blob(b"y\n")
    data = _entry(b"100644", b"a", tricky) + _entry(b"100644", b"b", blob)
    oid = _raw_tree(Path(repo.path), data)
    assert _our_view(repo, oid) == _pygit2_view(repo, oid)


def test_the_empty_tree_has_no_entries(repo: pygit2.Repository) -> None:
    oid = _raw_tree(Path(repo.path), b"")
    assert Trees(repo, ID).entries(oid.raw) == {}


@pytest.mark.parametrize(
    "data",
    [
        b"100644 a\x00" + b"\x01" * 19,  # an id one byte short
        b"100644 a\x00" + b"\x01" * 20 + b"junk",  # bytes after the last entry
        b"1006x4 a\x00" + b"\x01" * 20,  # a mode that is not octal
        b"100644 \x00" + b"\x01" * 20,  # an empty name
        b"100644 a\x00" + b"\x01" * 20 + b"100644 a\x00" + b"\x02" * 20,  # a name twice
    ],
)
def test_a_malformed_tree_is_refused(repo: pygit2.Repository, data: bytes) -> None:
    oid = _raw_tree(Path(repo.path), data)
    with pytest.raises(pygit2.GitError):
        Trees(repo, ID).entries(oid.raw)


def test_an_object_that_is_not_a_tree_is_refused(repo: pygit2.Repository) -> None:
    blob = repo.create_blob(b"100644 a\x00" + b"\x01" * 20)
    with pytest.raises(pygit2.GitError, match="not a tree"):
        Trees(repo, ID).entries(blob.raw)


def test_a_missing_tree_is_git_s_not_found(repo: pygit2.Repository) -> None:
    with pytest.raises(pygit2.GitError):
        Trees(repo, ID).entries(b"\x07" * 20)


def test_the_memo_is_bounded_by_entries(repo: pygit2.Repository) -> None:
    blob = repo.create_blob(b"z\n")
    memo = TreeMemo(max_entries=10)
    trees = Trees(repo, ID, memo)
    for index in range(20):
        data = b"".join(_entry(b"100644", f"{index}-{n}".encode(), blob) for n in range(4))
        trees.entries(_raw_tree(Path(repo.path), data).raw)
        assert memo.held <= 10 or len(memo) == 1
    assert len(memo) == 2


@pytest.mark.parametrize(
    ("raw", "reported"),
    [
        (0o100644, 0o100644), (0o100664, 0o100644), (0o100600, 0o100644),
        (0o100755, 0o100755), (0o100711, 0o100755), (0o120000, 0o120000),
        (0o160000, 0o160000), (0o040000, 0o040000), (0o040755, 0o040000),
        (0o000644, 0o100644),
    ],
)  # fmt: skip
def test_modes_are_normalised_as_libgit2_does(raw: int, reported: int) -> None:
    assert normalised_mode(raw) == reported


def test_the_memo_is_bounded_by_bytes_whatever_the_names(repo: pygit2.Repository) -> None:
    # Names may be 64 KiB each: a few hundred trees of long names, each under
    # the entry bound, held gigabytes from a repository of a few MB.
    blob = repo.create_blob(b"z\n")
    memo = TreeMemo(max_entries=1 << 17, max_bytes=100_000)
    trees = Trees(repo, ID, memo)
    kept = []
    for index in range(20):
        name = b"%d-" % index + b"n" * 30_000
        data = b"".join(_entry(b"100644", b"%d" % n + name, blob) for n in range(2))
        oid = _raw_tree(Path(repo.path), data).raw
        trees.entries(oid)
        kept.append(oid)
        held = [memo.get((repo.path, tree)) for tree in kept]
        entries = [entry for found in held if found is not None for entry in found[0].values()]
        assert sum(map(len, entries)) <= 100_000 or len(memo) == 1
    assert len(memo) == 1


@pytest.mark.parametrize(
    "data",
    [
        b"1100644 a\x00" + b"\x01" * 20,  # a mode over 16 bits
        b"7777777 a\x00" + b"\x01" * 20,
        b"100644 " + b"a" * 65536 + b"\x00" + b"\x01" * 20,  # a name over 64 KiB
    ],
)
def test_a_tree_libgit2_refuses_is_refused(repo: pygit2.Repository, data: bytes) -> None:
    # What the walk read through pygit2 before: its refusals stay refusals.
    oid = _raw_tree(Path(repo.path), data)
    with pytest.raises(pygit2.GitError):
        _pygit2_view(repo, oid)
    with pytest.raises(pygit2.GitError):
        Trees(repo, ID).entries(oid.raw)


def test_a_zero_padded_mode_reads_as_libgit2_reads_it(repo: pygit2.Repository) -> None:
    blob = repo.create_blob(b"x\n")
    oid = _raw_tree(Path(repo.path), _entry(b"0000100644", b"a", blob))
    assert _our_view(repo, oid) == _pygit2_view(repo, oid)


def test_the_process_memo_of_trees_is_bounded_by_entries_and_bytes() -> None:
    # Shared by the walk and every snapshot of the process (a long-lived MCP
    # server too): what it keeps must stay within its bounds.
    memo = TreeMemo(max_entries=10, max_bytes=1_000)
    for index in range(100):
        memo.put(index.to_bytes(20, "big"), {b"n%d" % k: b"x" for k in range(3)}, 90)
        assert memo.held <= 10 or len(memo) == 1
        assert memo.bytes <= 1_000 or len(memo) == 1
    assert memo.get((99).to_bytes(20, "big")) is not None
    assert memo.get((0).to_bytes(20, "big")) is None
    big = TreeMemo(max_entries=1 << 20, max_bytes=1_000)
    for index in range(100):
        big.put(index.to_bytes(20, "big"), {b"n": b"x"}, 300)
    assert big.bytes <= 1_000
    # The most recently used stays.
    kept = (97).to_bytes(20, "big")
    assert big.get(kept) is not None


def test_a_tree_parsed_once_is_shared(repo: pygit2.Repository) -> None:
    blob = repo.create_blob(b"x\n")
    oid = _raw_tree(Path(repo.path), _entry(b"100644", b"shared.md", blob))
    first = Trees(repo, ID).entries(oid.raw)
    found = RECENT.get((repo.path, oid.raw))
    assert found is not None
    assert found[0] is first
    # Another walk (or a snapshot) of the same repository gets the same parse.
    assert Trees(repo, ID).entries(oid.raw) is first


def test_a_tree_another_repository_holds_is_not_lent(tmp_path: Path) -> None:
    # A partial clone lacks trees its origin has: reading one there must say
    # so, whatever the process read in the origin before.
    origin = pygit2.init_repository(str(tmp_path / "origin"), bare=True)
    other = pygit2.init_repository(str(tmp_path / "other"), bare=True)
    blob = origin.create_blob(b"x\n")
    oid = _raw_tree(Path(origin.path), _entry(b"100644", b"only-there.md", blob))
    assert Trees(origin, ID).entries(oid.raw)
    with pytest.raises(KeyError):
        Trees(other, ID).entries(oid.raw)


def test_the_process_memo_can_be_emptied(repo: pygit2.Repository) -> None:
    blob = repo.create_blob(b"x\n")
    oid = _raw_tree(Path(repo.path), _entry(b"100644", b"cleared.md", blob))
    memo = TreeMemo()
    memo.put((repo.path, oid.raw), {b"cleared.md": b"x"}, 40)
    memo.clear()
    assert len(memo) == 0
    assert (memo.held, memo.bytes) == (0, 0)
    assert memo.get((repo.path, oid.raw)) is None
