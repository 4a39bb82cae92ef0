"""The Context Graph Protocol's provider conformance checks, written again in
Python from the reference runner (``run_conformance`` of
``contextgraph-conformance``, stdio target), with its probes, its host id,
and its rules for pass, fail and skip, driving a provider through
``cgp_host.Host`` as the runner drives it through the reference host.

Run from ``tests/``: ``python -m support.cgp_conformance -- ARGV...`` prints
the table for the provider ``ARGV`` starts.
"""

from __future__ import annotations

import hashlib
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.cgp_host import FRAME_KINDS, Connection, Host, HostError, Provider

HOST_ID = "provider-under-test"
AS_OF_PIN = "2026-07-01T00:00:00Z"
MUTATED_SUFFIX = "-contextgraph-conformance-mutated"
CORRELATION_PROBE_ID = "cgp-conformance-h4-7f3a"
MALFORMED_LINE = "this is not valid json {{{\n"

PASS, FAIL, SKIPPED = "pass", "fail", "skipped"

HANDSHAKE = "handshake"
CONSENT_SCOPE = "consent-scope"
FRAME_VALIDITY = "frame-validity"
VERIFY_HONESTY = "verify-honesty"
BUDGET_HONESTY = "budget-honesty"
AS_OF = "as-of-temporal"
KINDS_FILTER = "kinds-filter"
ANCHOR_RELEVANCE = "anchor-relevance"
PROVENANCE = "provenance-fixture-consistency"
SHUTDOWN = "shutdown-clean"
MALFORMED = "malformed-input-tolerance"
EMBEDDING_FINGERPRINT = "embedding-fingerprint"
CORRELATION = "correlation"

CHECKS = (
    HANDSHAKE,
    CONSENT_SCOPE,
    FRAME_VALIDITY,
    VERIFY_HONESTY,
    BUDGET_HONESTY,
    AS_OF,
    KINDS_FILTER,
    ANCHOR_RELEVANCE,
    PROVENANCE,
    SHUTDOWN,
    MALFORMED,
    EMBEDDING_FINGERPRINT,
    CORRELATION,
)

# The evidence of the skips a provider earns by not declaring a capability.
NO_VERIFY = "provider does not advertise `verify`; a host falls back to re-querying its frames"
NO_GRAPH = "provider does not declare capabilities.graph, so G3/G4 do not bind it"
NO_FINGERPRINT = "provider declares no embeddings_fingerprint, so E1 has no dimension to contradict"
NO_CORRELATION = "provider does not declare capabilities.correlation, so H4 does not bind it"


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: str
    evidence: str


def _result(name: str, passed: bool, evidence: str) -> CheckResult:
    return CheckResult(name, PASS if passed else FAIL, evidence)


def sample_query() -> dict[str, Any]:
    """The query every provider is probed with, as the reference host puts it
    on the wire: empty and absent members are left out."""
    return {
        "goal": "conformance probe: return your most relevant frames",
        "query_text": "conformance probe",
        "max_frames": 8,
        "max_tokens": 4096,
    }


# --- field rules of the reference types -------------------------------------------

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?Z"
)

# What Rust's str::trim strips (Unicode White_Space), where Python's str.strip
# also strips the information separators U+001C-U+001F.
_WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
_WHITE_SPACE += "\u2028\u2029\u202f\u205f\u3000"


def is_blank(text: str) -> bool:
    """``text.trim().is_empty()`` as the reference types write it."""
    return not text.strip(_WHITE_SPACE)


def is_protocol_timestamp(text: str) -> bool:
    """The protocol's UTC profile, with real calendar days (F4)."""
    match = _TIMESTAMP.fullmatch(text)
    if not match:
        return False
    year, month, day, hour, minute, second = map(int, match.groups())
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    return 1 <= day <= days and hour <= 23 and minute <= 59 and second <= 60


def is_digest(text: Any) -> bool:
    return isinstance(text, str) and _DIGEST.fullmatch(text) is not None


def budget_tokens(content: str | None) -> int:
    return math.ceil(len((content or "").encode("utf-8")) / 4)


