"""Checking packets without emitting capsules: which packets exist, which ones
a change can affect, and every reason each one would not build.

Used by ``capsule check`` and the ``capsule-packets`` hook.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pygit2

from governance.core.capsule import (
    PACKET_FILE,
    PACKETS_DIR,
    POLICY_PATH,
    context_path,
    packet_path,
)
from governance.core.locator import parse_locator
from governance.core.overlap import Overlap
from governance.core.secret_waivers import SECRET_WAIVERS_PATH
from governance.core.snapshot import MODE_EXEC, MODE_FILE, Snapshot
from governance.core.words import plural
from governance.errors import (
    EXIT_OK,
    OVER_BUDGET,
    SOURCE_MISSING,
    SOURCE_NOT_FILE,
    SOURCE_NOT_UTF8,
    SOURCE_SUBMODULE,
    SOURCE_SYMLINK,
    CapsuleError,
    advice,
)
from governance.guards.dependencies import Dependency, Graph, bound, dependency_errors

# The files every packet's build reads: the policy, and the secret scan's waivers.
EVERY_PACKET = frozenset({POLICY_PATH, SECRET_WAIVERS_PATH})

# When the file at fault is not a required read but a file the build itself
# needs, "update the locator" is no advice: say what fits that file.
_MISSING = {
    "policy": "restore the policy, or commit one",
    "packet": "check the packet's path",
    "context": "restore the packet's context.md, or write one",
}
_NAMED = {"policy": "the policy", "packet": "the packet", "context": "the packet's context.md"}


def _advice(code: str, locator: str, packet: str) -> str:
    own = {
        POLICY_PATH: "policy",
        packet: "packet",
        context_path(packet): "context",
    }.get(locator)
    if own is None:
        return advice(code)
    if code == SOURCE_MISSING:
        return _MISSING[own]
    if code in (SOURCE_SYMLINK, SOURCE_NOT_FILE, SOURCE_SUBMODULE):
        return f"store {_NAMED[own]} as a regular file of this repository"
    if code == SOURCE_NOT_UTF8:
        return f"store {_NAMED[own]} as UTF-8"
    return advice(code)


# A YAML error's position, as PyYAML words it on a line of its own.
_YAML_MARK = re.compile(r'\s+in "[^"]*", line (\d+), column (\d+):?')


def one_line(message: str) -> str:
    """A message on one line, keeping what locates the fault: a YAML error's
    positions become "at line L, column C"; the source lines and carets PyYAML
    quotes, and listings (a line ending in ":" and its indented rows, such as
    over_budget's cost table), are left out."""
    lines = message.splitlines()
    if not lines:
        return ""
    pieces = [lines[0]]
    for line in lines[1:]:
        mark = _YAML_MARK.fullmatch(line)
        if mark:
            pieces[-1] += f" at line {mark[1]}, column {mark[2]}"
        elif line.strip() and not line[0].isspace() and not line.endswith(":"):
            pieces.append(line)
    return ": ".join(pieces)


@dataclass(frozen=True)
class Failure:
    """One reason a file (a packet, or a capsule record) does not pass."""

    path: str
    locator: str
    code: str
    message: str
    exit_code: int
    advice: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    # The failure ``capsule build`` of this packet would stop at (a packet's
    # failures are listed in packet order, not in the order build meets them).
    stops_build: bool = False
    # How many packets this one report stands for (see ``once``).
    packets: int = 1

    @classmethod
    def from_error(cls, path: str, error: CapsuleError, *, stops_build: bool = False) -> Failure:
        """A packet's failure: the locator that failed, or the file that did."""
        locator = error.details.get("locator") or error.details.get("path") or path
        return cls(
            path=path,
            locator=str(locator),
            code=error.code,
            message=error.message,
            exit_code=error.exit_code,
            advice=_advice(error.code, str(locator), path),
            details={k: v for k, v in error.details.items() if k not in ("locator", "path")},
            stops_build=stops_build,
        )

    @property
    def what_to_do(self) -> str:
        """One line: what failed, without repeating the locator, and what to do."""
        text = one_line(self.message) if self.message else self.code
        for prefix in (self.locator, self.path):
            if text.startswith(f"{prefix}: "):
                text = text[len(prefix) + 2 :]
                break
        if self.code == OVER_BUDGET:
            text += _largest_parts(self.details.get("parts", []))
        if self.packets > 1:
            text += f" (fails {plural(self.packets, 'packet')})"
        return f"{text}; {self.advice}" if self.advice else text

    def line(self) -> str:
        return f"{self.path}: {self.locator}: {self.code}: {self.what_to_do}"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "locator": self.locator,
            "code": self.code,
            "message": self.message,
            "exit_code": self.exit_code,
            "advice": self.advice,
            **self.details,
        }


