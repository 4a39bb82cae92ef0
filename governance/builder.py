"""The trusted capsule/1 builder: Packet + Excerpts + Policy -> canonical bytes.

Build, check, replay and audit all come through ``build_capsule``; only the
snapshot they read from differs.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from governance import budget, canonical
from governance.capsule import SCHEMA_V1, TRUST_V1
from governance.errors import SourceError, UsageError
from governance.excerpt import Excerpt, decode_source, select
from governance.hashing import sha256_hex
from governance.locator import Selector, check_path, parse_locator
from governance.packet import DEFAULT_QUESTION, PACKET_FILE, Packet, parse_packet
from governance.policy import POLICY_PATH, Policy, parse_policy
from governance.snapshot import Snapshot, Source

if TYPE_CHECKING:
    from governance.headings import Heading


@dataclass(frozen=True)
class WholeFile:
    source: Source
    data: bytes
    text: str

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.source.path,
            "blob": self.source.blob_id,
            "sha256": sha256_hex(self.data),
            "text": self.text,
        }


@dataclass(frozen=True)
class Built:
    data: bytes
    document: dict[str, Any]
    packet: Packet
    policy: Policy
    limits: budget.Limits
    excerpts: tuple[Excerpt, ...]

    @property
    def estimated_tokens(self) -> int:
        return budget.estimate_tokens(len(self.data))

    @property
    def sha256(self) -> str:
        return sha256_hex(self.data)


def _read_whole(snapshot: Snapshot, path: str, *, hint: str = "") -> WholeFile:
    try:
        source = snapshot.source(path)
    except SourceError as exc:
        if hint and exc.code == "source_missing":
            exc.message = f"{exc.message}; {hint}"
            exc.args = (exc.message,)
        raise
    snapshot.check_worktree(source)
    data = snapshot.read(source)
    return WholeFile(source=source, data=data, text=decode_source(data, locator=path))


def _excerpt(snapshot: Snapshot, selector: Selector, source: Source) -> Excerpt:
    def parse(text: str) -> Sequence[Heading]:
        from governance.headings import parse_headings

        return snapshot.memo("headings", source, lambda: tuple(parse_headings(text)))

    # An excerpt is a pure function of the blob and the locator; the parsed
    # headings, of the blob alone (other locators into the same file share them).
    return snapshot.memo(
        f"excerpt:{selector.locator}",
        source,
        lambda: select(selector, source, snapshot.read(source), headings=parse),
    )


def _costs(document: dict[str, Any], total: int) -> list[budget.Cost]:
    def size(part: Any) -> int:
        return len(canonical.dumps(part)) - 1

    costs = [
        budget.Cost(document["packet"]["path"], size(document["packet"])),
        budget.Cost(document["context"]["path"], size(document["context"])),
    ]
    costs += [budget.Cost(read["locator"], size(read)) for read in document["reads"]]
    costs.append(budget.Cost("(capsule envelope)", total - sum(c.n_bytes for c in costs)))
    return costs


def build_capsule(snapshot: Snapshot, packet_path: str) -> Built:
    check_path(packet_path)
    if posixpath.basename(packet_path) != PACKET_FILE or posixpath.dirname(packet_path) == "":
        raise UsageError(
            f"{packet_path}: a packet is packets/<ID>/{PACKET_FILE}",
            code="invalid_packet_path",
            path=packet_path,
        )

    policy_file = _read_whole(
        snapshot, POLICY_PATH, hint="every capsule is built under a committed policy"
    )
    policy = snapshot.memo(
        "policy", policy_file.source, lambda: parse_policy(policy_file.text, path=POLICY_PATH)
    )
    packet_file = _read_whole(snapshot, packet_path)
    # The packet's id must match its folder: the parse depends on the path too.
    packet = snapshot.memo(
        f"packet:{packet_path}",
        packet_file.source,
        lambda: parse_packet(packet_file.text, path=packet_path),
    )
    context_file = _read_whole(snapshot, packet.context_path)

    if len(packet.required_reads) > policy.max_required_reads:
        raise SourceError(
            f"{packet_path}: {len(packet.required_reads)} required_reads, more than "
            f"max_required_reads ({policy.max_required_reads}) of {POLICY_PATH}; split the "
            "packet",
            code="too_many_reads",
            locator=packet_path,
            limit=policy.max_required_reads,
        )
    selectors = [parse_locator(locator) for locator in packet.required_reads]
    sources = [snapshot.source(s.path, locator=s.locator) for s in selectors]

    if packet.target_tokens is not None:
        limits = budget.Limits(
            packet.target_tokens, "packet", policy.hard_limit_tokens, policy.reserve_tokens
        )
    else:
        limits = budget.Limits(
            policy.target_tokens, "policy", policy.hard_limit_tokens, policy.reserve_tokens
        )

    # A cheap lower bound before any large blob is inflated: the raw bytes of
    # every part included whole. JSON escaping only adds to it.
    floor = [
        budget.Cost(packet_path, len(packet_file.data)),
        budget.Cost(packet.context_path, len(context_file.data)),
    ]
    floor += [
        budget.Cost(sel.locator, snapshot.size(src))
        for sel, src in zip(selectors, sources, strict=True)
        if sel.slug is None
    ]
    lower = budget.estimate_tokens(sum(c.n_bytes for c in floor))
    if not limits.fits(lower):
        budget.check(limits, lower, floor, at_least=True)

    excerpts = []
    for selector, source in zip(selectors, sources, strict=True):
        snapshot.check_worktree(source, locator=selector.locator)
        excerpts.append(_excerpt(snapshot, selector, source))

    document: dict[str, Any] = {
        "schema": SCHEMA_V1,
        "commit": snapshot.commit_id,
        "id": packet.id,
        "question": packet.question if packet.question is not None else DEFAULT_QUESTION,
        "trust": TRUST_V1,
        "packet": packet_file.to_json(),
        "context": context_file.to_json(),
        "reads": [excerpt.to_json() for excerpt in excerpts],
        "policy": {
            "path": POLICY_PATH,
            "blob": policy_file.source.blob_id,
            "sha256": sha256_hex(policy_file.data),
            **policy.values(),
        },
        "budget": {
            "target_tokens": limits.target_tokens,
            "target_source": limits.target_source,
            "hard_limit_tokens": limits.hard_limit_tokens,
            "reserve_tokens": limits.reserve_tokens,
            "estimator": policy.estimator,
            "bytes": 0,
            "estimated_tokens": 0,
        },
    }
    data = budget.fixpoint(document, canonical.dumps)
    tokens = budget.estimate_tokens(len(data))
    if not limits.fits(tokens):
        budget.check(limits, tokens, _costs(document, len(data)))
    return Built(
        data=data,
        document=document,
        packet=packet,
        policy=policy,
        limits=limits,
        excerpts=tuple(excerpts),
    )