def _representation_problem(frame: dict[str, Any]) -> str | None:
    """P1-P3: how a frame carries its content, as it says it does."""
    has = {name for name, value in frame.items() if value is not None}
    representation = frame.get("representation") or "full"
    needed: tuple[str, ...]
    refused: tuple[str, ...]
    if representation == "full":
        needed, refused = ("content",), ()
    elif representation == "compact":
        needed = ("content", "content_digest", "canonical_content_hash", "transform")
        needed += ("content_ref",)
        refused = ()
    else:
        needed, refused = ("content_ref", "canonical_content_hash"), ("content", "content_digest")
        refused += ("transform",)
    for name in refused:
        if name in has:
            return f"{representation} frame must not carry {name}"
    for name in needed:
        if name not in has:
            return f"{representation} frame requires {name}"
    return None


def check_frames(result: dict[str, Any]) -> tuple[bool, str]:
    frames = result["frames"]
    if not frames:
        return True, "provider returned 0 frames (permitted: nothing relevant to the probe)"
    problems = []
    for i, frame in enumerate(frames):
        if not 0 <= frame["score"] <= 1:
            problems.append(f"frame[{i}] score {frame['score']} is outside [0,1]")
        if is_blank(frame["title"]):
            problems.append(f"frame[{i}] has an empty title")
        label = frame.get("citation_label")
        if not isinstance(label, str) or is_blank(label):
            problems.append(f"frame[{i}] is missing a citation_label (F3)")
        problem = _representation_problem(frame)
        if problem:
            problems.append(f"frame[{i}] {problem} (P1-P3)")
        for name in ("valid_from", "valid_to", "recorded_at"):
            value = frame.get(name)
            if value is not None and not is_protocol_timestamp(value):
                problems.append(f"frame[{i}] field `{name}` is not an RFC 3339 UTC timestamp (F4)")
        if frame.get("content_digest") is not None and not is_digest(frame["content_digest"]):
            problems.append(f"frame[{i}] content_digest is not `sha256:<64 lowercase hex>` (D1)")
        for index, provenance in enumerate(frame.get("provenance") or []):
            if provenance["type"] == "file" and not is_digest(provenance.get("digest")):
                problems.append(
                    f"frame[{i}] provenance[{index}] addresses a file but its digest is "
                    "missing or not `sha256:<64 lowercase hex>` (F5)"
                )
        for index, edge in enumerate(frame.get("relations") or []):
            if is_blank(edge.get("display_name") or ""):
                problems.append(f"frame[{i}] relation[{index}] has no display_name (G1)")
            if is_blank(edge["target_uri"]):
                problems.append(f"frame[{i}] relation[{index}] has an empty target_uri (G2)")
    if problems:
        return False, "; ".join(problems)
    return True, (
        f"{len(frames)} frame(s): scores in [0,1], titles, citation labels, honest "
        "representations, RFC 3339 timestamps, well-formed digests, labelled and targeted "
        "relations"
    )


def check_budget(result: dict[str, Any], query: dict[str, Any]) -> tuple[bool, str]:
    frames = result["frames"]
    problems = []
    declared = sum(frame["token_cost"] for frame in frames)
    if declared > query["max_tokens"]:
        budget = query["max_tokens"]
        problems.append(f"declared cost {declared} exceeds the budget of {budget} (B1)")
    dishonest = [f["id"] for f in frames if f["token_cost"] != budget_tokens(f.get("content"))]
    if dishonest:
        canonical = sum(budget_tokens(f.get("content")) for f in frames)
        problems.append(
            f"{len(dishonest)} frame(s) misdeclare token_cost: {', '.join(dishonest)} (B3); "
            f"declared total {declared}, canonical total {canonical}"
        )
    if len(frames) > query["max_frames"]:
        problems.append(f"returned {len(frames)} frames against max_frames={query['max_frames']}")
    if problems:
        return False, "; ".join(problems)
    return True, (
        f"{len(frames)} frame(s), {declared} tokens within the {query['max_tokens']} budget; "
        "every declared cost matches its canonical count"
    )


