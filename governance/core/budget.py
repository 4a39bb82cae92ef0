"""The token estimator, the size fixpoint and the budget check."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from governance.core import canonical
from governance.errors import INTERNAL_ERROR, BudgetError, CapsuleError


def estimate_tokens(n_bytes: int) -> int:
    """``utf8_bytes_div_3_ceil``: the only estimator of capsule/1."""
    return -(-n_bytes // 3)


@dataclass(frozen=True)
class Limits:
    target_tokens: int
    target_source: str  # "packet" or "policy"
    hard_limit_tokens: int
    reserve_tokens: int

    def fits(self, tokens: int) -> bool:
        return (
            tokens <= self.target_tokens and tokens + self.reserve_tokens <= self.hard_limit_tokens
        )


@dataclass(frozen=True)
class Cost:
    """What one part of a capsule costs, for the over-budget report."""

    part: str
    n_bytes: int

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.n_bytes)


# How a canonical capsule begins: "budget" is the first key of the file, and
# "bytes" and "estimated_tokens" the first two of it (keys sort by code point).
_LEAD = b'{"budget":{"bytes":'
_MIDDLE = b',"estimated_tokens":'
_ZEROS = _LEAD + b"0" + _MIDDLE + b"0"
# The two zeros as any object holding them serialises (no JSON string can hold
# this run: its quotes would be escaped).
_PAIR = b'"bytes":0,"estimated_tokens":0'


def fixpoint(document: dict[str, Any], dumps: Callable[[Any], bytes]) -> bytes:
    """Fill ``budget.bytes`` and ``budget.estimated_tokens`` so they describe the
    very file that contains them.

    The serialised length only grows with the numbers written into it, so
    iterating from zero climbs to the least fixpoint in a few steps.
    """
    budget = document["budget"]
    # Both numbers are written as plain decimal digits, so the length of the
    # file with any other pair of numbers is known from one serialisation:
    # climb the same sequence by arithmetic.
    budget["bytes"] = 0
    budget["estimated_tokens"] = 0
    zeros = dumps(document)
    base = len(zeros) - 2
    n_bytes = 0
    for _ in range(16):
        length = base + len(str(n_bytes)) + len(str(estimate_tokens(n_bytes)))
        if length == n_bytes:
            break
        n_bytes = length
    budget["bytes"] = n_bytes
    budget["estimated_tokens"] = estimate_tokens(n_bytes)
    if zeros.startswith(_ZEROS) and dumps is canonical.dumps and zeros.count(_PAIR) == 1:
        # The two numbers lead the canonical file, and nothing else in it
        # depends on them (the budget object is not also elsewhere in the
        # document): write them in place of the zeros instead of serialising
        # again.
        data = b"".join(
            (
                _LEAD,
                b"%d" % n_bytes,
                _MIDDLE,
                b"%d" % estimate_tokens(n_bytes),
                zeros[len(_ZEROS) :],
            )
        )
        if len(data) == n_bytes:
            return data
    # Another serialiser, or a document where the budget does not lead: check
    # by serialising (and, should it ever miss, climb plainly from there).
    for _ in range(16):
        budget["bytes"] = n_bytes
        budget["estimated_tokens"] = estimate_tokens(n_bytes)
        data = dumps(document)
        if len(data) == n_bytes:
            return data
        n_bytes = len(data)
    raise CapsuleError("budget size did not converge", code=INTERNAL_ERROR)  # pragma: no cover


def check(limits: Limits, tokens: int, costs: Sequence[Cost], *, at_least: bool = False) -> None:
    if limits.fits(tokens):
        return
    reasons = []
    if tokens > limits.target_tokens:
        reasons.append(f"target {limits.target_tokens} ({limits.target_source})")
    if tokens + limits.reserve_tokens > limits.hard_limit_tokens:
        reasons.append(
            f"hard limit {limits.hard_limit_tokens} less reserve {limits.reserve_tokens}"
        )
    qualifier = "at least " if at_least else ""
    lines = [
        f"over budget: {qualifier}{tokens} estimated tokens exceed the {' and the '.join(reasons)}",
        "what each part costs (bytes, estimated tokens):",
    ]
    width = max((len(c.part) for c in costs), default=0)
    lines += [f"  {c.part:<{width}}  {c.n_bytes:>10,} B  {c.tokens:>8,} tok" for c in costs]
    raise BudgetError(
        "\n".join(lines),
        estimated_tokens=tokens,
        target_tokens=limits.target_tokens,
        hard_limit_tokens=limits.hard_limit_tokens,
        reserve_tokens=limits.reserve_tokens,
        parts=[{"part": c.part, "bytes": c.n_bytes, "estimated_tokens": c.tokens} for c in costs],
    )
