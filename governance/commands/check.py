"""``capsule check``: would each packet build? Every failure, nothing emitted."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from governance.commands._args import add_command, add_json_flag
from governance.core.overlap import Overlap
from governance.core.words import plural
from governance.errors import USAGE, UsageError
from governance.output import err, out, print_json

if TYPE_CHECKING:
    from governance.guards.dependencies import Dependency

HELP = "report every reason packets would not build (emits nothing)"


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "check",
        HELP,
        (
            "Build each PACKET (or, with --all, every packets/<ID>/packet.yml) without "
            "emitting a capsule, and report every failure, not only the first: one line per "
            "failure on stdout, 'path: locator: code: what to do', and a summary on stderr. "
            "Reads HEAD, where every source must also be clean in the working tree, as for "
            "build; with --staged, reads every byte from the index instead. With failures, "
            "the exit code is the one build exits with for the first failing packet (the "
            "failure build meets first, which need not be the first listed)."
        ),
    )
    parser.add_argument(
        "packets", nargs="*", metavar="PACKET", help="path to packets/<ID>/packet.yml"
    )
    parser.add_argument(
        "--all", action="store_true", help="check every packets/<ID>/packet.yml of the tree"
    )
    parser.add_argument(
        "--staged",
        action="store_true",
        help="read the index (the staged tree) instead of HEAD and the working tree",
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.commands._secrets import scan_lines, unscanned_line  # noqa: PLC0415 (--help imports the command alone)
    from governance.core.paths import repo_relative  # noqa: PLC0415 (defers pygit2)
    from governance.core.repository import open_repository  # noqa: PLC0415 (defers pygit2)
    from governance.core.snapshot import Snapshot  # noqa: PLC0415 (defers pygit2)
    from governance.guards.check import check_packets, exit_code, find_packets, once  # noqa: PLC0415 (defers pygit2)
    from governance.guards.staged import staged_snapshot  # noqa: PLC0415 (defers pygit2)

    if args.all and args.packets:
        raise UsageError("name PACKETs or use --all, not both", code=USAGE)
    if not args.all and not args.packets:
        raise UsageError("name at least one PACKET, or use --all", code=USAGE)
    repo = open_repository()
    snapshot = staged_snapshot(repo) if args.staged else Snapshot.at(repo, "HEAD")
    if args.all:
        packets = find_packets(snapshot.tree)
    else:
        # Each named once, in the order given.
        packets = list(dict.fromkeys(repo_relative(repo, p) for p in args.packets))
    warnings: dict[str, list[Overlap]] = {}
    scans: dict[str, dict[str, Any] | None] = {}
    bound: dict[str, list[Dependency]] = {}
    results = check_packets(snapshot, packets, warnings, scans, bound)
    # The detector is the same for every packet; only the hits waived differ.
    scanned = next((scan for scan in scans.values() if scan is not None), None)
    failures = [f for packet in packets for f in results[packet]]
    code = exit_code(failures)
    reported = once(failures)
    tree = "in the index" if args.staged else "at HEAD"
    at = tree if args.staged else f"{tree} ({snapshot.commit_id[:12]})"
    if args.json:
        print_json(
            {
                "at": None if args.staged else snapshot.commit_id,
                "staged": args.staged,
                "ok": not failures,
                "exit_code": code,
                "secret_scan": (
                    {k: v for k, v in scanned.items() if k != "waived"} if scanned else None
                ),
                "packets": [
                    {
                        "path": packet,
                        "ok": not results[packet],
                        "failures": [f.to_json() for f in results[packet]],
                        "warnings": [w.to_json() for w in warnings[packet]],
                        "secrets_waived": (scans[packet] or {}).get("waived", []),
                        "dependencies": [d.to_json() for d in bound.get(packet, [])],
                    }
                    for packet in packets
                ],
            }
        )
    else:
        for failure in reported:
            out(failure.line())
        sys.stdout.flush()
    # Warnings never change the exit code: stderr, one line each.
    for packet in packets:
        for warning in warnings[packet]:
            err(f"{packet}: {warning.first}: reads_overlap: {warning.message}")
    stale = _stale_dependencies(packets, bound, tree)
    if scanned is not None and not scanned["scanned"]:
        err(unscanned_line("capsule", "the packets were", scanned["unavailable"]))
    for packet in packets:
        if scanned is not None and scanned["scanned"]:
            scan_lines(packet, scans[packet])
    verdict = _verdict(packets, results, len(reported), warnings, stale)
    err(f"capsule: checked {at}: {verdict}")
    return code


def _verdict(
    packets: list[str],
    results: dict[str, list[Any]],
    reported: int,
    warnings: dict[str, list[Overlap]],
    stale: int,
) -> str:
    """The summary's words: how many failures in how many packets, or that they
    would build, then the warnings and stale dependency records counted."""
    failing = sum(1 for packet in packets if results[packet])
    if not packets:
        verdict = "no packets to check"
    elif failing:
        verdict = f"{plural(reported, 'failure')} in {failing} of {plural(len(packets), 'packet')}"
    else:
        verdict = f"{plural(len(packets), 'packet')} would build"
    warned = sum(len(w) for w in warnings.values())
    if warned:
        verdict += f", {plural(warned, 'warning')}"
    if stale:
        verdict += f", {plural(stale, 'stale dependency record')}"
    return verdict


def _stale_dependencies(packets: list[str], bound: dict[str, list[Dependency]], tree: str) -> int:
    """A line on stderr for each dependency whose newest record does not hold
    (stale, missing or unjudged), as ``capsule status`` would list it: reported,
    never a failure. How many."""
    count = 0
    for packet in packets:
        for dependency in bound.get(packet, []):
            record = dependency.record
            if record is None or record.holds:
                continue
            count += 1
            err(
                f"{packet}: dependency {dependency.id}: its newest record {record.path} is "
                f"{record.status} {tree} (capsule status lists it; rebuild it "
                "with capsule build --record)"
            )
    return count