def check_consent_scopes(info: dict[str, Any]) -> CheckResult:
    flow = info["data_flow"]
    scopes = flow.get("egress_scopes") or []
    egress = flow.get("egress") is True

    def valid(scope: str) -> bool:
        if scope in ("local-only", "org-tenant", "third-party-index", "third-party-model"):
            return True
        namespace, colon, name = scope.partition(":")
        return bool(colon and namespace and name)

    off_machine = [scope for scope in scopes if scope != "local-only"]
    if all(valid(scope) for scope in scopes) and (egress or not off_machine):
        return CheckResult(
            CONSENT_SCOPE,
            PASS,
            f"declared egress scopes {scopes} are well-formed and consistent with egress={egress}",
        )
    return CheckResult(
        CONSENT_SCOPE,
        FAIL,
        f"egress scopes {scopes} are inconsistent with egress={egress}: an off-machine scope "
        "alongside egress=false, or a custom scope without a namespace (C5)",
    )


# --- the host-side re-read of file provenance (F5 bytes) ----------------------------


def _percent_decode(text: str) -> bytes:
    raw = text.encode("utf-8")
    out = bytearray()
    i = 0
    hexdigits = b"0123456789abcdefABCDEF"
    while i < len(raw):
        if raw[i] == ord("%") and i + 2 < len(raw):
            hi, lo = raw[i + 1], raw[i + 2]
            if hi in hexdigits and lo in hexdigits:
                out.append(int(bytes([hi, lo]), 16))
                i += 3
                continue
        out.append(raw[i])
        i += 1
    return bytes(out)


def _file_uri_path(uri: str) -> Path:
    if not uri.startswith("file://"):
        raise ValueError(f"provenance uri `{uri}` is not a `file://` uri")
    rest = uri.removeprefix("file://")
    slash = rest.find("/")
    if slash < 0:
        raise ValueError(f"`file://` uri `{uri}` has no absolute path")
    authority, path = rest[:slash], rest[slash:]
    if authority not in ("", "localhost"):
        raise ValueError(f"`file://` uri `{uri}` names a host that is not this one")
    return Path(_percent_decode(path).decode("utf-8", "surrogateescape"))


_LINE = re.compile(r"\+?[0-9]+")


def _line_range(data: bytes, spec: str) -> bytes:
    """``L<a>`` or ``L<a>-<b>``: 1-based, inclusive, each line with its LF; the
    end clamped to the last line."""
    digits = spec.removeprefix("L") if spec.startswith("L") else None
    if digits is None:
        raise ValueError(f"unsupported range `{spec}`")
    first, dash, last = digits.partition("-")
    if not _LINE.fullmatch(first) or (dash and not _LINE.fullmatch(last)):
        raise ValueError(f"unsupported range `{spec}`")
    start, end = int(first), int(last) if dash else int(first)
    if start == 0 or end < start:
        raise ValueError(f"range `{spec}` is empty or inverted")
    spans = []
    begin = 0
    for index, byte in enumerate(data):
        if byte == 0x0A:
            spans.append((begin, index + 1))
            begin = index + 1
    if begin < len(data):
        spans.append((begin, len(data)))
    if start > len(spans):
        raise ValueError(f"range `{spec}` starts at line {start}; there are {len(spans)}")
    end = min(end, len(spans))
    return data[spans[start - 1][0] : spans[end - 1][1]]


def verify_provenance(provenance: dict[str, Any]) -> tuple[str, str]:
    """("verified" | "mismatch" | "unreadable" | "not_file", detail)."""
    if provenance["type"] != "file":
        return "not_file", ""
    declared, uri = provenance.get("digest"), provenance.get("uri")
    if declared is None:
        return "unreadable", "file provenance carries no digest"
    if uri is None:
        return "unreadable", "file provenance carries no uri"
    try:
        path = _file_uri_path(uri)
        data = path.read_bytes()
        if provenance.get("range") is not None:
            data = _line_range(data, provenance["range"])
    except (OSError, ValueError) as exc:
        return "unreadable", str(exc)
    actual = "sha256:" + hashlib.sha256(data).hexdigest()
    if actual == declared:
        return "verified", ""
    return "mismatch", f"declared {declared} but its bytes hash to {actual}"


