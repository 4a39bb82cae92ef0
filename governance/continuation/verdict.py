"""The verdict the seven continuation checks (``checks``) add up to.

A verdict says whether two results for one capsule agree, and nothing more:
its scope is semantic agreement, it grants no authority, and each operational
claim (identity, fresh workspace, no prior context) names who stands behind it.
Only a run that kept invocation evidence may mark a claim ``runner_observed``,
and only when the runner saw both agents start in fresh workspaces and leave
them unchanged; the verdict then says in words what exactly was observed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from governance.continuation import citations, prompt
from governance.continuation.checks import PASS, Check, Submission, run_checks
from governance.core.hashing import sha256_hex
from governance.core.reader import CapsuleFile

VERDICT_SCHEMA = "continuation-verdict/1"


SCOPE = "semantic_agreement"
AUTHORITY = "none"
AGENT_REPORTED = "agent_reported"
RUNNER_OBSERVED = "runner_observed"
RUNNER_ENFORCED = "runner_enforced"
UNATTESTED = "unattested"


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


def slot_name(index: int) -> str:
    return chr(ord("a") + index) if index < 26 else f"r{index + 1}"


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
    checks, valid = run_checks(capsule, submissions)
    return Verdict(
        capsule=capsule,
        capsule_path=capsule_path,
        submissions=tuple(submissions),
        valid=valid,
        checks=checks,
        attestation=attestation,
    )
