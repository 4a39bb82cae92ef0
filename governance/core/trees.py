"""Git tree objects read from their raw bytes, for the history walk and a
snapshot's path lookups: each entry's name, the file mode libgit2 reports for
it, and its object id, with a memo of recent trees bounded by their number of
entries and bytes.

pygit2 makes an object per entry it hands out, and keeps a reference to every
name it is asked to look up (1.21: a distinct name, found or not, is never
freed); the walk looks at every entry of every folder a commit changes and
keeps almost none. So a tree's bytes are parsed with one regular expression
instead, and names are looked up in the result. A tree object is a run of
``<octal mode> <name>\\0<raw id>`` entries (git's format, the same for every
version); one that libgit2 refuses is refused (a mode over 16 bits, a name
over 65,535 bytes), and so are two forms it takes and no git writes: a sign
before the mode, and a name twice.

A folder a commit changes is mostly its parent's: ``Trees.changes`` parses
only the bytes between the leading and trailing entries it shares with the
parent's, and so tells which of its entries are new without comparing them
all.
"""

from __future__ import annotations

import operator
import re
from collections import OrderedDict
from collections.abc import Hashable
from itertools import accumulate, islice

import pygit2

MODE_FILE = 0o100644
MODE_EXEC = 0o100755
MODE_LINK = 0o120000
MODE_GITLINK = 0o160000
MODE_TREE = 0o040000

# name -> the whole entry (mode, name and raw id), in the tree's own order:
# two entries are equal when mode and id are.
Entries = dict[bytes, bytes]

# Enough for the folders of a few hundred commits around the one being walked;
# an entry costs about a hundred bytes, so this stays under a few tens of MiB.
MAX_ENTRIES = 1 << 17
# And at most this many bytes of tree objects: a name may be 64 KiB, so the
# entry bound alone would let a few MB of repository (long names compress
# well) hold gigabytes.
MAX_BYTES = 32 << 20

_TYPE = 0o170000
_WHOLE = operator.itemgetter(0)
# The modes git writes, as they are spelled in a tree object.
_WRITTEN = {
    b"100644": MODE_FILE,
    b"100755": MODE_EXEC,
    b"40000": MODE_TREE,
    b"120000": MODE_LINK,
    b"160000": MODE_GITLINK,
}


def normalised_mode(raw: int) -> int:
    """The mode ``git_tree_entry_filemode`` reports for a raw one (libgit2
    normalises the modes old versions of git wrote, such as 100664)."""
    if raw & _TYPE == MODE_TREE:
        return MODE_TREE
    if raw & 0o100:
        return MODE_EXEC
    if raw & _TYPE == MODE_GITLINK:
        return MODE_GITLINK
    if raw & _TYPE == MODE_LINK:
        return MODE_LINK
    return MODE_FILE


def entry_mode(entry: bytes) -> int:
    """The reported mode of one whole entry."""
    spelled = entry[: entry.index(b" ")]
    mode = _WRITTEN.get(spelled)
    return mode if mode is not None else normalised_mode(int(spelled, 8))


def mode_and_id(entry: bytes, id_size: int) -> tuple[int, bytes]:
    """The reported mode and the raw id of one whole entry."""
    return entry_mode(entry), entry[-id_size:]


_PATTERNS: dict[int, re.Pattern[bytes]] = {}


def _pattern(id_size: int) -> re.Pattern[bytes]:
    # (whole entry, name) for each entry. As libgit2 reads them: a mode of at
    # most 16 bits, zeros before it or not, and a name of 1 to 65,535 bytes.
    found = _PATTERNS.get(id_size)
    if found is None:
        mode, name = rb"0*(?:1[0-7]{5}|[0-7]{1,5})", rb"[^\x00]{1,65535}"
        found = _PATTERNS[id_size] = re.compile(
            rb"(%s (%s)\x00.{%d})" % (mode, name, id_size), re.DOTALL
        )
    return found