# --- the checks that run on the registered provider ---------------------------------


def check_verify_honesty(host: Host, caps: dict[str, Any], result: dict[str, Any]) -> CheckResult:
    if caps.get("verify") is not True:
        return CheckResult(VERIFY_HONESTY, SKIPPED, NO_VERIFY)
    held = [
        {"provider_id": HOST_ID, "frame_id": f["id"], "content_digest": f["content_digest"]}
        for f in result["frames"]
        if f.get("content_digest") is not None
    ]
    if not held:
        return CheckResult(
            VERIFY_HONESTY,
            SKIPPED,
            "provider served no frame carrying a `content_digest`, so nothing is verifiable",
        )
    unchanged = host.verify_frames(held)
    if unchanged.dropped:
        detail = ", ".join(f"{d.identity['frame_id']} => {d.reason}" for d in unchanged.dropped)
        return CheckResult(
            VERIFY_HONESTY,
            FAIL,
            f"provider advertises `verify` but did not answer `valid` for {len(unchanged.dropped)} "
            f"of {len(held)} frame(s) it had just served with unchanged digests: {detail}",
        )
    mutated = [{**h, "content_digest": h["content_digest"] + MUTATED_SUFFIX} for h in held]
    changed = host.verify_frames(mutated)
    if changed.retained:
        return CheckResult(
            VERIFY_HONESTY,
            FAIL,
            f"provider answered `valid` for {len(changed.retained)} frame(s) whose content digest "
            "it never served: a rubber stamp",
        )
    not_stale = [d for d in changed.dropped if d.reason != "stale"]
    if not_stale:
        detail = ", ".join(f"{d.identity['frame_id']} => {d.reason}" for d in not_stale)
        return CheckResult(
            VERIFY_HONESTY,
            FAIL,
            "a digest mismatch on a frame the provider still serves MUST verify `stale` (V1); "
            f"got: {detail}",
        )
    return CheckResult(
        VERIFY_HONESTY,
        PASS,
        f"provider verified {len(held)} unchanged frame(s) `valid` and all {len(held)} mutated "
        "digest(s) `stale`, carrying no frame bodies",
    )


def check_as_of(host: Host) -> CheckResult:
    try:
        result = host.query_provider(HOST_ID, {**sample_query(), "as_of": AS_OF_PIN})
    except HostError as exc:
        return CheckResult(AS_OF, FAIL, f"as_of query failed: {exc}")
    late = [
        f"{f['id']} (valid_from={f['valid_from']})"
        for f in result["frames"]
        if f.get("valid_from") is not None and f["valid_from"] > AS_OF_PIN
    ]
    if late:
        return CheckResult(
            AS_OF,
            FAIL,
            f"provider returned {len(late)} frame(s) whose valid_from is after as_of={AS_OF_PIN}: "
            + ", ".join(late),
        )
    return CheckResult(
        AS_OF,
        PASS,
        f"as_of={AS_OF_PIN}: none of the {len(result['frames'])} returned frame(s) is dated after "
        "the pin",
    )


def check_kinds_filter(host: Host, caps: dict[str, Any]) -> CheckResult:
    kinds = (caps.get("query") or {}).get("kinds") or []
    if not kinds:
        evidence = "provider declares no query kinds, so Q1 has no kind to narrow to"
        return CheckResult(KINDS_FILTER, SKIPPED, evidence)
    kind = kinds[0]
    if kind not in FRAME_KINDS:
        return CheckResult(
            KINDS_FILTER, SKIPPED, f"provider declares kind `{kind}`, outside the closed vocabulary"
        )
    try:
        result = host.query_provider(HOST_ID, {**sample_query(), "kinds": [kind]})
    except HostError as exc:
        return CheckResult(KINDS_FILTER, FAIL, f"kinds-filtered query failed: {exc}")
    off = [f"{f['id']} (kind={f['kind']})" for f in result["frames"] if f["kind"] != kind]
    if off:
        return CheckResult(
            KINDS_FILTER,
            FAIL,
            f"provider returned {len(off)} frame(s) outside kinds=[{kind}]: " + ", ".join(off),
        )
    return CheckResult(
        KINDS_FILTER,
        PASS,
        f"kinds=[{kind}]: all {len(result['frames'])} returned frame(s) are of the requested kind",
    )


