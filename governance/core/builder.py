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
from governance.core.assemble import Parts, assemble, costs
from governance.core.capsule import (
    PACKET_FILE,
    PACKETS_DIR,
    POLICY_PATH,
    packet_id_of,
)
from governance.core.excerpt import (
    Excerpt,
    check_heading_source,
)
from governance.core.failures import Failures
from governance.core.hashing import sha256_hex
from governance.core.locator import Selector, check_path, parse_locator
from governance.core.packet import Packet, parse_packet
from governance.core.policy import MAX_POLICY_BYTES, Policy, check_packet_target
from governance.core.repository import Source
from governance.core.secretscan import WHOLE, Scan
from governance.core.selection import advised, last_rank, select_reads
from governance.core.snapshot import Snapshot
from governance.core.wholefile import WholeFile, parsed_policy, read_whole
from governance.errors import (
    INVALID_PACKET_PATH,
    TOO_MANY_READS,
    CapsuleError,
    SourceError,
    UsageError,
)

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
    packet: Packet | None = None  # the packet, once it parsed


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
    found = overlaps(failures.excerpts)
    return Checked(failures.errors, failures.first, found, scan, failures.packet)


@dataclass(frozen=True)
class _Inputs:
    """The packet and its policy, read and parsed, with their fragments."""

    policy_file: WholeFile
    policy: Policy
    policy_fragment: Any
    packet_path: str
    packet_file: WholeFile
    packet: Packet
    packet_fragment: Any


def _build(
    snapshot: Snapshot,
    packet_path: str,
    failures: Failures,
    *,
    scan_secrets: bool,
    adr_limits: bool,
) -> Built | None:
    inputs = _inputs(snapshot, packet_path, failures, adr_limits=adr_limits)
    scan = _scan(snapshot, failures) if scan_secrets else None
    context_file = _context(snapshot, inputs, scan, failures)
    resolved = _resolved(snapshot, inputs, failures)
    limits = _limits(inputs.packet, inputs.policy)
    excerpts = select_reads(
        snapshot, packet_path=inputs.packet_path, packet_file=inputs.packet_file,
        packet=inputs.packet, policy=inputs.policy, context_file=context_file,
        resolved=resolved, limits=limits, scan=scan, failures=failures,
    )  # fmt: skip
    failures.excerpts = excerpts
    if failures.errors:
        # Only when collecting: the exact size needs every part.
        return None
    assert context_file is not None
    parts = Parts(
        inputs.packet_file, inputs.packet, inputs.packet_fragment, inputs.policy_file,
        inputs.policy, inputs.policy_fragment, context_file, tuple(excerpts), limits,
    )  # fmt: skip
    data, document = assemble(snapshot, parts)
    tokens = budget.estimate_tokens(len(data))
    if not limits.fits(tokens):
        try:
            budget.check(limits, tokens, costs(document(), len(data)))
        except CapsuleError as exc:
            failures.add(
                advised(exc, limits, excerpts, snapshot, inputs.packet), last_rank(inputs.packet)
            )
            return None
    return Built(
        data=data,
        packet=inputs.packet,
        policy=inputs.policy,
        limits=limits,
        excerpts=parts.reads,
        assemble=document,
        secret_scan=scan.status() if scan is not None else None,
        files=(inputs.packet_file, context_file),
    )


def _inputs(
    snapshot: Snapshot, packet_path: str, failures: Failures, *, adr_limits: bool
) -> _Inputs:
    """The policy, then the packet, each read whole, parsed once a blob and held
    to the ADR's limits (``adr_limits``); any failure here stops a check too.
    The packet, once parsed, is the check's (``failures.packet``)."""
    check_path(packet_path)
    if packet_id_of(packet_path) is None:
        raise UsageError(
            f"{packet_path}: a packet is {PACKETS_DIR}/<ID>/{PACKET_FILE}",
            code=INVALID_PACKET_PATH,
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
        failures.packet = packet
        if packet.target_tokens is not None:
            check_packet_target(policy, packet.target_tokens, path=packet_path)
            if adr_limits:
                adr.check_packet_target(packet.target_tokens, path=packet_path)
    return _Inputs(
        policy_file, policy, policy_fragment, packet_path, packet_file, packet, packet_fragment
    )


def _scan(snapshot: Snapshot, failures: Failures) -> Scan | None:
    """The secret scan, with its waivers read; None (and the failure) where
    they cannot be."""
    try:
        scan = failures.scan = Scan(snapshot)
    except CapsuleError as exc:
        failures.add(exc)
        return None
    return scan


def _context(
    snapshot: Snapshot, inputs: _Inputs, scan: Scan | None, failures: Failures
) -> WholeFile | None:
    """The packet and its context scanned, and the context read whole (None
    when it cannot be)."""
    packet_file, packet = inputs.packet_file, inputs.packet
    if scan is not None:
        text = packet_file.text
        failures.add(scan.check(inputs.packet_path, packet_file.source, WHOLE, lambda: text))
    context_file: WholeFile | None = None
    try:
        context_file = read_whole(snapshot, packet.context_path, policy=inputs.policy)
    except CapsuleError as exc:
        failures.add(exc)
    if scan is not None and context_file is not None:
        context_text = context_file.text
        context_source = context_file.source
        failures.add(scan.check(packet.context_path, context_source, WHOLE, lambda: context_text))
    return context_file


def _resolved(
    snapshot: Snapshot, inputs: _Inputs, failures: Failures
) -> list[tuple[int, Selector, Source]]:
    """Each read's selector and source, by rank (1-based, packet order), with
    the checks that need no more than the object header."""
    packet, policy = inputs.packet, inputs.policy
    if len(packet.required_reads) > policy.max_required_reads:
        failures.add(
            SourceError(
                f"{inputs.packet_path}: {len(packet.required_reads)} required_reads, more than "
                f"max_required_reads ({policy.max_required_reads}) of {POLICY_PATH}; split the "
                "packet",
                code=TOO_MANY_READS,
                locator=inputs.packet_path,
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
    return resolved


def _limits(packet: Packet, policy: Policy) -> budget.Limits:
    """The budget: the packet's own target where it sets one, else the policy's."""
    if packet.target_tokens is not None:
        return budget.Limits(
            packet.target_tokens, "packet", policy.hard_limit_tokens, policy.reserve_tokens
        )
    return budget.Limits(
        policy.target_tokens, "policy", policy.hard_limit_tokens, policy.reserve_tokens
    )


def _last(inputs: _Inputs) -> int:
    # The rank a budget failure is reported at: after every read.
    return len(inputs.packet.required_reads) + 1
