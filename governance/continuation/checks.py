"""The seven continuation checks, one function each, and what they judge.

Each check passes, fails or is skipped (with the reason) over the two
results an evaluation is given; ``verdict`` adds them up. Reasons quote
agent-written strings, cut to a readable length.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from governance.continuation import citations
from governance.continuation.result import parse_result
from governance.core.reader import CapsuleFile
from governance.core.schema import validate as schema_validate
from governance.core.words import listed
from governance.errors import RESULT_INVALID, MalformedInput

RESULT_SCHEMA = "continuation-result/1"
# Both versions are read; a result names its own (an unknown one is judged by /1's).
RESULT_SCHEMAS = {
    "continuation-result/1": "continuation-result-1",
    "continuation-result/2": "continuation-result-2",
}
PASS = "pass"
FAIL = "fail"
SKIPPED = "skipped"

CHECK_NAMES = (
    "two_results",
    "schema_valid",
    "distinct_identities",
    "no_prior_context",
    "capsule_bound",
    "citations_in_capsule",
    "decisions_agree",
)

# Reasons quote agent-written strings; keep them readable when an agent floods.
_MAX_LISTED = 5
_MAX_QUOTED = 80
_MAX_REASON = 500

# The result schema forbids these keys with {"not": {}}; say so plainly.
_EXCLUSIVE = {
    "$.blockers": "blockers are not allowed when the decision is continue",
    "$.next_action": "next_action is not allowed when the decision is blocked",
}


@dataclass(frozen=True)
class Submission:
    """One slot's candidate result: the bytes it produced and, when the runner
    saw the agent misbehave (crash, timeout, written workspace), why it cannot
    count as a result."""

    slot: str
    source: str
    data: bytes | None
    problem: str | None = None


@dataclass(frozen=True)
class Check:
    number: int
    name: str
    outcome: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "name": self.name,
            "outcome": self.outcome,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Pair:
    """What checks (3) to (7) judge: the valid results, by slot, and whether
    they make a complete pair (two results, both valid)."""

    capsule: CapsuleFile
    valid: Mapping[str, dict[str, Any]]
    complete: bool


def run_checks(
    capsule: CapsuleFile, submissions: Sequence[Submission]
) -> tuple[tuple[Check, ...], dict[str, dict[str, Any]]]:
    """Checks (1)-(7), in order, and the valid results they judged, by slot."""
    first, objects = _two_results(submissions)
    pair = first.outcome == PASS
    second, valid = _schema_valid(objects, pair)
    judged = Pair(capsule, valid, pair and len(valid) == 2)
    rest = (
        _distinct_identities,
        _no_prior_context,
        _capsule_bound,
        _citations_in_capsule,
        _decisions_agree,
    )
    return (first, second, *(check(judged) for check in rest)), valid


def _two_results(submissions: Sequence[Submission]) -> tuple[Check, dict[str, dict[str, Any]]]:
    """(1) Exactly two results, each one JSON object from an agent that behaved;
    and the objects parsed, by slot."""
    objects: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    if len(submissions) != 2:
        problems.append(f"{len(submissions)} results given; exactly two are required")
    for s in submissions:
        if s.problem is not None:
            problems.append(f"{s.slot} ({s.source}): {s.problem}")
            continue
        try:
            objects[s.slot] = parse_result(s.data or b"")
        except ValueError as exc:
            problems.append(f"{s.slot} ({s.source}): not one JSON object: {exc}")
    if problems:
        return Check(1, CHECK_NAMES[0], FAIL, "; ".join(problems)), objects
    sources = ", ".join(f"{s.slot} from {s.source}" for s in submissions)
    return Check(1, CHECK_NAMES[0], PASS, f"two results, each one JSON object: {sources}"), objects


def _schema_valid(
    objects: Mapping[str, dict[str, Any]], pair: bool
) -> tuple[Check, dict[str, dict[str, Any]]]:
    """(2) Each is valid against the closed schema of its version; and the
    valid ones, by slot."""
    valid: dict[str, dict[str, Any]] = {}
    invalid: list[str] = []
    for slot, value in objects.items():
        try:
            name = RESULT_SCHEMAS.get(str(value.get("schema")), "continuation-result-1")
            schema_validate(value, name, what=f"result {slot}", code=RESULT_INVALID)
        except MalformedInput as exc:
            invalid.append(_schema_reason(slot, exc))
        else:
            valid[slot] = value
    held = f"both results are valid {_versions(valid)} documents"
    return _scoped(2, valid, pair, invalid, held), valid


def _distinct_identities(judged: Pair) -> Check:
    """(3) The claimed identities are distinct."""
    valid = judged.valid
    check = _pairwise(3, valid)
    if check is not None:
        return check
    by_identity: dict[str, list[str]] = {}
    for slot, value in valid.items():
        by_identity.setdefault(_identity(value["agent"]["id"]), []).append(slot)
    same = [
        f"{' and '.join(slots)} claim the same identity {_quote(valid[slots[0]]['agent']['id'])}"
        for slots in by_identity.values()
        if len(slots) > 1
    ]
    ids = ", ".join(f"{slot} is {_quote(v['agent']['id'])}" for slot, v in valid.items())
    return _scoped(3, valid, judged.complete, same, f"distinct agent-reported identities: {ids}")


def _no_prior_context(judged: Pair) -> Check:
    """(4) Both claim to have had no prior context."""
    claimed = (
        f"{slot} claims prior_context: true; a fresh agent has seen nothing but the capsule"
        for slot, value in judged.valid.items()
        if value["prior_context"] is not False
    )
    return _scoped(4, judged.valid, judged.complete, claimed, "both claim prior_context: false")


def _capsule_bound(judged: Pair) -> Check:
    """(5) Both bind this exact capsule (which passed verify's pre-checks)."""
    sha256 = judged.capsule.sha256
    other = (
        f"{slot} binds capsule_sha256 {value['capsule_sha256']}, but this capsule's is {sha256}"
        for slot, value in judged.valid.items()
        if value["capsule_sha256"] != sha256
    )
    held = f"the capsule passes verify's pre-checks and both results bind its sha256 {sha256}"
    return _scoped(5, judged.valid, judged.complete, other, held)


def _citations_in_capsule(judged: Pair) -> Check:
    """(6) Every citation names a part of this capsule; every quote is in its lines."""
    cited = citations.judge(judged.capsule, judged.valid, shown=_quote, listing=_listing)
    held = citations.held(len(citations.parts(judged.capsule)), cited.quotes)
    return _scoped(6, judged.valid, judged.complete, cited.violations, held)


def _decisions_agree(judged: Pair) -> Check:
    """(7) The decisions agree."""
    check = _pairwise(7, judged.valid)
    if check is not None:
        return check
    decisions = {slot: value["decision"] for slot, value in judged.valid.items()}
    said = ", ".join(f"{slot} decides {decision}" for slot, decision in decisions.items())
    if len(set(decisions.values())) > 1:
        return Check(7, CHECK_NAMES[6], FAIL, f"the decisions differ: {said}")
    if judged.complete:
        return Check(7, CHECK_NAMES[6], PASS, f"both decide {next(iter(decisions.values()))}")
    return Check(7, CHECK_NAMES[6], SKIPPED, f"{said}, but there is no complete valid pair")


def _versions(valid: Mapping[str, dict[str, Any]]) -> str:
    # "continuation-result/1", or "continuation-result/1 and /2" for a mixed pair.
    found = sorted({str(value["schema"]) for value in valid.values()}) or [RESULT_SCHEMA]
    return found[0] + "".join(f" and /{v.rsplit('/', 1)[1]}" for v in found[1:])


def _quote(text: str) -> str:
    if len(text) > _MAX_QUOTED:
        text = text[: _MAX_QUOTED - 1] + "…"
    return repr(text)


def _listing(items: Sequence[str]) -> str:
    return listed(items, _MAX_LISTED)


def _schema_reason(slot: str, exc: MalformedInput) -> str:
    where = str(exc.details.get("where", ""))
    if where in _EXCLUSIVE and exc.message.endswith("should not be valid under {}"):
        return f"result {slot}: {where}: {_EXCLUSIVE[where]}"
    # A schema message quotes the offending value, which an agent controls.
    if len(exc.message) > _MAX_REASON:
        return exc.message[: _MAX_REASON - 1] + "…"
    return exc.message


def _identity(agent_id: str) -> str:
    # Two spellings of one name are one identity.
    return unicodedata.normalize("NFKC", agent_id).strip().casefold()


def _scoped(
    number: int,
    valid: Mapping[str, dict[str, Any]],
    complete: bool,
    violations: Iterable[str],
    held: str,
) -> Check:
    """A per-result check: fails on any violation, passes only when it held
    for a complete pair, and is otherwise skipped (with what did hold)."""
    name = CHECK_NAMES[number - 1]
    found = list(violations)
    if found:
        return Check(number, name, FAIL, "; ".join(found))
    if complete:
        return Check(number, name, PASS, held)
    if not valid:
        return Check(number, name, SKIPPED, "no valid result to check")
    slots = ", ".join(valid)
    return Check(number, name, SKIPPED, f"held for {slots}, but there is no complete valid pair")


def _pairwise(number: int, valid: Mapping[str, dict[str, Any]]) -> Check | None:
    if len(valid) < 2:
        name = CHECK_NAMES[number - 1]
        have = ", ".join(valid) or "none"
        return Check(number, name, SKIPPED, f"needs two valid results (valid: {have})")
    return None