def _anchored(frame: dict[str, Any], anchor: str) -> bool:
    return frame.get("uri") == anchor or any(
        edge["target_uri"] == anchor for edge in frame.get("relations") or []
    )


def check_anchor_relevance(host: Host, caps: dict[str, Any]) -> CheckResult:
    if caps.get("graph") is not True:
        return CheckResult(ANCHOR_RELEVANCE, SKIPPED, NO_GRAPH)
    try:
        baseline = host.query_provider(HOST_ID, sample_query())
    except HostError as exc:
        return CheckResult(ANCHOR_RELEVANCE, FAIL, f"baseline query failed: {exc}")
    # A one-hop anchor (a relation's target) first: it proves edges are walked.
    targets = [f["relations"][0]["target_uri"] for f in baseline["frames"] if f.get("relations")]
    uris = [f["uri"] for f in baseline["frames"] if f.get("uri") is not None]
    if not targets + uris:
        return CheckResult(
            ANCHOR_RELEVANCE,
            SKIPPED,
            "provider declares graph but served no frame carrying a uri or a relation target",
        )
    anchor = (targets + uris)[0]
    try:
        result = host.query_provider(HOST_ID, {**sample_query(), "anchors": [anchor]})
    except HostError as exc:
        return CheckResult(ANCHOR_RELEVANCE, FAIL, f"anchored query failed: {exc}")
    anchored = [f for f in result["frames"] if _anchored(f, anchor)]
    if not anchored:
        return CheckResult(
            ANCHOR_RELEVANCE,
            FAIL,
            f"provider declares capabilities.graph but returned no frame anchored on `{anchor}`, "
            "a URI drawn from its own previous answer (G4)",
        )
    first = _anchored(result["frames"][0], anchor)
    ranking = "and ranked it first" if first else "though it did not rank it first (G3: SHOULD)"
    return CheckResult(
        ANCHOR_RELEVANCE,
        PASS,
        f"anchored on `{anchor}`: provider returned {len(anchored)} anchored frame(s) {ranking}",
    )


def check_provenance(host: Host) -> CheckResult:
    try:
        result = host.query_provider(HOST_ID, sample_query())
    except HostError as exc:
        return CheckResult(PROVENANCE, FAIL, f"query failed: {exc}")
    verified = unreadable = 0
    mismatches = []
    for frame in result["frames"]:
        for index, provenance in enumerate(frame.get("provenance") or []):
            outcome, detail = verify_provenance(provenance)
            if outcome == "verified":
                verified += 1
            elif outcome == "unreadable":
                unreadable += 1
            elif outcome == "mismatch":
                mismatches.append(f"{frame['id']} provenance[{index}] {detail}")
    if mismatches:
        return CheckResult(
            PROVENANCE,
            FAIL,
            f"{len(mismatches)} file-provenance digest(s) do not match the bytes they name: "
            + "; ".join(mismatches),
        )
    if verified == 0:
        return CheckResult(
            PROVENANCE,
            SKIPPED,
            f"no locally re-readable file provenance to verify ({unreadable} link(s) name files "
            "this host cannot see)",
        )
    return CheckResult(
        PROVENANCE,
        PASS,
        f"re-read and re-hashed {verified} file-provenance digest(s) against the bytes on disk: "
        "all match",
    )


