"""Trees.changes (governance/core/trees.py), which parses only the bytes a
tree does not share with a tree like it, against a whole parse of the same
object: random folders and random edits of them (ids and modes changed,
entries added, removed, renamed and named twice, bytes inserted, dropped or
changed anywhere, so malformed trees too) must give the same entries in the
same order, the entries set operations find new, and the same refusals."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.core.trees import TreeMemo, Trees

ID = 20
TREE = pygit2.enums.ObjectType.TREE
MODES = (b"100644", b"100755", b"40000", b"120000", b"160000", b"100664", b"040000")
# Names with spaces, digits, NUL-free control bytes and bytes that are not UTF-8.
NAMES = st.binary(min_size=1, max_size=12).map(lambda name: name.replace(b"\x00", b"_"))
IDS = st.binary(min_size=ID, max_size=ID)


def _entry(mode: bytes, name: bytes, oid: bytes) -> bytes:
    return mode + b" " + name + b"\x00" + oid


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path_factory.mktemp("changes") / "r"), bare=True)


def _write(repo: pygit2.Repository, data: bytes) -> bytes:
    # As given, whatever it holds: the object database checks no tree it is handed.
    return repo.odb.write(TREE, data).raw


def _whole(repo: pygit2.Repository, tree: bytes) -> dict[bytes, bytes] | None:
    """The entries a whole parse gives, None when it refuses the tree."""
    try:
        return Trees(repo, ID, TreeMemo()).entries(tree)
    except pygit2.GitError:
        return None


def _compare(repo: pygit2.Repository, base_data: bytes, data: bytes) -> bool:
    """Assert Trees.changes agrees with a whole parse; whether it told the
    changes from the base's bytes."""
    base_tree, tree = _write(repo, base_data), _write(repo, data)
    expected = _whole(repo, tree)
    trees = Trees(repo, ID, TreeMemo())
    base = trees.entries(base_tree)
    if expected is None:
        with pytest.raises(pygit2.GitError):
            trees.changes(tree, base)
        return False
    entries, changed = trees.changes(tree, base)
    assert list(entries.items()) == list(expected.items())
    if changed is not None:
        assert changed == [item for item in expected.items() if item not in base.items()]
    # Parsed once: the memo hands out the same entries, and changes are then not told.
    assert trees.changes(tree, base) == (entries, None)
    return changed is not None


@st.composite
def _folder(draw: st.DrawFn) -> list[bytes]:
    # Mostly as wide as the folders whose changes are told from their parent's bytes.
    least = draw(st.sampled_from([0, Trees.FROM_BASE, Trees.FROM_BASE, 30]))
    names = draw(st.lists(NAMES, min_size=least, max_size=least + 10, unique=True))
    return [_entry(draw(st.sampled_from(MODES)), name, draw(IDS)) for name in sorted(names)]


@st.composite
def _edited(draw: st.DrawFn, folder: list[bytes]) -> bytes:
    entries = list(folder)
    for _ in range(draw(st.integers(0, 4))):
        where = draw(st.integers(0, len(entries)))
        kind = draw(st.sampled_from(["id", "mode", "add", "drop", "rename", "twice"]))
        if kind == "add" or not entries:
            entries.insert(where, _entry(draw(st.sampled_from(MODES)), draw(NAMES), draw(IDS)))
            continue
        where = min(where, len(entries) - 1)
        mode, rest = entries[where].split(b" ", 1)
        name = rest[: -ID - 1]
        if kind == "id":
            entries[where] = _entry(mode, name, draw(IDS))
        elif kind == "mode":
            entries[where] = _entry(draw(st.sampled_from(MODES)), name, rest[-ID:])
        elif kind == "drop":
            del entries[where]
        elif kind == "rename":
            entries[where] = _entry(mode, draw(NAMES), rest[-ID:])
        else:
            entries.insert(where, _entry(mode, name, draw(IDS)))
    data = b"".join(entries)
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        # Bytes edited anywhere: most such trees are malformed.
        start = draw(st.integers(0, len(data)))
        end = draw(st.integers(start, min(len(data), start + 30)))
        data = data[:start] + draw(st.binary(max_size=30)) + data[end:]
    return data


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_changes_agree_with_a_whole_parse(repo: pygit2.Repository, data: st.DataObject) -> None:
    folder = data.draw(_folder())
    _compare(repo, b"".join(folder), data.draw(_edited(folder)))


def _wide(count: int = 40) -> list[bytes]:
    return [_entry(b"40000", b"P-%03d" % n, bytes([n]) * ID) for n in range(count)]


def test_one_changed_entry_of_a_wide_folder_is_told_from_its_parent_s_bytes(
    repo: pygit2.Repository,
) -> None:
    folder = _wide()
    for where in (0, 17, 39):
        edited = list(folder)
        edited[where] = _entry(b"40000", b"P-%03d" % where, b"\xee" * ID)
        assert _compare(repo, b"".join(folder), b"".join(edited))
    # Entries added and removed at either end and between.
    assert _compare(repo, b"".join(folder), b"".join([_entry(b"100644", b"A", b"a" * ID), *folder]))
    assert _compare(repo, b"".join(folder), b"".join(folder[1:20] + folder[21:]))
    assert _compare(repo, b"".join(folder), b"".join([*folder, _entry(b"100644", b"z", b"z" * ID)]))


@pytest.mark.parametrize(
    "junk",
    [
        b"100644 a\x00" + b"\x01" * 19,  # an id one byte short
        b"1006x4 a\x00" + b"\x01" * 20,  # a mode that is not octal
        b"100644 \x00" + b"\x01" * 20,  # an empty name
        b"1100644 a\x00" + b"\x01" * 20,  # a mode over 16 bits
        b"100644 " + b"a" * 65536 + b"\x00" + b"\x01" * 20,  # a name over 64 KiB
        _entry(b"40000", b"P-010", b"\xee" * ID),  # a name twice
    ],
)
def test_a_malformed_change_of_a_wide_folder_is_refused(
    repo: pygit2.Repository, junk: bytes
) -> None:
    folder = _wide()
    assert not _compare(repo, b"".join(folder), b"".join([*folder[:30], junk, *folder[30:]]))


def test_bytes_between_shared_ends_that_are_no_entries_are_parsed_whole(
    repo: pygit2.Repository,
) -> None:
    # The tree ends with the folder's last entry, byte for byte, but not as an
    # entry: that is the end of the name and the id of the one before it. The
    # bytes between the shared ends are then no entries, yet the tree is well
    # formed, as a whole parse finds.
    folder = _wide()
    last = folder[-1]
    hidden = _entry(b"100644", b"m" + last[: -ID - 1], last[-ID:])
    data = b"".join([*folder[:-2], hidden])
    assert data.endswith(last)
    assert not _compare(repo, b"".join(folder), data)
    entries = Trees(repo, ID, TreeMemo()).entries(_write(repo, data))
    assert list(entries)[-1] == b"m" + last[: -ID - 1]


def test_a_tree_is_kept_in_the_memo_it_is_read_through(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    folder = _wide()
    memo = TreeMemo()
    trees = Trees(repo, ID, memo)
    base = trees.entries(_write(repo, b"".join(folder)))
    tree = _write(repo, b"".join(folder[1:]))
    entries, changed = trees.changes(tree, base)
    assert changed == []
    found = memo.get((repo.path, tree))
    assert found is not None
    assert found == (entries, len(b"".join(folder[1:])))
