"""capsule/1's limits are the ADR's: a policy may tighten each, loosen none.

ADR-022 closes the initial policy: a target of at most 12,000 estimated
tokens, a hard limit of at most 16,000, a reserve of at least 1,500, at most
eight required reads, and the one estimator (UTF-8 bytes / 3, rounded up,
which the policy schema already fixes). A packet's own ``budget.target_tokens``
is a target too. Anything looser is ``loosens_adr_limit`` (exit 2), naming
every number it loosens and the ADR's limit for it. Replay judges a record
made before this rule by the rules it was built under (``history/pre_adr``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from governance.core.capsule import POLICY_PATH
from governance.errors import LOOSENS_ADR_LIMIT, MalformedInput

if TYPE_CHECKING:
    from governance.core.policy import Policy

ADR = "ADR-022"
MAX_TARGET_TOKENS = 12000
MAX_HARD_LIMIT_TOKENS = 16000
MIN_RESERVE_TOKENS = 1500
MAX_REQUIRED_READS = 8


def loosened(policy: Policy) -> list[str]:
    """Each number of ``policy`` looser than the ADR's, said with its limit."""
    found = []
    if policy.target_tokens > MAX_TARGET_TOKENS:
        found.append(f"target_tokens {policy.target_tokens} (at most {MAX_TARGET_TOKENS})")
    if policy.hard_limit_tokens > MAX_HARD_LIMIT_TOKENS:
        found.append(
            f"hard_limit_tokens {policy.hard_limit_tokens} (at most {MAX_HARD_LIMIT_TOKENS})"
        )
    if policy.reserve_tokens < MIN_RESERVE_TOKENS:
        found.append(f"reserve_tokens {policy.reserve_tokens} (at least {MIN_RESERVE_TOKENS})")
    if policy.max_required_reads > MAX_REQUIRED_READS:
        found.append(
            f"max_required_reads {policy.max_required_reads} (at most {MAX_REQUIRED_READS})"
        )
    return found


def check_policy(policy: Policy, *, path: str = POLICY_PATH) -> None:
    """``loosens_adr_limit`` when any number of ``policy`` loosens the ADR's."""
    found = loosened(policy)
    if found:
        raise MalformedInput(
            f"{path}: loosens the limits of {ADR} that capsule/1 enforces: "
            f"{'; '.join(found)}; a policy may tighten them, never loosen them",
            code=LOOSENS_ADR_LIMIT,
            path=path,
            loosened=found,
        )


def check_packet_target(target: int, *, path: str) -> None:
    """``loosens_adr_limit`` when a packet's own target exceeds the ADR's."""
    if target > MAX_TARGET_TOKENS:
        raise MalformedInput(
            f"{path}: budget.target_tokens ({target}) loosens the target of {ADR} "
            f"(at most {MAX_TARGET_TOKENS}); a packet may tighten it, never loosen it",
            code=LOOSENS_ADR_LIMIT,
            path=path,
            loosened=[f"budget.target_tokens {target} (at most {MAX_TARGET_TOKENS})"],
        )
