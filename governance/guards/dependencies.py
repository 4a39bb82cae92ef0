"""A packet's ``dependencies`` bound to the tree it is checked in: each id
names a packet there (``dependency_missing``), none leads back to the packet
itself (``dependency_cycle``), and each dependency's newest record is named
with whether it is current, as ``capsule status`` judges it.

Check and the packets hook judge this; the builder does not, so no record's
replay depends on it: a record made while a dependency was missing rebuilds
as it was built.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pygit2

from governance.core.capsule import packet_path
from governance.core.packet import Packet, parse_packet
from governance.core.snapshot import Snapshot
from governance.errors import (
    DEPENDENCY_CYCLE,
    DEPENDENCY_MISSING,
    CapsuleError,
    MalformedInput,
    SourceError,
)

if TYPE_CHECKING:
    from governance.history.status import RecordStatus

# A dependency's packet.yml larger than this (by its object header) is not
# parsed for its own dependencies: its check refuses it, and no cycle is
# looked for through it.
MAX_PACKET_BYTES = 256 << 10


@dataclass(frozen=True)
class Dependency:
    """One id of a packet's ``dependencies``: its packet file, whether the tree
    has it, and that packet's newest record as ``capsule status`` sees it."""

    id: str
    exists: bool
    record: RecordStatus | None = None

    @property
    def path(self) -> str:
        return packet_path(self.id)

    def to_json(self) -> dict[str, Any]:
        record = None
        if self.record is not None:
            record = {
                "path": self.record.path,
                "commit": self.record.commit,
                "status": self.record.status,
                "current": self.record.holds,
            }
        return {"id": self.id, "path": self.path, "exists": self.exists, "record": record}


class Graph:
    """The packets of one snapshot as their dependencies name them, each packet
    read once: those already parsed by their check, the others on demand."""

    def __init__(self, snapshot: Snapshot, parsed: Iterable[Packet]) -> None:
        self.snapshot = snapshot
        self._edges: dict[str, tuple[str, ...] | None] = {
            packet.id: packet.dependencies for packet in parsed
        }
        self._exists: dict[str, bool] = {packet_id: True for packet_id in self._edges}

    def exists(self, packet_id: str) -> bool:
        """Whether ``packets/<packet_id>/packet.yml`` is a regular file of the tree."""
        known = self._exists.get(packet_id)
        if known is None:
            try:
                self.snapshot.source(packet_path(packet_id))
                known = True
            except CapsuleError:
                known = False
            self._exists[packet_id] = known
        return known

    def dependencies(self, packet_id: str) -> tuple[str, ...]:
        """The ids ``packet_id`` depends on; none when it cannot be read or parsed
        (its own check says why)."""
        if packet_id not in self._edges:
            self._edges[packet_id] = self._read(packet_id)
        return self._edges[packet_id] or ()

    def _read(self, packet_id: str) -> tuple[str, ...] | None:
        path = packet_path(packet_id)
        try:
            source = self.snapshot.source(path)
            if self.snapshot.size(source) > MAX_PACKET_BYTES:
                return None
            text = self.snapshot.read(source).decode("utf-8")
            return parse_packet(text, path=path).dependencies
        except (CapsuleError, UnicodeDecodeError, pygit2.GitError):
            return None

    def cycle(self, start: str) -> list[str] | None:
        """The first dependency path from ``start`` back to itself, depth first
        in the packets' own order (``[start, ..., start]``), or None."""
        path = [start]
        seen = {start}
        stack: list[Iterator[str]] = [iter(self.dependencies(start))]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
                path.pop()
                continue
            if step == start:
                return [*path, start]
            if step in seen or not self.exists(step):
                continue
            seen.add(step)
            path.append(step)
            stack.append(iter(self.dependencies(step)))
        return None


def missing(packet: Packet, graph: Graph) -> list[CapsuleError]:
    """``dependency_missing`` for each id of ``packet`` that names no packet."""
    found: list[CapsuleError] = []
    for dependency in dict.fromkeys(packet.dependencies):
        if graph.exists(dependency):
            continue
        found.append(
            SourceError(
                f"{packet.path}: depends on {dependency}, but {packet_path(dependency)} "
                f"does not exist {graph.snapshot.where}",
                code=DEPENDENCY_MISSING,
                path=packet.path,
                dependency=dependency,
            )
        )
    return found


def cycle_error(packet: Packet, graph: Graph) -> CapsuleError | None:
    """``dependency_cycle`` when ``packet``'s dependencies lead back to it."""
    found = graph.cycle(packet.id)
    if found is None:
        return None
    return MalformedInput(
        f"{packet.path}: its dependencies lead back to it: {' -> '.join(found)}",
        code=DEPENDENCY_CYCLE,
        path=packet.path,
        cycle=found,
    )


def dependency_errors(packets: Sequence[Packet], graph: Graph) -> dict[str, list[CapsuleError]]:
    """Every dependency failure of each packet, by packet path: the missing
    ids in packet order, then the cycle through it, if any."""
    out: dict[str, list[CapsuleError]] = {}
    for packet in packets:
        errors = missing(packet, graph)
        looped = cycle_error(packet, graph)
        if looped is not None:
            errors.append(looped)
        out[packet.path] = errors
    return out


def bound(graph: Graph, packets: Sequence[Packet]) -> dict[str, list[Dependency]]:
    """Each packet's dependencies, by packet path, each with the newest record
    of the packet it names, verified against the graph's snapshot as
    ``capsule status`` verifies HEAD (newest by HEAD's history)."""
    snapshot = graph.snapshot
    wanted = {d for p in packets for d in p.dependencies if graph.exists(d)}
    records: dict[str, RecordStatus] = {}
    if wanted:
        from governance.history.status import newest_records  # noqa: PLC0415 (defers verify, only for dependencies)

        repo = snapshot.repo
        head = None if repo.head_is_unborn else str(repo.head.target)
        records = newest_records(repo, snapshot, head, wanted)
    return {
        p.path: [
            Dependency(d, graph.exists(d), records.get(d)) for d in dict.fromkeys(p.dependencies)
        ]
        for p in packets
    }
