"""A capsule's canonical bytes from its selected parts: the capsule/1
document, its parts as cached fragments, and the budget's size fixpoint."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from governance.core import budget, canonical
from governance.core.capsule import SCHEMA_V1, TRUST_V1
from governance.core.excerpt import Excerpt
from governance.core.packet import DEFAULT_QUESTION, Packet
from governance.core.policy import Policy
from governance.core.snapshot import Snapshot
from governance.core.wholefile import WholeFile, policy_json


@dataclass(frozen=True)
class Parts:
    """Everything a capsule holds, read and selected: the packet and policy
    with their fragments (made once a blob by the builder), the context, the
    reads in packet order, and the budget's limits."""

    packet_file: WholeFile
    packet: Packet
    packet_fragment: Any
    policy_file: WholeFile
    policy: Policy
    policy_fragment: Any
    context: WholeFile
    reads: tuple[Excerpt, ...]
    limits: budget.Limits


def assemble(snapshot: Snapshot, parts: Parts) -> tuple[bytes, Callable[[], dict[str, Any]]]:
    """The capsule's canonical bytes, and what makes the plain document those
    bytes serialise (asked for only when needed: a replay never asks)."""
    head = {
        "schema": SCHEMA_V1,
        "commit": snapshot.commit_id,
        "id": parts.packet.id,
        "question": parts.packet.question
        if parts.packet.question is not None
        else DEFAULT_QUESTION,
        "trust": TRUST_V1,
    }
    limits = parts.limits
    numbers = {
        "target_tokens": limits.target_tokens,
        "target_source": limits.target_source,
        "hard_limit_tokens": limits.hard_limit_tokens,
        "reserve_tokens": limits.reserve_tokens,
        "estimator": parts.policy.estimator,
        "bytes": 0,
        "estimated_tokens": 0,
    }

    def document() -> dict[str, Any]:
        return {
            **head,
            "packet": parts.packet_file.to_json(),
            "context": parts.context.to_json(),
            "reads": [excerpt.to_json() for excerpt in parts.reads],
            "policy": policy_json(parts.policy_file, parts.policy),
            # The one budget object: the fixpoint fills its numbers.
            "budget": numbers,
        }

    # Serialised from the same document with each part that is a function of
    # blobs alone as its canonical fragment, made once while the blob stays
    # cached: the packet, context and policy recur in nearly every replay of a
    # history, a read only while its source's blob does.
    context = parts.context
    context_fragment = snapshot.memo(
        f"json:{parts.packet.context_path}",
        context.source,
        lambda: canonical.fragment(context.to_json()),
        weight=lambda found: len(found.data),
    )
    composed = {
        **head,
        "packet": parts.packet_fragment,
        "context": context_fragment,
        "reads": [excerpt.fragment for excerpt in parts.reads],
        "policy": parts.policy_fragment,
        "budget": numbers,
    }
    return budget.fixpoint(composed, canonical.dumps), document


def costs(document: dict[str, Any], total: int) -> list[budget.Cost]:
    """What each part of ``document`` costs, and the envelope the rest of ``total``."""

    def size(part: Any) -> int:
        return len(canonical.dumps(part)) - 1

    found = [
        budget.Cost(document["packet"]["path"], size(document["packet"])),
        budget.Cost(document["context"]["path"], size(document["context"])),
    ]
    found += [budget.Cost(read["locator"], size(read)) for read in document["reads"]]
    found.append(budget.Cost("(capsule envelope)", total - sum(c.n_bytes for c in found)))
    return found
