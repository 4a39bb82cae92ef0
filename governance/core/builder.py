"""The trusted capsule/1 builder: Packet + Excerpts + Policy -> canonical bytes.

Build, check, replay and audit all come through one path (``_build``); only
the snapshot they read from differs, and whether the first failure stops the
build (``build_capsule``) or every failure is collected (``check_report``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from governance.core import adr, budget, canonical
from governance.core.capsule import (
    PACKET_FILE,
    PACKETS_DIR,
    POLICY_PATH,
    SCHEMA_V1,
    TRUST_V1,
    packet_id_of,
)
from governance.core.excerpt import (
    Excerpt,
    check_heading_count,
    check_heading_source,
    excerpt_of,
)
from governance.core.failures import Failures
from governance.core.hashing import sha256_hex
from governance.core.locator import Selector, check_path, parse_locator
from governance.core.packet import DEFAULT_QUESTION, Packet, parse_packet
from governance.core.policy import MAX_POLICY_BYTES, Policy, check_packet_target
from governance.core.secretscan import WHOLE, Scan
from governance.core.snapshot import Snapshot, Source
from governance.core.wholefile import WholeFile, parsed_policy, policy_json, read_whole
from governance.errors import CapsuleError, SourceError, UsageError

if TYPE_CHECKING:
    from governance.core.overlap import Overlap


@dataclass(frozen=True)
class Built:
    data: bytes
    packet: Packet
    policy: Policy
    limits: budget.Limits
    excerpts: tuple[Excerpt, ...]
    # Makes the plain document the bytes serialise, when first asked for: a
    # replay that rebuilds its record's bytes never asks.
    assemble: Callable[[], dict[str, Any]] = field(repr=False, compare=False)
    # What the secret scan said (``Scan.status``); None when the build did not
    # scan (a replay: a record's bytes are history).
    secret_scan: dict[str, Any] | None = field(default=None, compare=False)
    # The packet and context files, whole: what audit's scan of a record reads.
    files: tuple[WholeFile, ...] = field(default=(), repr=False, compare=False)

    @cached_property
    def document(self) -> dict[str, Any]:
        """The capsule as JSON values: what ``data`` is the canonical bytes of."""
        return self.assemble()

    @property
    def estimated_tokens(self) -> int:
        return budget.estimate_tokens(len(self.data))

    @property
    def sha256(self) -> str:
        return sha256_hex(self.data)

    @property
    def warnings(self) -> list[Overlap]:
        """Reads that select the same lines twice; the capsule is built anyway."""
        from governance.core.overlap import overlaps  # noqa: PLC0415 (a replay never asks)

        return overlaps(self.excerpts)

    def summary(self) -> dict[str, Any]:
        """What ``capsule build --json`` and the MCP build tool both report."""
        return {
            "id": self.packet.id,
            "commit": self.document["commit"],
            "sha256": self.sha256,
            "reads": len(self.excerpts),
            "bytes": len(self.data),
            "estimated_tokens": self.estimated_tokens,
            "target_tokens": self.limits.target_tokens,
            "hard_limit_tokens": self.limits.hard_limit_tokens,
            "reserve_tokens": self.limits.reserve_tokens,
            "warnings": [w.to_json() for w in self.warnings],
            "secret_scan": self.secret_scan,
        }


@contextmanager
def _naming(path: str) -> Iterator[None]:
    # Schema violations carry their JSON path (``where``); add the file's, so
    # every failure can be reported against the file it is in.
    try:
        yield
    except CapsuleError as exc:
        exc.details.setdefault("path", path)
        raise


def _costs(document: dict[str, Any], total: int) -> list[budget.Cost]:
    def size(part: Any) -> int:
        return len(canonical.dumps(part)) - 1

    costs = [
        budget.Cost(document["packet"]["path"], size(document["packet"])),
        budget.Cost(document["context"]["path"], size(document["context"])),
    ]
    costs += [budget.Cost(read["locator"], size(read)) for read in document["reads"]]
    costs.append(budget.Cost("(capsule envelope)", total - sum(c.n_bytes for c in costs)))
    return costs


def build_capsule(
    snapshot: Snapshot, packet_path: str, *, scan_secrets: bool = True, adr_limits: bool = True
) -> Built:
    """The capsule of ``packet_path`` at ``snapshot``, or the first failure.
    ``scan_secrets`` False leaves out the secret scan: replay rebuilds a
    record's bytes as history has them, and suggest's fit only asks sizes.
    ``adr_limits`` False only for replay of a record that predates them."""
    failures = Failures(collect=False)
    built = _build(
        snapshot, packet_path, failures, scan_secrets=scan_secrets, adr_limits=adr_limits
    )
    assert built is not None  # without collecting, every failure raises
    return built


@dataclass(frozen=True)
class Checked:
    errors: list[CapsuleError]  # in packet order
    first: CapsuleError | None  # the one build would raise
    warnings: list[Overlap]  # among the reads that could be selected
    secret_scan: dict[str, Any] | None = None  # Scan.status, once the scan could start


def check_report(snapshot: Snapshot, packet_path: str) -> Checked:
    """Everything a check of ``packet_path`` says: every reason it would not
    build at ``snapshot``, in packet order (none when it builds; a policy or
    packet that cannot be read or parsed is the only failure reported, as
    nothing else can be checked without it); the one ``build`` would raise,
    the first met, not always the first listed (the budget's lower bound is
    judged before any selection is read); and its warnings."""
    failures = Failures(collect=True)
    try:
        _build(snapshot, packet_path, failures, scan_secrets=True, adr_limits=True)
    except CapsuleError as exc:
        failures.add(exc)
    from governance.core.overlap import overlaps  # noqa: PLC0415 (a replay never asks)

    scan = failures.scan.status() if failures.scan is not None else None
    return Checked(failures.errors, failures.first, overlaps(failures.excerpts), scan)


def _build(
    snapshot: Snapshot,
    packet_path: str,
    failures: Failures,
    *,
    scan_secrets: bool,
    adr_limits: bool,
) -> Built | None:
    check_path(packet_path)
    if packet_id_of(packet_path) is None:
        raise UsageError(
            f"{packet_path}: a packet is {PACKETS_DIR}/<ID>/{PACKET_FILE}",
            code="invalid_packet_path",
            path=packet_path,
        )

    policy_file = read_whole(
        snapshot,
        POLICY_PATH,
        hint="every capsule is built under a committed policy",
        max_bytes=MAX_POLICY_BYTES,
    )
    with _naming(POLICY_PATH):
        # The policy parsed, and its part of the capsule serialised, once a blob.
        policy, policy_fragment = snapshot.memo(
            "policy", policy_file.source, lambda: parsed_policy(policy_file)
        )
        if adr_limits:
            adr.check_policy(policy)
    packet_file = read_whole(snapshot, packet_path, policy=policy)
    with _naming(packet_path):
        # The packet's id must match its folder: the parse depends on the path too.
        packet, packet_fragment = snapshot.memo(
            f"packet:{packet_path}",
            packet_file.source,
            lambda: (
                parse_packet(packet_file.text, path=packet_path),
                canonical.fragment(packet_file.to_json()),
            ),
            weight=lambda _: 256 + 2 * len(packet_file.data),
        )
        if packet.target_tokens is not None:
            check_packet_target(policy, packet.target_tokens, path=packet_path)
            if adr_limits:
                adr.check_packet_target(packet.target_tokens, path=packet_path)
    scan: Scan | None = None
    if scan_secrets:
        try:
            scan = failures.scan = Scan(snapshot)
        except CapsuleError as exc:
            failures.add(exc)
    if scan is not None:
        failures.add(scan.check(packet_path, packet_file.source, WHOLE, lambda: packet_file.text))
    context_file: WholeFile | None = None
    try:
        context_file = read_whole(snapshot, packet.context_path, policy=policy)
    except CapsuleError as exc:
        failures.add(exc)
    if scan is not None and context_file is not None:
        context_text = context_file.text
        context_source = context_file.source
        failures.add(scan.check(packet.context_path, context_source, WHOLE, lambda: context_text))

    if len(packet.required_reads) > policy.max_required_reads:
        failures.add(
            SourceError(
                f"{packet_path}: {len(packet.required_reads)} required_reads, more than "
                f"max_required_reads ({policy.max_required_reads}) of {POLICY_PATH}; split the "
                "packet",
                code="too_many_reads",
                locator=packet_path,
                limit=policy.max_required_reads,
            )
        )
    # Every locator is parsed before any is resolved, so the first failure
    # build reports does not depend on how the two kinds interleave.
    selectors: list[tuple[int, Selector]] = []
    for rank, locator in enumerate(packet.required_reads, 1):
        try:
            selectors.append((rank, parse_locator(locator)))
        except CapsuleError as exc:
            failures.add(exc, rank)
    resolved: list[tuple[int, Selector, Source]] = []
    for rank, selector in selectors:
        try:
            source = snapshot.source(selector.path, locator=selector.locator)
            # Before anything inflates it: a heading read parses the whole file.
            check_heading_source(snapshot, selector, source, policy.max_heading_source_bytes)
            resolved.append((rank, selector, source))
        except CapsuleError as exc:
            failures.add(exc, rank)

    if packet.target_tokens is not None:
        limits = budget.Limits(
            packet.target_tokens, "packet", policy.hard_limit_tokens, policy.reserve_tokens
        )
    else:
        limits = budget.Limits(
            policy.target_tokens, "policy", policy.hard_limit_tokens, policy.reserve_tokens
        )

    # A cheap lower bound before any large blob is inflated: the raw bytes of
    # every part included whole. JSON escaping only adds to it.
    floor = [budget.Cost(packet_path, len(packet_file.data))]
    if context_file is not None:
        floor.append(budget.Cost(packet.context_path, len(context_file.data)))
    floor += [budget.Cost(sel.locator, snapshot.size(src)) for _, sel, src in resolved if sel.whole]
    last = len(packet.required_reads) + 1
    # Checking reports the budget once, from the first bound that breaks it.
    over_budget = False
    lower = budget.estimate_tokens(sum(c.n_bytes for c in floor))

    def advised(exc: CapsuleError) -> CapsuleError:
        from governance.core.advice import narrowing  # noqa: PLC0415 (over budget only)

        return narrowing(exc, limits, excerpts, snapshot, read_locators=packet.required_reads)

    excerpts: list[Excerpt] = []
    # A selection of more characters than the hard limit's bytes (the estimate
    # is ceil(bytes / 3)) fits no capsule: never worth a scan.
    scan_limit = 3 * limits.hard_limit_tokens
    if not limits.fits(lower):
        try:
            budget.check(limits, lower, floor, at_least=True)
        except CapsuleError as exc:
            failures.add(advised(exc), last)
            over_budget = True

    running = floor[: 1 if context_file is None else 2]
    for rank, selector, source in resolved:
        if selector.whole and not limits.fits(budget.estimate_tokens(snapshot.size(source))):
            # Only when collecting (build has stopped at the floor): a whole
            # file that alone breaks the budget, judged from its header as the
            # floor was, is never inflated; the floor's over_budget names it.
            continue
        try:
            snapshot.check_worktree(source, locator=selector.locator)
            check_heading_count(snapshot, selector, source, policy.max_heading_count)
            excerpt = excerpt_of(snapshot, selector, source)
        except CapsuleError as exc:
            failures.add(exc, rank)
            continue
        if scan is not None and len(excerpt.text) <= scan_limit:
            # A selection too large for any capsule is over budget, and never scanned.
            found = scan.check(
                selector.locator, source, selector.locator, _text(excerpt), excerpt.first_line
            )
            failures.add(found, rank)
        excerpts.append(excerpt)
        if over_budget:
            continue
        # Stop at the first selection that cannot fit, before reading the rest.
        running.append(budget.Cost(selector.locator, len(excerpt.text.encode("utf-8"))))
        lower = budget.estimate_tokens(sum(c.n_bytes for c in running))
        if not limits.fits(lower):
            try:
                budget.check(limits, lower, running, at_least=True)
            except CapsuleError as exc:
                failures.add(advised(exc), last)
                over_budget = True

    failures.excerpts = excerpts
    if failures.errors:
        # Only when collecting: the exact size needs every part.
        return None
    assert context_file is not None

    context = context_file
    reads = tuple(excerpts)
    head = {
        "schema": SCHEMA_V1,
        "commit": snapshot.commit_id,
        "id": packet.id,
        "question": packet.question if packet.question is not None else DEFAULT_QUESTION,
        "trust": TRUST_V1,
    }
    numbers = {
        "target_tokens": limits.target_tokens,
        "target_source": limits.target_source,
        "hard_limit_tokens": limits.hard_limit_tokens,
        "reserve_tokens": limits.reserve_tokens,
        "estimator": policy.estimator,
        "bytes": 0,
        "estimated_tokens": 0,
    }

    def document() -> dict[str, Any]:
        return {
            **head,
            "packet": packet_file.to_json(),
            "context": context.to_json(),
            "reads": [excerpt.to_json() for excerpt in reads],
            "policy": policy_json(policy_file, policy),
            # The one budget object: the fixpoint fills its numbers.
            "budget": numbers,
        }

    # Serialised from the same document with each part that is a function of
    # blobs alone as its canonical fragment, made once while the blob stays
    # cached: the packet, context and policy recur in nearly every replay of a
    # history, a read only while its source's blob does.
    context_fragment = snapshot.memo(
        f"json:{packet.context_path}",
        context.source,
        lambda: canonical.fragment(context.to_json()),
        weight=lambda found: len(found.data),
    )
    composed = {
        **head,
        "packet": packet_fragment,
        "context": context_fragment,
        "reads": [excerpt.fragment for excerpt in reads],
        "policy": policy_fragment,
        "budget": numbers,
    }
    data = budget.fixpoint(composed, canonical.dumps)
    tokens = budget.estimate_tokens(len(data))
    if not limits.fits(tokens):
        try:
            budget.check(limits, tokens, _costs(document(), len(data)))
        except CapsuleError as exc:
            failures.add(advised(exc), last)
            return None
    return Built(
        data=data,
        packet=packet,
        policy=policy,
        limits=limits,
        excerpts=reads,
        assemble=document,
        secret_scan=scan.status() if scan is not None else None,
        files=(packet_file, context),
    )


def _text(excerpt: Excerpt) -> Callable[[], str]:
    return lambda: excerpt.text
