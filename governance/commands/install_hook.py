"""``capsule install-hook``: plain git hooks (pre-commit, pre-merge-commit,
pre-push) running the guards."""

from __future__ import annotations

import argparse
from typing import Any

from governance.commands._args import add_command, add_json_flag
from governance.output import err, print_json

HELP = "write git pre-commit, pre-merge-commit and pre-push hooks that run the capsule guards"


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "install-hook",
        HELP,
        (
            "For repositories that do not use the pre-commit framework: write the "
            "repository's pre-commit, pre-merge-commit and pre-push hooks (in core.hooksPath "
            "when it is set, else in the git dir's hooks folder; git commits a merge without "
            "conflicts without running pre-commit). The first two run capsule-packets and "
            "capsule-records against the index, pre-push runs capsule-push on the commits a "
            "push sends, each with the Python that runs this command, or the console scripts "
            "on PATH when that Python is gone. Running it again is a no-op; when any of the "
            "hooks exists and differs, nothing is written unless --force is given. Where the "
            "pre-commit framework's hooks are installed, add the capsule hooks to "
            ".pre-commit-config.yaml instead: --force would replace pre-commit's."
        ),
    )
    parser.add_argument("--force", action="store_true", help="replace existing, different hooks")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.core.repository import open_repository  # noqa: PLC0415 (defers pygit2)
    from governance.guards.githook import install_hook  # noqa: PLC0415 (defers pygit2)

    installed = install_hook(open_repository(), force=args.force)
    if args.json:
        print_json(
            {
                "hooks": [
                    {"hook": hook.hook, "path": str(hook.path), "action": hook.action}
                    for hook in installed
                ]
            }
        )
    messages = {
        "installed": "installed",
        "replaced": "replaced the previous hook with",
        "unchanged": "already installed, unchanged:",
    }
    for hook in installed:
        err(f"capsule: {messages[hook.action]} {hook.path}")
    return 0
