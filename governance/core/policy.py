"""The capsule policy (``policies/capsule.yml``), read from the build commit."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from governance.core.capsule import POLICY_PATH
from governance.core.schema import validate
from governance.core.yamlload import load_yaml
from governance.errors import MalformedInput

ESTIMATOR = "utf8_bytes_div_3_ceil"
# A policy is a handful of numbers; its size is checked from the object header.
MAX_POLICY_BYTES = 64 << 10


@dataclass(frozen=True)
class Policy:
    target_tokens: int = 12000
    hard_limit_tokens: int = 16000
    reserve_tokens: int = 1500
    max_required_reads: int = 8
    estimator: str = ESTIMATOR

    def values(self) -> dict[str, Any]:
        return asdict(self)


def parse_policy(text: str, *, path: str = POLICY_PATH) -> Policy:
    data = load_yaml(text, path=path, code="policy_malformed")
    if data is None:
        data = {}
    validate(data, "policy", what=path, code="policy_malformed")
    policy = Policy(**data)
    if policy.reserve_tokens >= policy.hard_limit_tokens:
        raise MalformedInput(
            f"{path}: reserve_tokens ({policy.reserve_tokens}) must be below "
            f"hard_limit_tokens ({policy.hard_limit_tokens})",
            code="policy_malformed",
            path=path,
        )
    if policy.target_tokens + policy.reserve_tokens > policy.hard_limit_tokens:
        raise MalformedInput(
            f"{path}: target_tokens ({policy.target_tokens}) plus reserve_tokens "
            f"({policy.reserve_tokens}) exceed hard_limit_tokens ({policy.hard_limit_tokens}): "
            "no capsule could meet that target",
            code="policy_malformed",
            path=path,
        )
    return policy


def check_packet_target(policy: Policy, target: int, *, path: str) -> None:
    """A packet's own target must fit the policy's hard limit less its reserve."""
    if target + policy.reserve_tokens > policy.hard_limit_tokens:
        raise MalformedInput(
            f"{path}: budget.target_tokens ({target}) plus the policy's reserve_tokens "
            f"({policy.reserve_tokens}) exceed its hard_limit_tokens "
            f"({policy.hard_limit_tokens}); the largest target this policy allows is "
            f"{policy.hard_limit_tokens - policy.reserve_tokens}",
            code="packet_malformed",
            path=path,
        )
