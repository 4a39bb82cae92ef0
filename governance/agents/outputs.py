"""The MCP tools' declared output schemas: closed pydantic models of the JSON
the commands print (part of the ``mcp`` extra: pydantic comes with the SDK)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PacketEntry(_Closed):
    id: str
    path: str


class ListPacketsOut(_Closed):
    at: str = Field(description="the HEAD commit listed")
    packets: list[PacketEntry]


class ExactTokens(_Closed):
    encoding: str
    count: int | None = Field(description="null when the tokens extra is not installed")
    unavailable: str | None = None


class RecordOut(_Closed):
    path: str
    status: str


class SecretScan(_Closed):
    scanned: bool = Field(
        description="false when the secrets extra is not installed: nothing was scanned"
    )
    detector: str
    version: str | None
    plugins: list[str] = Field(description="the detect-secrets plugins that ran")
    unavailable: str | None = Field(description="why nothing was scanned, when it was not")
    waived: list[dict[str, Any]] = Field(
        description="hits that policies/secret-waivers.yml waives: part, path, blob, line, "
        "kind, waiver, reason (never the secret)"
    )


class BuildOut(_Closed):
    id: str
    commit: str
    sha256: str = Field(description="SHA-256 of capsule_json's UTF-8 bytes: the capsule's identity")
    reads: int
    bytes: int
    estimated_tokens: int = Field(description="ceil(bytes / 3): the estimate the budget gates on")
    exact_tokens: ExactTokens | None = Field(description="null unless asked for (exact_tokens)")
    target_tokens: int
    hard_limit_tokens: int
    reserve_tokens: int
    capsule_json: str = Field(description="the capsule's exact canonical JSON text")
    text: str = Field(description="what the text content holds: json or markdown (render)")
    record: RecordOut | None
    warnings: list[dict[str, Any]] = Field(description="reads_overlap and the like; never a gate")
    secret_scan: SecretScan = Field(
        description="the secret scan every part passed before the capsule was made"
    )


class CapsuleRef(_Closed):
    path: str = Field(description="the file read, or (argument)")
    sha256: str
    id: str
    commit: str


class PartOut(_Closed):
    part: str
    locator: str
    status: str
    code: str
    message: str
    current: dict[str, Any]


class SignatureOut(_Closed):
    record: str = Field(description="the record path these bytes belong at")
    status: str = Field(
        description="signed, unsigned, bad_signature, unknown_signer, signer_expired, "
        "signer_revoked, signature_backdated; error when the check could not run (code)"
    )
    code: str | None = Field(description="an error's code (signers_malformed, ...), else null")
    message: str
    principal: str | None = Field(description="who signed, when signed or known")
    key: str | None = Field(description="the signing key's SHA256 fingerprint")
    signature_introduced: str | None = Field(description="the commit that brought the .sig in")
    trusted: str = Field(description="HEAD: the commit whose allowed signers were used")


_SIGNATURE = (
    "the signature status of these exact bytes as the record committed at HEAD, by the rules "
    "of audit --require-signatures at HEAD; null when HEAD has no policies/allowed_signers"
)


class VerifyOut(_Closed):
    capsule: CapsuleRef
    at: str
    ok: bool
    parts: list[PartOut]
    signature: SignatureOut | None = Field(description=_SIGNATURE)


class StatusCounts(_Closed):
    found: int = Field(description="records committed at HEAD")
    verified: int = Field(description="records listed: each packet's newest, or all")
    unchanged: int
    intact: int
    stale: int
    missing: int
    error: int


class RecordStatusOut(_Closed):
    path: str
    packet: str = Field(description="the packet folder the record lives in")
    status: str = Field(description="unchanged, intact, stale, missing (its worst part's) or error")
    blob: str | None
    sha256: str | None
    commit: str | None = Field(description="the commit the record was built at")
    reachable: bool | None = Field(description="its commit is in HEAD's history")
    declared_commit: dict[str, Any] | None
    counts: dict[str, int] | None = Field(description="parts per status")
    changed: list[PartOut] = Field(description="every part that is not unchanged")
    code: str | None = Field(description="an error row's code (null otherwise)")
    message: str | None


class StatusOut(_Closed):
    at: str | None = Field(description="the HEAD commit verified against (null: no commits)")
    all: bool
    ok: bool = Field(description="no record listed is stale, missing or in error")
    counts: StatusCounts
    records: list[RecordStatusOut]


class DifferenceOut(_Closed):
    path: str
    recorded_sha256: str
    rebuilt_sha256: str


class ReplayOut(_Closed):
    capsule: CapsuleRef
    identical: bool
    rebuilt_sha256: str
    differences: list[DifferenceOut]
    signature: SignatureOut | None = Field(description=_SIGNATURE)


class DependencyRecord(_Closed):
    path: str
    commit: str | None
    status: str = Field(description="unchanged, intact, stale, missing or error (capsule_status)")
    current: bool = Field(description="unchanged or intact; a stale record is no failure")


class DependencyOut(_Closed):
    id: str
    path: str = Field(description="its packets/<ID>/packet.yml")
    exists: bool = Field(description="false: dependency_missing is among the failures")
    record: DependencyRecord | None = Field(description="its newest record; null: none")


class CheckedPacket(_Closed):
    path: str
    ok: bool
    failures: list[dict[str, Any]]
    secrets_waived: list[dict[str, Any]] = Field(
        description="secret-scan hits policies/secret-waivers.yml waives (never the secret)"
    )
    dependencies: list[DependencyOut] = Field(
        description="each id of the packet's dependencies, with its newest record"
    )


class CheckOut(_Closed):
    at: str
    ok: bool
    exit_code: int
    secret_scan: dict[str, Any] | None = Field(
        description="the secret scan's detector: scanned (false without the secrets extra), "
        "detector, version, plugins, unavailable; null when no packet got that far"
    )
    packets: list[CheckedPacket]


class OutlineHeading(_Closed):
    level: int
    text: str
    slug: str
    locator: str
    lines: list[int]
    bytes: int
    estimated_tokens: int
    depth: int
    parent: int | None


class OutlineOut(_Closed):
    path: str
    commit: str
    blob: str
    bytes: int
    estimated_tokens: int
    lines: int
    headings: list[OutlineHeading]


class SuggestedRead(_Closed):
    locator: str
    path: str
    heading: str | None
    lines: list[int]
    bytes: int
    estimated_tokens: int
    facets: list[str] = Field(description="the goal's facets this read covers")
    score: float


class SuggestOut(_Closed):
    algorithm: str
    stopwords: str
    goal: str
    commit: str
    facets: list[dict[str, Any]]
    reads: list[SuggestedRead] = Field(description="the proposed required_reads, in order")
    coverage: dict[str, Any]
    omissions: dict[str, Any]
    corpus: dict[str, Any]
    limits: dict[str, int]
    capsule: dict[str, Any] = Field(description="the draft packet's capsule size, or its error")


class AuditRange(_Closed):
    spec: str
    tip: str | None
    hidden: str | None
    ends: list[dict[str, Any]]


class AuditShard(_Closed):
    index: int
    count: int
    blobs_in_range: int


class AuditOut(_Closed):
    range: AuditRange
    paths: list[str]
    shard: AuditShard
    jobs: int
    counts: dict[str, int]
    ok: bool = Field(description="no drift, no error and no unused waiver")
    results: list[dict[str, Any]] = Field(
        description="one row per record version: path, blob, introduced, commit, result "
        "(identical, drift, error or waived), code, message, differences, waiver"
    )
    waivers: list[dict[str, Any]]
    secret_scan: dict[str, Any] | None = Field(
        description="the detector that scanned each record replaying identically "
        "(record_secret: what it refuses today); scanned false without the secrets extra"
    )
