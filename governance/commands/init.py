"""``capsule init``: a default policy and an example packet for this repository."""

from __future__ import annotations

import argparse
from typing import Any

from governance.commands._args import add_command, add_json_flag
from governance.output import err, out, print_json

HELP = "write a commented default policy and an example packet (never overwrites)"


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "init",
        HELP,
        (
            "Write policies/capsule.yml (the default policy, a comment per value) and one "
            "example packet, packets/EXAMPLE-1/packet.yml with its context.md, at the root of "
            "the work tree. The example reads README.md whole when it is committed, clean "
            "and small, and nothing otherwise; after a commit, capsule build of it succeeds. "
            "Then prints the pre-commit configuration that runs the guards and where the CI "
            "workflow is. Never overwrites: when any of the three files exists (or a folder "
            "of it is a link or a file), nothing is written and it exits 2 (file_exists), "
            "naming each."
        ),
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.authoring.init import CI_WORKFLOW, EXAMPLE_PACKET, PRE_COMMIT, plan, write  # noqa: PLC0415 (defers pygit2, PyYAML, json)
    from governance.core.repository import open_repository  # noqa: PLC0415 (defers pygit2)

    repo = open_repository()
    planned = plan(repo)
    written = write(repo, planned.files)
    steps = [
        f"git add {' '.join(written)}",
        'git commit -m "capsule: policy and example packet"',
        f"capsule build {EXAMPLE_PACKET}",
    ]
    if args.json:
        print_json(
            {
                "written": written,
                "packet": EXAMPLE_PACKET,
                "reads": planned.reads,
                "next": steps,
                "pre_commit": PRE_COMMIT,
                "ci_workflow": CI_WORKFLOW,
            }
        )
    else:
        out("Next:")
        for step in steps:
            out(f"  {step}")
        out("")
        out("To check packets and records on every commit, add to .pre-commit-config.yaml:")
        out("")
        for line in PRE_COMMIT.splitlines():
            out(f"  {line}")
        out("")
        out("(without the pre-commit framework: capsule install-hook)")
        out(
            f"For CI, copy {CI_WORKFLOW} from the git-capsule repository into "
            ".github/workflows/: capsule check --all on every push and pull request, and "
            "capsule audit over the full history in shards."
        )
    err(
        f"capsule: wrote {', '.join(written)}"
        + (
            f"; the example reads {', '.join(planned.reads)}"
            if planned.reads
            else "; the example reads nothing yet"
        )
    )
    return 0
