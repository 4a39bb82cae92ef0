"""The capsule policy (``policies/capsule.yml``), read from the build commit."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from governance.core.capsule import POLICY_PATH
from governance.core.schema import validate
from governance.errors import PACKET_MALFORMED, POLICY_MALFORMED, CapsuleError, MalformedInput

if TYPE_CHECKING:
    from governance.core.repository import Source
    from governance.core.snapshot import Snapshot

ESTIMATOR = "utf8_bytes_div_3_ceil"
# A policy is a handful of numbers; its size is checked from the object header.
MAX_POLICY_BYTES = 64 << 10
# The largest source a ``#heading`` read may parse (whole-file reads are bounded
# by the budget instead). A policy without the key, old ones included, gets this.
DEFAULT_MAX_HEADING_SOURCE_BYTES = 4 << 20
# The most heading lines (headings.heading_lines) a source of a ``#heading``
# read may have: work after the parse grows with the headings, and a 4 MiB
# file holds a million. The largest real documents measured have under a
# thousand (docs/format.md).
DEFAULT_MAX_HEADING_COUNT = 10_000
# The values a capsule/1 ``policy`` object records. Keys added to the policy
# later are bound by the policy's blob and sha256 only: writing them into the
# capsule would change the bytes of every capsule, old records included.
CAPSULE_V1_KEYS = (
    "target_tokens",
    "hard_limit_tokens",
    "reserve_tokens",
    "max_required_reads",
    "estimator",
)


@dataclass(frozen=True)
class Policy:
    target_tokens: int = 12000
    hard_limit_tokens: int = 16000
    reserve_tokens: int = 1500
    max_required_reads: int = 8
    estimator: str = ESTIMATOR
    max_heading_source_bytes: int = DEFAULT_MAX_HEADING_SOURCE_BYTES
    max_heading_count: int = DEFAULT_MAX_HEADING_COUNT

    def values(self) -> dict[str, Any]:
        """What a capsule/1 records of this policy (``CAPSULE_V1_KEYS``)."""
        return {key: getattr(self, key) for key in CAPSULE_V1_KEYS}


# A line of a policy as `capsule init` writes one: blank, a comment, or a key
# at column 0, a colon, spaces, then a plain decimal integer or a lower-case
# word, and perhaps a comment after a space; printable ASCII only (no tab, no
# CR, none of YAML's other line breaks).
_PLAIN_LINE = re.compile(
    r" *(?:#[ -~]*)?"
    r"|(?P<key>[a-z_]+): +(?P<value>-?(?:0|[1-9][0-9]*)|[a-z][a-z0-9_]*)(?: +#[ -~]*)? *"
)
# Lower-case words YAML reads as something other than a string.
_YAML_WORDS = frozenset({"yes", "no", "true", "false", "on", "off", "null"})
_POLICY_KEYS = frozenset(field.name for field in fields(Policy))


def _plain_policy(text: str) -> dict[str, Any] | None:
    """What the strict YAML loader gives ``text`` when every line is a plain
    one (``_PLAIN_LINE``) and no key repeats: integers for the decimal
    values, strings for the words, an empty mapping for no entry. None for
    any other text, which the loader itself reads (and refuses or not): a
    test holds the two equal, so skipping PyYAML here loosens nothing."""
    data: dict[str, Any] = {}
    for line in text.split("\n"):
        found = _PLAIN_LINE.fullmatch(line)
        if found is None:
            return None
        key, value = found.group("key", "value")
        if key is None:
            continue
        if key not in _POLICY_KEYS or key in data or value in _YAML_WORDS:
            return None
        data[key] = value if value[0].isalpha() else int(value)
    return data


def parse_policy(text: str, *, path: str = POLICY_PATH) -> Policy:
    data = _plain_policy(text)
    if data is None:
        # Imported here: a plain policy (outline's heading limits, every build's)
        # needs no YAML parser.
        from governance.core.yamlload import load_yaml  # noqa: PLC0415 (defers PyYAML)

        data = load_yaml(text, path=path, code=POLICY_MALFORMED)
    if data is None:
        data = {}
    validate(data, "policy", what=path, code=POLICY_MALFORMED)
    policy = Policy(**data)
    if policy.reserve_tokens >= policy.hard_limit_tokens:
        raise MalformedInput(
            f"{path}: reserve_tokens ({policy.reserve_tokens}) must be below "
            f"hard_limit_tokens ({policy.hard_limit_tokens})",
            code=POLICY_MALFORMED,
            path=path,
        )
    if policy.target_tokens + policy.reserve_tokens > policy.hard_limit_tokens:
        raise MalformedInput(
            f"{path}: target_tokens ({policy.target_tokens}) plus reserve_tokens "
            f"({policy.reserve_tokens}) exceed hard_limit_tokens ({policy.hard_limit_tokens}): "
            "no capsule could meet that target",
            code=POLICY_MALFORMED,
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
            code=PACKET_MALFORMED,
            path=path,
        )


@dataclass(frozen=True)
class HeadingLimits:
    """What a source of a heading read may hold: bytes (``max_heading_source_bytes``)
    and heading lines (``max_heading_count``)."""

    source_bytes: int = DEFAULT_MAX_HEADING_SOURCE_BYTES
    headings: int = DEFAULT_MAX_HEADING_COUNT


def heading_limits(snapshot: Snapshot) -> HeadingLimits:
    """The policy's heading limits at ``snapshot``; the defaults when there is
    no policy or it cannot be read (what reads the policy itself reports why)."""
    try:
        source = snapshot.source(POLICY_PATH)
        if snapshot.size(source) > MAX_POLICY_BYTES:
            return HeadingLimits()
        return snapshot.memo("policy-heading-limits", source, lambda: _limits(snapshot, source))
    except (CapsuleError, UnicodeDecodeError):
        return HeadingLimits()


def _limits(snapshot: Snapshot, source: Source) -> HeadingLimits:
    policy = parse_policy(snapshot.read(source).decode("utf-8"), path=POLICY_PATH)
    return HeadingLimits(policy.max_heading_source_bytes, policy.max_heading_count)
