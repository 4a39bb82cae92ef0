"""The seven continuation checks and the verdict they add up to.

A verdict says whether two results for one capsule agree, and nothing more:
its scope is semantic agreement, it grants no authority, and each operational
claim (identity, fresh workspace, no prior context) names who stands behind it.
Only a run that kept invocation evidence may mark a claim ``runner_observed``,
and only when the runner saw both agents start in fresh workspaces and leave
them unchanged; the verdict then says in words what exactly was observed.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from governance.continuation import citations, prompt
from governance.continuation.result import parse_result
from governance.core.hashing import sha256_hex
from governance.core.reader import CapsuleFile
from governance.core.schema import validate as schema_validate
from governance.core.words import listed
from governance.errors import MalformedInput

RESULT_SCHEMA = "continuation-result/1"
# Both versions are read; a result names its own (an unknown one is judged by /1's).
RESULT_SCHEMAS = {
    "continuation-result/1": "continuation-result-1",
    "continuation-result/2": "continuation-result-2",
}
VERDICT_SCHEMA = "continuation-verdict/1"


SCOPE = "semantic_agreement"
AUTHORITY = "none"
AGENT_REPORTED = "agent_reported"
RUNNER_OBSERVED = "runner_observed"
RUNNER_ENFORCED = "runner_enforced"
UNATTESTED = "unattested"

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
class Attestation:
    """What a runner that kept evidence observed: the evidence file's hash,
    plain-words notes of what was seen (and what was not), and whether both
    agents started in fresh workspaces that they left unchanged."""

    evidence_sha256: str
    observed: tuple[str, ...]
    workspaces_observed: bool
    # Both agents started with the prompt in their prompt file, unchanged after.
    prompt_delivered: bool = False
    # Both agents ran isolated in namespaces, each with a network namespace of
    # its own: no view of the repository, HOME, the other agent or the runner,
    # and no channel to the other agent or the host's services.
    isolation_enforced: bool = False


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
class Verdict:
    capsule: CapsuleFile
    capsule_path: str
    submissions: tuple[Submission, ...]
    valid: Mapping[str, dict[str, Any]]
    checks: tuple[Check, ...]
    attestation: Attestation | None = None
    prompt_sha256: str = field(default_factory=prompt.sha256)

    @property
    def agreement(self) -> bool:
        return all(check.outcome == PASS for check in self.checks)

    @property
    def decision(self) -> str | None:
        if not self.agreement:
            return None
        return str(next(iter(self.valid.values()))["decision"])

    @property
    def evidence_sha256(self) -> str | None:
        return None if self.attestation is None else self.attestation.evidence_sha256

    @property
    def observed_claim(self) -> str:
        """Who stands behind the fresh-workspace and no-prior-context claims:
        the runner's isolation, the runner's observation, or only the agents."""
        if self.attestation is not None and self.attestation.workspaces_observed:
            return RUNNER_ENFORCED if self.attestation.isolation_enforced else RUNNER_OBSERVED
        return AGENT_REPORTED

    @property
    def prompt_claim(self) -> str:
        """Who stands behind "each agent was given this prompt": the runner, when
        it delivered the prompt and kept the evidence; else only the agents."""
        if self.attestation is not None and self.attestation.prompt_delivered:
            return RUNNER_OBSERVED
        return AGENT_REPORTED

    def to_json(self) -> dict[str, Any]:
        execution: dict[str, Any] = {"status": UNATTESTED}
        if self.attestation is not None:
            execution = {
                "status": RUNNER_OBSERVED,
                "evidence_sha256": self.attestation.evidence_sha256,
                "observed": list(self.attestation.observed),
            }
        return {
            "schema": VERDICT_SCHEMA,
            "scope": SCOPE,
            "authority": AUTHORITY,
            "agreement": self.agreement,
            "decision": self.decision,
            "capsule": {
                "path": self.capsule_path,
                "sha256": self.capsule.sha256,
                "id": self.capsule.document["id"],
                "commit": self.capsule.commit,
            },
            "prompt": {"version": prompt.VERSION, "sha256": self.prompt_sha256},
            "results": [
                {
                    "slot": s.slot,
                    "source": s.source,
                    "sha256": None if s.data is None else sha256_hex(s.data),
                    "result": self.valid.get(s.slot),
                }
                for s in self.submissions
            ],
            "checks": [check.to_json() for check in self.checks],
            "claims": {
                "identity": AGENT_REPORTED,
                "fresh_workspace": self.observed_claim,
                "no_prior_context": self.observed_claim,
                "prompt": self.prompt_claim,
            },
            "execution": execution,
        }


def citable_parts(capsule: CapsuleFile) -> tuple[str, ...]:
    """Every locator a result may cite (``citations.parts``), in capsule order."""
    return tuple(citations.parts(capsule))


def _versions(valid: Mapping[str, dict[str, Any]]) -> str:
    # "continuation-result/1", or "continuation-result/1 and /2" for a mixed pair.
    found = sorted({str(value["schema"]) for value in valid.values()}) or [RESULT_SCHEMA]
    return found[0] + "".join(f" and /{v.rsplit('/', 1)[1]}" for v in found[1:])


def slot_name(index: int) -> str:
    return chr(ord("a") + index) if index < 26 else f"r{index + 1}"


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


def evaluate(
    capsule: CapsuleFile,
    capsule_path: str,
    submissions: Sequence[Submission],
    *,
    attestation: Attestation | None = None,
) -> Verdict:
    """Run checks (1)-(7) over ``submissions`` for ``capsule``.

    The capsule has already passed the reader's pre-checks (canonical bytes,
    schema, internal hashes, budget): a capsule that fails them is malformed
    input, not a disagreement, and never reaches this function.
    """
    # (1) Exactly two results, each one JSON object from an agent that behaved.
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
    sources = ", ".join(f"{s.slot} from {s.source}" for s in submissions)
    checks = [
        Check(1, CHECK_NAMES[0], FAIL, "; ".join(problems))
        if problems
        else Check(1, CHECK_NAMES[0], PASS, f"two results, each one JSON object: {sources}")
    ]
    pair = not problems

    # (2) Each is valid against the closed continuation-result/1 schema.
    valid: dict[str, dict[str, Any]] = {}
    invalid: list[str] = []
    for slot, value in objects.items():
        try:
            name = RESULT_SCHEMAS.get(str(value.get("schema")), "continuation-result-1")
            schema_validate(value, name, what=f"result {slot}", code="result_invalid")
        except MalformedInput as exc:
            invalid.append(_schema_reason(slot, exc))
        else:
            valid[slot] = value
    checks.append(
        _scoped(2, valid, pair, invalid, f"both results are valid {_versions(valid)} documents")
    )
    complete = pair and len(valid) == 2

    # (3) The claimed identities are distinct.
    check = _pairwise(3, valid)
    if check is None:
        by_identity: dict[str, list[str]] = {}
        for slot, value in valid.items():
            by_identity.setdefault(_identity(value["agent"]["id"]), []).append(slot)
        same = [
            f"{' and '.join(slots)} claim the same identity "
            f"{_quote(valid[slots[0]]['agent']['id'])}"
            for slots in by_identity.values()
            if len(slots) > 1
        ]
        ids = ", ".join(f"{slot} is {_quote(v['agent']['id'])}" for slot, v in valid.items())
        check = _scoped(3, valid, complete, same, f"distinct agent-reported identities: {ids}")
    checks.append(check)

    # (4) Both claim to have had no prior context.
    checks.append(
        _scoped(
            4,
            valid,
            complete,
            (
                f"{slot} claims prior_context: true; a fresh agent has seen nothing but the capsule"
                for slot, value in valid.items()
                if value["prior_context"] is not False
            ),
            "both claim prior_context: false",
        )
    )

    # (5) Both bind this exact capsule (which passed verify's pre-checks).
    checks.append(
        _scoped(
            5,
            valid,
            complete,
            (
                f"{slot} binds capsule_sha256 {value['capsule_sha256']}, but this capsule's "
                f"is {capsule.sha256}"
                for slot, value in valid.items()
                if value["capsule_sha256"] != capsule.sha256
            ),
            f"the capsule passes verify's pre-checks and both results bind its sha256 "
            f"{capsule.sha256}",
        )
    )

    # (6) Every citation names a part of this capsule; every quote is in its lines.
    cited = citations.judge(capsule, valid, shown=_quote, listing=_listing)
    held = citations.held(len(citations.parts(capsule)), cited.quotes)
    checks.append(_scoped(6, valid, complete, cited.violations, held))

    # (7) The decisions agree.
    check = _pairwise(7, valid)
    if check is None:
        decisions = {slot: value["decision"] for slot, value in valid.items()}
        said = ", ".join(f"{slot} decides {decision}" for slot, decision in decisions.items())
        if len(set(decisions.values())) > 1:
            check = Check(7, CHECK_NAMES[6], FAIL, f"the decisions differ: {said}")
        elif complete:
            agreed = next(iter(decisions.values()))
            check = Check(7, CHECK_NAMES[6], PASS, f"both decide {agreed}")
        else:
            check = Check(
                7, CHECK_NAMES[6], SKIPPED, f"{said}, but there is no complete valid pair"
            )
    checks.append(check)

    return Verdict(
        capsule=capsule,
        capsule_path=capsule_path,
        submissions=tuple(submissions),
        valid=valid,
        checks=tuple(checks),
        attestation=attestation,
    )