def _query_and_shutdown_checks(host: Host, caps: dict[str, Any]) -> list[CheckResult]:
    checks = []
    query = sample_query()
    try:
        result = host.query_provider(HOST_ID, query)
    except HostError as exc:
        evidence = f"query failed: {exc}"
        checks += [CheckResult(n, FAIL, evidence) for n in (FRAME_VALIDITY, VERIFY_HONESTY)]
        checks.append(CheckResult(BUDGET_HONESTY, FAIL, evidence))
    else:
        checks.append(_result(FRAME_VALIDITY, *check_frames(result)))
        checks.append(check_verify_honesty(host, caps, result))
        checks.append(_result(BUDGET_HONESTY, *check_budget(result, query)))
    checks.append(check_as_of(host))
    checks.append(check_kinds_filter(host, caps))
    checks.append(check_anchor_relevance(host, caps))
    checks.append(check_provenance(host))
    ended = host.shutdown()[HOST_ID]
    # The reference host's shutdown is an error only when waiting for the child
    # fails; one that overstays the grace is killed, and that passes.
    checks.append(
        CheckResult(SHUTDOWN, PASS, f"provider acknowledged shutdown and tore down ({ended})")
    )
    return checks


# --- the wire probes, each on a fresh connection --------------------------------------


def _probe(
    name: str, argv: Sequence[str], run: Callable[[Connection, dict[str, Any]], CheckResult]
) -> CheckResult:
    try:
        connection = Connection(argv)
    except HostError as exc:
        return CheckResult(name, FAIL, f"could not spawn provider: {exc}")
    try:
        try:
            _, caps = connection.handshake()
        except HostError as exc:
            status = FAIL if name == MALFORMED else SKIPPED
            return CheckResult(name, status, f"handshake failed before the probe could run: {exc}")
        return run(connection, caps)
    finally:
        connection.kill()


def _malformed(connection: Connection, caps: dict[str, Any]) -> CheckResult:
    try:
        connection.send_raw_line(MALFORMED_LINE)
    except HostError as exc:
        return CheckResult(MALFORMED, FAIL, f"provider closed its input on a malformed line: {exc}")
    try:
        connection.send({"type": "query", "query": sample_query()})
        reply = connection.recv()
    except HostError as exc:
        if exc.kind == "crashed":
            return CheckResult(MALFORMED, FAIL, "provider crashed on a malformed line")
        return CheckResult(MALFORMED, FAIL, f"provider mishandled malformed input: {exc}")
    if reply["type"] == "frames":
        return CheckResult(MALFORMED, PASS, "provider ignored a malformed line and still answered")
    if reply["type"] == "error" and reply.get("code") == "bad_request":
        return CheckResult(
            MALFORMED,
            PASS,
            "provider errored cleanly on malformed input with `bad_request` and stayed alive: "
            + reply["message"],
        )
    if reply["type"] == "error":
        return CheckResult(
            MALFORMED,
            FAIL,
            f"provider stayed alive but answered malformed input with `{reply.get('code')}` "
            "rather than `bad_request`",
        )
    return CheckResult(MALFORMED, FAIL, f"unexpected `{reply['type']}` reply to a valid query")


def embedding_probe(connection: Connection, caps: dict[str, Any]) -> CheckResult:
    fingerprint = caps.get("embeddings_fingerprint")
    if fingerprint is None:
        return CheckResult(EMBEDDING_FINGERPRINT, SKIPPED, NO_FINGERPRINT)
    parts = fingerprint.split("/")
    if len(parts) < 2 or not _LINE.fullmatch(parts[1]):
        return CheckResult(
            EMBEDDING_FINGERPRINT, SKIPPED, f"fingerprint `{fingerprint}` has no dimension"
        )
    dimension = int(parts[1])
    wrong = 2 if dimension == 1 else 1
    try:
        connection.send({"type": "query", "query": {**sample_query(), "embedding": [0.0] * wrong}})
        reply = connection.recv()
    except HostError as exc:
        return CheckResult(EMBEDDING_FINGERPRINT, FAIL, f"provider mishandled the probe: {exc}")
    if reply["type"] == "error":
        return CheckResult(
            EMBEDDING_FINGERPRINT,
            PASS,
            f"provider rejected a {wrong}-dim embedding against {fingerprint} with "
            f"`{reply.get('code') or 'internal'}`",
        )
    if reply["type"] == "frames":
        return CheckResult(
            EMBEDDING_FINGERPRINT,
            FAIL,
            f"provider declares {fingerprint} but scored a {wrong}-dim embedding into frames",
        )
    return CheckResult(EMBEDDING_FINGERPRINT, FAIL, f"unexpected `{reply['type']}` reply")