def _largest_parts(parts: Sequence[dict[str, Any]], n: int = 3) -> str:
    named = [p for p in parts if not p["part"].startswith("(")]
    named.sort(key=lambda p: (-p["bytes"], p["part"]))
    if not named:
        return ""
    return (
        " (largest: "
        + ", ".join(f"{p['part']} {p['estimated_tokens']:,} tok" for p in named[:n])
        + ")"
    )


def once(failures: Sequence[Failure]) -> list[Failure]:
    """The failures to print: a failure of the policy itself (every packet is
    built under it) is the same for every packet checked, and is printed once,
    against the policy, saying how many packets it fails."""
    shared = Counter((f.code, f.message) for f in failures if f.locator in EVERY_PACKET)
    out: list[Failure] = []
    done: set[tuple[str, str]] = set()
    for failure in failures:
        key = (failure.code, failure.message)
        if failure.locator not in EVERY_PACKET or shared[key] < 2:
            out.append(failure)
        elif key not in done:
            done.add(key)
            out.append(replace(failure, path=failure.locator, packets=shared[key]))
    return out


def exit_code(failures: Sequence[Failure]) -> int:
    """The exit code of the first failing file, listed in the order checked:
    for a packet, the code ``capsule build`` exits with (its failure that
    stops the build); for a record, its one failure. 0 with no failures.
    Building the packets one by one, stopping at the first failure, exits
    with the same code."""
    if not failures:
        return EXIT_OK
    first = failures[0]
    for failure in failures:
        if failure.path != first.path:
            break
        if failure.stops_build:
            return failure.exit_code
    return first.exit_code


def _packet_blobs(tree: pygit2.Tree) -> list[tuple[str, pygit2.Object]]:
    """(path, tree entry) of every ``packets/<ID>/packet.yml``, sorted by path."""
    try:
        folder = tree[PACKETS_DIR]
    except KeyError:
        return []
    if not isinstance(folder, pygit2.Tree):
        return []
    found = []
    for entry in folder:
        if isinstance(entry, pygit2.Tree) and PACKET_FILE in entry:
            found.append((packet_path(str(entry.name)), entry[PACKET_FILE]))
    return sorted(found, key=lambda item: item[0])


def find_packets(tree: pygit2.Tree) -> list[str]:
    """Every ``packets/<ID>/packet.yml`` of the tree, sorted."""
    return [path for path, _ in _packet_blobs(tree)]


def check_packets(
    snapshot: Snapshot,
    packets: Iterable[str],
    warnings: dict[str, list[Overlap]] | None = None,
    scans: dict[str, dict[str, Any] | None] | None = None,
    dependencies: dict[str, list[Dependency]] | None = None,
) -> dict[str, list[Failure]]:
    """Every failure of each packet (an empty list when it builds), in order,
    its dependencies' last (``guards.dependencies``); each packet's
    overlapping reads go into ``warnings``, what its secret scan said
    (``Scan.status``, None where it could not start) into ``scans``, and its
    dependencies with their newest records into ``dependencies``, when they
    are given (a packet that does not parse has none)."""
    from governance.core.builder import check_report  # noqa: PLC0415 (defers PyYAML, json)

    results = {}
    parsed = []
    for packet in packets:
        checked = check_report(snapshot, packet)
        results[packet] = [
            Failure.from_error(packet, e, stops_build=e is checked.first) for e in checked.errors
        ]
        if checked.packet is not None:
            parsed.append(checked.packet)
        if warnings is not None:
            warnings[packet] = checked.warnings
        if scans is not None:
            scans[packet] = checked.secret_scan
    graph = Graph(snapshot, parsed)
    for path, errors in dependency_errors(parsed, graph).items():
        results[path] += [Failure.from_error(path, e) for e in errors]
    if dependencies is not None:
        dependencies.update({path: [] for path in results})
        dependencies.update(bound(graph, parsed))
    return results


