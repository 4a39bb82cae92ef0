"""The ``capsule`` command line: one parser, and the guarded runner it shares
with the hooks.

Command modules register their own options and import heavy libraries only
when they run, so ``capsule --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from governance import __version__
from governance.commands._args import EXIT_CODES, Parser
from governance.commands._boundary import run_guarded

COMMANDS = (
    "build",
    "verify",
    "replay",
    "audit",
    "check",
    "outline",
    "install-hook",
    "continuation",
    "sign",
    "render",
    "cgp",
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="capsule",
        description=(
            "Compile execution packets into context capsules: the exact bytes an agent "
            "must read, bound to a git commit and SHA-256 hashes, inside a token budget."
        ),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"capsule {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name in COMMANDS:
        # A command spelled with a dash lives in a module spelled with an underscore.
        module = importlib.import_module(f"governance.commands.{name.replace('-', '_')}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Until the arguments parse, a usage error is JSON when --json was given.
    as_json = ["--json" in arguments]

    def run() -> int:
        args = build_parser().parse_args(arguments)
        as_json[0] = bool(getattr(args, "json", False))
        code: int = args.run(args)
        return code

    return run_guarded("capsule", run, lambda: as_json[0])
