"""``capsule new``: draft a packet from a goal, with the reads ``suggest`` proposes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from governance.authoring.template import Draft
from governance.commands._args import add_command, add_json_flag
from governance.commands.suggest import add_options, cap_warnings, options, report
from governance.errors import NO_WORKING_TREE, UsageError
from governance.output import err, print_json

HELP = "write packets/<ID>/packet.yml and context.md for a goal (never overwrites)"


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "new",
        HELP,
        (
            "Write packets/<ID>/packet.yml and packets/<ID>/context.md in the working tree: "
            "the goal, a title and an objective, and the required_reads 'capsule suggest' "
            "proposes for the goal at --at (none when nothing matches, and it says so). "
            "Commit both files and 'capsule build' of the packet succeeds. Never overwrites "
            "a file: if either exists, nothing is written (file_exists, exit 2)."
        ),
    )
    parser.add_argument(
        "id", metavar="ID", help="the packet id: a letter or digit, then letters, digits, . _ -"
    )
    add_options(parser, goal_option=True)
    parser.add_argument("--title", metavar="TEXT", help="the packet's title (default: the goal)")
    parser.add_argument(
        "--objective", metavar="TEXT", help="the packet's objective (default: the goal)"
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.authoring.new import check_id, new_packet  # noqa: PLC0415 (defers pygit2)
    from governance.core.repository import open_repository  # noqa: PLC0415 (defers pygit2)
    from governance.core.snapshot import Snapshot  # noqa: PLC0415 (defers pygit2)

    check_id(args.id)
    opts = options(args)
    repo = open_repository()
    if repo.workdir is None:
        raise UsageError(
            "capsule new writes into a working tree; this repository is bare",
            code=NO_WORKING_TREE,
        )
    snapshot = Snapshot.at(repo, args.at, check_worktree=False)
    draft = Draft.make(
        args.goal,
        snapshot.commit_id,
        packet_id=args.id,
        title=args.title,
        objective=args.objective,
        target_tokens=opts.budget,
    )
    written = new_packet(snapshot, Path(repo.workdir), draft, opts)
    reads = written.suggestion["reads"]
    for line in cap_warnings(written.suggestion):
        err(line)
    if args.json:
        print_json(
            {
                "id": args.id,
                "packet": written.packet_path,
                "context": written.context_path,
                "suggestion": written.suggestion,
            }
        )
        return 0
    _, notes = report(written.suggestion)
    for line in notes:
        err(line)
    if reads:
        what = f"with {len(reads)} suggested reads"
    else:
        what = "with no reads: no section of the tracked Markdown matched the goal"
    err(
        f"capsule: wrote {written.packet_path} and {written.context_path} {what}; review "
        f"them, commit, then: capsule build {written.packet_path}"
    )
    return 0
