"""``capsule install-hook``: a plain git pre-commit hook running the guards."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from governance.cli import EXIT_CODES, add_json_flag

HELP = "write a git pre-commit hook that runs the capsule guards"


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "install-hook",
        help=HELP,
        description=(
            "For repositories that do not use the pre-commit framework: write the "
            "repository's pre-commit hook (in core.hooksPath when it is set, else in the "
            "git dir's hooks folder). The hook runs capsule-packets and capsule-records "
            "against the index with the Python that runs this command, or the console "
            "scripts on PATH when that Python is gone. Running it again is a no-op; an "
            "existing different hook is kept unless --force is given."
        ),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--force", action="store_true", help="replace an existing, different pre-commit hook"
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.githook import install_hook
    from governance.output import print_json
    from governance.snapshot import open_repository

    installed = install_hook(open_repository(), force=args.force)
    if args.json:
        print_json({"path": str(installed.path), "action": installed.action})
    messages = {
        "installed": "installed",
        "replaced": "replaced the previous hook with",
        "unchanged": "already installed, unchanged:",
    }
    print(f"capsule: {messages[installed.action]} {installed.path}", file=sys.stderr)
    return 0
