"""Selecting a packet's reads within its budget: each read's bytes taken,
scanned for secrets and costed in packet order, stopping (when building) at
the first bound of the budget that breaks, and advice on what to narrow."""

from __future__ import annotations

from collections.abc import Callable

from governance.core import budget
from governance.core.excerpt import Excerpt, check_heading_count, excerpt_of
from governance.core.failures import Failures
from governance.core.locator import Selector
from governance.core.packet import Packet
from governance.core.policy import Policy
from governance.core.repository import Source
from governance.core.secretscan import Scan
from governance.core.snapshot import Snapshot
from governance.core.wholefile import WholeFile
from governance.errors import CapsuleError


def last_rank(packet: Packet) -> int:
    """The rank a budget failure is reported at: after every read."""
    return len(packet.required_reads) + 1


def advised(
    exc: CapsuleError,
    limits: budget.Limits,
    excerpts: list[Excerpt],
    snapshot: Snapshot,
    packet: Packet,
) -> CapsuleError:
    """``exc``, an over-budget failure, with advice on what to narrow."""
    from governance.core.advice import narrowing  # noqa: PLC0415 (over budget only)

    return narrowing(exc, limits, excerpts, snapshot, read_locators=packet.required_reads)


def select_reads(
    snapshot: Snapshot,
    *,
    packet_path: str,
    packet_file: WholeFile,
    packet: Packet,
    policy: Policy,
    context_file: WholeFile | None,
    resolved: list[tuple[int, Selector, Source]],
    limits: budget.Limits,
    scan: Scan | None,
    failures: Failures,
) -> list[Excerpt]:
    """Every read selected, scanned and costed in packet order, stopping (when
    building) at the first bound of the budget that breaks."""
    # A cheap lower bound before any large blob is inflated: the raw bytes of
    # every part included whole. JSON escaping only adds to it.
    floor = [budget.Cost(packet_path, len(packet_file.data))]
    if context_file is not None:
        floor.append(budget.Cost(packet.context_path, len(context_file.data)))
    floor += [budget.Cost(sel.locator, snapshot.size(src)) for _, sel, src in resolved if sel.whole]
    last = last_rank(packet)
    # Checking reports the budget once, from the first bound that breaks it.
    over_budget = False
    lower = budget.estimate_tokens(sum(c.n_bytes for c in floor))
    excerpts: list[Excerpt] = []
    # A selection of more characters than the hard limit's bytes (the estimate
    # is ceil(bytes / 3)) fits no capsule: never worth a scan.
    scan_limit = 3 * limits.hard_limit_tokens
    if not limits.fits(lower):
        try:
            budget.check(limits, lower, floor, at_least=True)
        except CapsuleError as exc:
            failures.add(advised(exc, limits, excerpts, snapshot, packet), last)
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
                failures.add(advised(exc, limits, excerpts, snapshot, packet), last)
                over_budget = True
    return excerpts


def _text(excerpt: Excerpt) -> Callable[[], str]:
    return lambda: excerpt.text