class ReverseIndex:
    """Which packets read which paths, worked out from the packets themselves.

    A packet depends on its own packet.yml and context.md, the policy, and the
    path of every required read. A packet whose reads cannot be worked out
    (not a regular file, not plain YAML, an odd ``required_reads``) is affected
    by every change: it fails closed, and checking it says why.

    Building the index reads every packet, so it must stay cheap: only
    ``required_reads`` is extracted, with libyaml when it is there, and no
    schema is validated (the check of an affected packet does all that); a
    packet.yml over ``MAX_INDEXED_PACKET_BYTES`` by its object header is not
    read at all, and counts as reading every path.
    """

    def __init__(self, repo: pygit2.Repository, tree: pygit2.Tree) -> None:
        self.packets: list[str] = []
        self.readers: dict[str, set[str]] = {}
        self.unknown: set[str] = set()
        for packet, entry in _packet_blobs(tree):
            self.packets.append(packet)
            paths = _dependencies(repo.odb, packet, entry)
            if paths is None:
                self.unknown.add(packet)
                continue
            for path in paths:
                self.readers.setdefault(path, set()).add(packet)

    def affected(self, changed: Iterable[str]) -> list[str]:
        changed = set(changed)
        if changed & EVERY_PACKET:
            return list(self.packets)
        hit = set(self.unknown)
        for path in changed:
            hit |= self.readers.get(path, set())
        return sorted(hit)


def _dependencies(odb: pygit2.Odb, packet_path: str, entry: pygit2.Object) -> set[str] | None:
    if not isinstance(entry, pygit2.Blob) or entry.filemode not in (MODE_FILE, MODE_EXEC):
        return None
    try:
        # A blob missing (a partial clone) or unreadable: the check of the
        # packet, which counts as affected by every change, says so. So for
        # one too large to be a packet, judged from its header unread.
        _, size = odb.read_header(entry.id)
        if size > MAX_INDEXED_PACKET_BYTES:
            return None
        data = entry.data
    except (KeyError, pygit2.GitError):
        return None
    try:
        lists = string_lists(data.decode("utf-8"), ("required_reads", "dependencies"))
        if lists is None:
            return None
        reads, dependencies = lists
        paths = {parse_locator(locator).path for locator in reads}
        # A packet depends on each packet it names: deleting one, or giving it
        # a dependency back, is a change to this one too.
        paths |= {f"{PACKETS_DIR}/{d}/{PACKET_FILE}" for d in dependencies}
    except (UnicodeDecodeError, CapsuleError):
        return None
    return paths | {packet_path, context_path(packet_path)}


# The reverse index parses no packet.yml larger than this (judged from the
# object header): a packet that large counts as reading every path, and its
# check says why it fails (read_whole refuses it from the header too).
MAX_INDEXED_PACKET_BYTES = 256 << 10

_STR_TAG = "tag:yaml.org,2002:str"


def required_reads(text: str) -> list[str] | None:
    """The ``required_reads`` strings of a packet's YAML, or None unless the
    document is a mapping with unique plain keys and that key is a list of
    strings."""
    found = string_lists(text, ("required_reads",))
    return None if found is None else found[0]


def string_lists(text: str, names: Sequence[str]) -> list[list[str]] | None:
    """The strings of each key of ``names`` in a packet's YAML, in that order
    (an empty list for a key it leaves out, but for ``required_reads``), or
    None unless the document is a mapping with unique plain keys whose
    values for those keys are lists of strings."""
    import yaml  # noqa: PLC0415 (defers PyYAML)

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        node = yaml.compose(text, Loader=loader)
    except yaml.YAMLError:
        return None
    if not isinstance(node, yaml.MappingNode):
        return None
    keys = [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode) and k.tag == _STR_TAG]
    # A merge key, a non-string key or a repeated key: leave it to the real parser.
    if len(keys) != len(node.value) or len(set(keys)) != len(keys):
        return None
    values = {key.value: value for key, value in node.value}
    found: list[list[str]] = []
    for name in names:
        value = values.get(name)
        if value is None and name != "required_reads":
            found.append([])
            continue
        if not isinstance(value, yaml.SequenceNode):
            return None
        items = value.value
        if not all(isinstance(i, yaml.ScalarNode) and i.tag == _STR_TAG for i in items):
            return None
        found.append([str(i.value) for i in items])
    return found
