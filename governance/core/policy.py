"""The capsule policy (``policies/capsule.yml``), read from the build commit."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from governance.core.capsule import POLICY_PATH
from governance.core.schema import validate
from governance.core.yamlload import load_yaml
from governance.errors import MalformedInput

ESTIMATOR = "utf8_bytes_div_3_ceil"


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
    return policy
