"""``capsule build``: compile a packet into a capsule at an exact commit."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from governance.commands._args import add_command, add_json_flag
from governance.commands._secrets import scan_lines
from governance.core.words import plural
from governance.output import err, print_json, write_atomic

HELP = "compile a packet into a canonical context capsule"


def _exact(data: bytes) -> dict[str, Any]:
    # Imported only for --exact-tokens: the tokenizer's module pulls in gzip.
    from governance.agents.tokens import exact_count  # noqa: PLC0415 (defers gzip)

    return exact_count(data)


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "build",
        HELP,
        (
            "Compile PACKET (packets/<ID>/packet.yml) at an exact commit into one canonical "
            "JSON capsule: the packet and its context.md whole, every required read's exact "
            "bytes, their commit and SHA-256 hashes, and the policy in force. The budget is "
            "checked before anything is written. Prints the capsule on stdout and a summary "
            "on stderr. With --record, writes it as the capsule record "
            "packets/<ID>/capsules/<first 12 hex of the commit>.json instead; an existing "
            "record must hold the same bytes, or the build fails with record_conflict (exit 2) "
            "and the file is left untouched."
        ),
    )
    parser.add_argument("packet", metavar="PACKET", help="path to packets/<ID>/packet.yml")
    parser.add_argument(
        "--at",
        metavar="REV",
        default="HEAD",
        help=(
            "commit to build at: HEAD (default), a full commit id or a unique hex prefix "
            "(>= 4). At HEAD every source must also be clean in the working tree. Branch "
            "names, tags and rev expressions are refused."
        ),
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        help="write the capsule to FILE atomically instead of stdout",
    )
    where.add_argument(
        "--record",
        action="store_true",
        help=(
            "write the capsule atomically to its record path in the working tree, "
            "packets/<ID>/capsules/<first 12 hex of the commit>.json, instead of stdout; "
            "never overwrites a different record (record_conflict, exit 2)"
        ),
    )
    parser.add_argument(
        "--exact-tokens",
        action="store_true",
        help=(
            "also count the capsule's exact o200k_base tokens (needs the tokens extra, "
            "pip install 'git-capsule[tokens]'; offline; about 0.2 s to load): reported in "
            "the summary and --json beside the estimate, never in the capsule, never a gate"
        ),
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def _exact_shown(exact: dict[str, Any] | None) -> str:
    if exact is None:
        return ""
    if exact["count"] is None:
        return f" (no exact count: {exact['unavailable']})"
    return f" ({exact['count']:,} exact, {exact['encoding']})"


def run(args: argparse.Namespace) -> int:
    from governance.core.builder import build_capsule  # noqa: PLC0415 (defers pygit2, PyYAML, json)
    from governance.core.paths import repo_relative  # noqa: PLC0415 (defers pygit2)
    from governance.core.repository import open_repository  # noqa: PLC0415 (defers pygit2)
    from governance.core.snapshot import Snapshot  # noqa: PLC0415 (defers pygit2)

    repo = open_repository()
    packet_path = repo_relative(repo, args.packet)
    built = build_capsule(Snapshot.at(repo, args.at), packet_path)
    summary = {
        **built.summary(),
        # Reported only: never in the capsule's bytes, never a gate.
        "exact_tokens": _exact(built.data) if args.exact_tokens else None,
        "output": args.output,
    }
    if args.record:
        from governance.history.records import write_record  # noqa: PLC0415 (defers records: only --record)

        written = write_record(repo, packet_path, built.document["commit"], built.data)
        summary["record"] = written.path
        summary["record_status"] = written.status
        if args.json:
            print_json(summary)
    elif args.output:
        write_atomic(args.output, built.data)
        if args.json:
            print_json(summary)
    else:
        sys.stdout.buffer.write(built.data)
        sys.stdout.flush()
    for warning in built.warnings:
        err(f"capsule: warning [reads_overlap]: {packet_path}: {warning.message}")
    scan_lines(packet_path, built.secret_scan)
    err(
        f"capsule: built {built.packet.id} at {built.document['commit'][:12]}: "
        f"{plural(len(built.excerpts), 'read')}, {len(built.data):,} bytes, "
        f"{built.estimated_tokens:,} estimated tokens"
        + _exact_shown(summary["exact_tokens"])
        + f" of {built.limits.target_tokens:,} "
        f"(target from {built.limits.target_source}; hard limit "
        f"{built.limits.hard_limit_tokens:,} with reserve {built.limits.reserve_tokens:,})"
        + (f" -> {args.output}" if args.output else "")
        + (f" -> {summary['record']} ({summary['record_status']})" if args.record else "")
    )
    return 0
