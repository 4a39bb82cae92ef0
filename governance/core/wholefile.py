"""The parts of a capsule included whole: the packet, its context and the
policy, each read from the snapshot and limited before its blob is inflated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from governance.core import budget, canonical
from governance.core.capsule import POLICY_PATH
from governance.core.excerpt import decode_source
from governance.core.hashing import sha256_hex
from governance.core.policy import Policy, parse_policy
from governance.core.repository import Source
from governance.core.snapshot import Snapshot
from governance.errors import POLICY_MALFORMED, SOURCE_MISSING, MalformedInput, SourceError


@dataclass(frozen=True)
class WholeFile:
    """A file a capsule includes whole (the packet, its context, the policy)."""

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


def read_whole(
    snapshot: Snapshot,
    path: str,
    *,
    hint: str = "",
    policy: Policy | None = None,
    max_bytes: int | None = None,
) -> WholeFile:
    """The file at ``path`` of the snapshot, whole and decoded, failing closed:
    ``hint`` is added to a missing file's message; ``max_bytes`` and the
    policy's hard limit are judged from the object header, before the blob
    is inflated."""
    try:
        source = snapshot.source(path)
    except SourceError as exc:
        if hint and exc.code == SOURCE_MISSING:
            exc.message = f"{exc.message}; {hint}"
            exc.args = (exc.message,)
        raise
    if max_bytes is not None and snapshot.size(source) > max_bytes:
        raise MalformedInput(
            f"{path}: {snapshot.size(source):,} bytes {snapshot.where}, more than the "
            f"{max_bytes:,} bytes it may have",
            code=POLICY_MALFORMED,
            path=path,
        )
    if policy is not None:
        # Refuse a file that alone breaks the hard limit before inflating it.
        size = snapshot.size(source)
        tokens = budget.estimate_tokens(size)
        hard = budget.Limits(
            policy.hard_limit_tokens, "policy", policy.hard_limit_tokens, policy.reserve_tokens
        )
        if not hard.fits(tokens):
            budget.check(hard, tokens, [budget.Cost(path, size)], at_least=True)
    snapshot.check_worktree(source)
    data = snapshot.read(source)
    return WholeFile(source=source, data=data, text=decode_source(data, locator=path))


def policy_json(policy_file: WholeFile, policy: Policy) -> dict[str, Any]:
    """The policy's part of a capsule: its file, and the values it sets."""
    return {
        "path": POLICY_PATH,
        "blob": policy_file.source.blob_id,
        "sha256": sha256_hex(policy_file.data),
        **policy.values(),
    }


def parsed_policy(policy_file: WholeFile) -> tuple[Policy, canonical.Fragment]:
    """The policy parsed, and its part of a capsule serialised once."""
    policy = parse_policy(policy_file.text, path=POLICY_PATH)
    return policy, canonical.fragment(policy_json(policy_file, policy))