class TreeMemo:
    """Parsed trees by raw id, the least recently used dropped first, bounded
    by their number of entries and their bytes."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.held = 0
        self.bytes = 0
        self._memo: OrderedDict[Hashable, tuple[Entries, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._memo)

    def clear(self) -> None:
        self._memo.clear()
        self.held = 0
        self.bytes = 0

    def get(self, key: Hashable) -> tuple[Entries, int] | None:
        found = self._memo.get(key)
        if found is not None:
            self._memo.move_to_end(key)
        return found

    def put(self, key: Hashable, entries: Entries, size: int) -> None:
        if key in self._memo:
            return
        self._memo[key] = (entries, size)
        self.held += len(entries)
        self.bytes += size
        while (self.held > self.max_entries or self.bytes > self.max_bytes) and len(self._memo) > 1:
            _, (dropped, dropped_size) = self._memo.popitem(last=False)
            self.held -= len(dropped)
            self.bytes -= dropped_size


# The trees parsed in this process, by repository and id, so the walk and
# every snapshot after it share what was parsed, within these bounds. By
# repository too: a tree another repository holds may be missing from this
# one (a partial clone), which must say so.
RECENT = TreeMemo()


_TREE = pygit2.enums.ObjectType.TREE


def _read(odb: pygit2.Odb, tree_id: bytes) -> bytes:
    """The bytes of the tree ``tree_id`` (raw), as libgit2 reads them (its
    check of the object's hash included)."""
    # Asked by its whole id in hex: the same read as by an Oid, without
    # making one.
    kind, data = odb.read(tree_id.hex())
    if kind != _TREE:
        raise pygit2.GitError(f"object {tree_id.hex()} is not a tree")
    return data


def _parse(tree_id: bytes, data: bytes) -> Entries:
    """The entries of a tree from its bytes, or GitError when they are not
    one that libgit2 reads (or a name is there twice)."""
    listed = _pattern(len(tree_id)).findall(data)
    # Entries that together are the whole object, one after the other: a gap
    # would be bytes that are no entry.
    if sum(map(len, map(_WHOLE, listed))) != len(data):
        raise pygit2.GitError(f"tree {pygit2.Oid(raw=tree_id)} is not well formed")
    entries = {name: whole for whole, name in listed}
    if len(entries) != len(listed):
        raise pygit2.GitError(f"tree {pygit2.Oid(raw=tree_id)} names an entry twice")
    return entries


def read_entries(repo: pygit2.Repository, tree_id: bytes) -> tuple[Entries, int]:
    """The entries of the tree ``tree_id`` (raw) and its size in bytes, parsed
    once while ``RECENT`` holds it. KeyError when the object database lacks
    it; GitError when it is no tree, or one that is refused."""
    key = (repo.path, tree_id)
    found = RECENT.get(key)
    if found is not None:
        return found
    data = _read(repo.odb, tree_id)
    entries = _parse(tree_id, data)
    RECENT.put(key, entries, len(data))
    return entries, len(data)


# A tree's entries, and those of them another tree has not.
_Delta = tuple[Entries, list[tuple[bytes, bytes]]]


def _parse_from(data: bytes, base: Entries, pattern: re.Pattern[bytes]) -> _Delta | None:
    """The entries of a tree from its bytes and those of a tree like it
    (``base``, parsed before), and those of its entries ``base`` has not byte
    for byte at their name, in the tree's order; None when that cannot be
    told this way (the caller then parses the tree whole, which refuses it if
    it is malformed).

    The leading and trailing entries of ``base`` the bytes also begin and end
    with are entries of this tree too, whole and in place; only the bytes
    between them are parsed. They must be whole entries themselves: with
    those on either side, the tree is then entries one after the other from
    its first byte to its last, as a whole parse requires (an entry's length
    follows from its own bytes: its mode ends at the first space, its name at
    the first NUL, and its id is ``id_size`` bytes).
    """
    wholes = base.values()
    old = b"".join(wholes)
    bounds = list(accumulate(map(len, wholes), initial=0))
    count = len(bounds) - 1
    # The most leading entries of base the bytes begin with...
    low, high = 0, count
    while low < high:
        middle = (low + high + 1) >> 1
        if data.startswith(old[: bounds[middle]]):
            low = middle
        else:
            high = middle - 1
    first = low
    # ...and the most trailing ones, after those, that they end with: all of
    # them (entries added between) and all but one (one changed) tried before
    # halving, as a commit mostly changes a folder at one place.
    room = len(data) - bounds[first]
    low, high = first, count
    probe = first
    while low < high:
        if len(old) - bounds[probe] <= room and data.endswith(old[bounds[probe] :]):
            high = probe
        else:
            low = probe + 1
        probe = low if low < first + 2 else (low + high) >> 1
    after = low
    start, end = bounds[first], len(data) - (len(old) - bounds[after])
    listed = pattern.findall(data, start, end)
    if sum(map(len, map(_WHOLE, listed))) != end - start:
        return None
    if len(listed) == after - first and [name for _, name in listed] == list(
        islice(base, first, after)
    ):
        # The same names in the same places (ids or modes changed).
        entries = base.copy()
        for whole, name in listed:
            entries[name] = whole
    else:
        items = base.items()
        entries = dict(islice(items, first))
        for whole, name in listed:
            entries[name] = whole
        entries.update(islice(items, after, None))
        if len(entries) != first + len(listed) + count - after:
            return None  # a name twice
    return entries, [(name, whole) for whole, name in listed if base.get(name) != whole]


class Trees:
    """The entries of the trees of one repository, by raw tree id, read as
    ``read_entries`` reads them, through one memo of parsed trees: the
    process's (``RECENT``), unless another is given."""

    # Below this many entries in the tree compared with, a tree is parsed
    # whole: telling its changes from the other's bytes saves nothing there.
    FROM_BASE = 8

    def __init__(self, repo: pygit2.Repository, id_size: int, memo: TreeMemo = RECENT):
        self.repo = repo
        self.id_size = id_size
        self.memo = memo
        # Each read from a repository asks libgit2 for both anew.
        self._path = repo.path
        self._odb = repo.odb
        self._pattern = _pattern(id_size)

    def entries(self, tree_id: bytes) -> Entries:
        key = (self._path, tree_id)
        found = self.memo.get(key)
        if found is not None:
            return found[0]
        data = _read(self._odb, tree_id)
        entries = _parse(tree_id, data)
        self.memo.put(key, entries, len(data))
        return entries

    def changes(
        self, tree_id: bytes, base: Entries
    ) -> tuple[Entries, list[tuple[bytes, bytes]] | None]:
        """The entries of ``tree_id`` and, when it was parsed from the bytes
        of ``base`` (the entries of a tree like it), the entries it has that
        ``base`` has not byte for byte at their name, in the tree's order;
        None in their place when it was parsed whole or was in the memo."""
        key = (self._path, tree_id)
        found = self.memo.get(key)
        if found is not None:
            return found[0], None
        data = _read(self._odb, tree_id)
        delta = _parse_from(data, base, self._pattern) if len(base) >= self.FROM_BASE else None
        if delta is None:
            entries, changed = _parse(tree_id, data), None
        else:
            entries, changed = delta
        self.memo.put(key, entries, len(data))
        return entries, changed