def _correlation(connection: Connection, caps: dict[str, Any]) -> CheckResult:
    if caps.get("correlation") is not True:
        return CheckResult(CORRELATION, SKIPPED, NO_CORRELATION)
    try:
        connection.send({"type": "query", "id": CORRELATION_PROBE_ID, "query": sample_query()})
        reply = connection.recv()
    except HostError as exc:
        return CheckResult(CORRELATION, FAIL, f"provider mishandled the H4 probe: {exc}")
    kind = reply["type"]
    echoed = reply.get("id") if kind in ("frames", "error") else None
    if echoed == CORRELATION_PROBE_ID:
        return CheckResult(
            CORRELATION,
            PASS,
            f"provider declares correlation and echoed the request id verbatim on its `{kind}`",
        )
    if echoed is not None:
        return CheckResult(CORRELATION, FAIL, f"provider echoed `{echoed}` on its `{kind}` reply")
    if kind in ("frames", "error"):
        return CheckResult(CORRELATION, FAIL, f"provider's `{kind}` reply carried no id")
    return CheckResult(CORRELATION, FAIL, f"unexpected `{kind}` reply to the H4 probe")


def run_conformance(argv: Sequence[str]) -> list[CheckResult]:
    """Every check, in the reference runner's order, against the stdio
    provider ``argv`` starts."""
    checks: list[CheckResult] = []
    host = Host()
    try:
        try:
            provider: Provider = host.add_stdio(HOST_ID, argv)
        except HostError as exc:
            checks.append(CheckResult(HANDSHAKE, FAIL, f"could not establish provider: {exc}"))
            skipped: tuple[str, ...] = (
                FRAME_VALIDITY,
                VERIFY_HONESTY,
                CONSENT_SCOPE,
                BUDGET_HONESTY,
                AS_OF,
            )
            skipped += (KINDS_FILTER, ANCHOR_RELEVANCE, PROVENANCE, SHUTDOWN)
            checks += [CheckResult(n, SKIPPED, "handshake failed") for n in skipped]
        else:
            info, caps = provider.info, provider.capabilities
            if is_blank(info["name"]) or is_blank(info["version"]):
                checks.append(
                    CheckResult(
                        HANDSHAKE,
                        FAIL,
                        f"provider identity incomplete: name={info['name']!r} "
                        f"version={info['version']!r}",
                    )
                )
            else:
                checks.append(
                    CheckResult(
                        HANDSHAKE,
                        PASS,
                        f"provider '{info['name']}' v{info['version']}, data-flow "
                        f"{info['data_flow']}; query kinds={(caps.get('query') or {}).get('kinds')}"
                        f", graph={caps.get('graph') is True}",
                    )
                )
            checks.append(check_consent_scopes(info))
            checks += _query_and_shutdown_checks(host, caps)
    finally:
        host.kill()
    checks.append(_probe(MALFORMED, argv, _malformed))
    checks.append(_probe(EMBEDDING_FINGERPRINT, argv, embedding_probe))
    checks.append(_probe(CORRELATION, argv, _correlation))
    return checks


def table(checks: Sequence[CheckResult]) -> str:
    width = max(len(check.name) for check in checks)
    rows = [f"{c.name:<{width}}  {c.status.upper():<7}  {c.evidence}" for c in checks]
    tally = {s: sum(c.status == s for c in checks) for s in (PASS, FAIL, SKIPPED)}
    verdict = "CONFORMANT" if not tally[FAIL] else "NOT CONFORMANT"
    rows.append(f"{verdict}: {tally[PASS]} passed, {tally[FAIL]} failed, {tally[SKIPPED]} skipped")
    return "\n".join(rows)


def main(argv: Sequence[str]) -> int:
    command = list(argv[1:] if argv and argv[0] == "--" else argv)
    checks = run_conformance(command)
    print(table(checks))
    return 1 if any(c.status == FAIL for c in checks) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
