"""The ``capsule`` command line: one parser, and the guarded runner it shares
with the hooks.

Only the invoked command's module is imported and registers its options; the
others appear in ``--help`` by name and one-line help alone, and every module
imports its heavy libraries only when it runs. So ``capsule --help`` imports
no command, and ``capsule build`` none but build.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Mapping, Sequence

from governance import __version__
from governance.commands._args import EXIT_CODES, Parser
from governance.commands._boundary import end_process, run_guarded
from governance.errors import USAGE, UsageError

# Every command, in --help's order, with the one-line help its module's HELP
# says (tests/test_cli.py keeps the two equal).
COMMANDS: Mapping[str, str] = {
    "init": "write a commented default policy and an example packet (never overwrites)",
    "build": "compile a packet into a canonical context capsule",
    "verify": "check a capsule's parts against a commit (never rewrites it)",
    "replay": "rebuild a capsule at its declared commit and compare it byte for byte",
    "audit": "replay every capsule record found in history (each distinct blob once)",
    "check": "report every reason packets would not build (emits nothing)",
    "status": "verify the newest record of each packet against HEAD: which went stale",
    "outline": "list every heading or Python definition of a file: selector, lines, cost",
    "install-hook": (
        "write git pre-commit, pre-merge-commit and pre-push hooks that run the capsule guards"
    ),
    "continuation": "check that two fresh agents given only a capsule reach the same decision",
    "sign": "sign capsule records with an SSH key (writes RECORD.sig beside each)",
    "render": "print a capsule as Markdown for a model (a view; the JSON stays the authority)",
    "mcp": "serve capsules to an agent over MCP (build, verify, replay, check, suggest, ...)",
    "cgp": "serve capsule parts as Context Graph Protocol frames (NDJSON over stdio)",
    "suggest": "propose required_reads for a goal (model-free, deterministic)",
    "new": "write packets/<ID>/packet.yml and context.md for a goal (never overwrites)",
    "completion": "print the completion script for bash, zsh or fish (generated from the parser)",
}


def invoked(arguments: Sequence[str]) -> str | None:
    """The command ``arguments`` name: the first one that is not an option (the
    top-level parser has no option taking a value)."""
    for argument in arguments:
        if not argument.startswith("-"):
            return argument if argument in COMMANDS else None
    return None


def build_parser(arguments: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``arguments``: the command they name registers its
    options, alone (a subparser costs gettext look-ups on disk: about 0.3 ms
    each). Without a known command (``capsule --help``, a typo), every command
    is a name and a line of help, so help and the invalid-choice error list
    them all. With no ``arguments``, every command registers in full."""
    parser = Parser(
        prog="capsule",
        description=(
            "Compile execution packets into context capsules: the exact bytes an agent "
            "must read, bound to a git commit and SHA-256 hashes, inside a token budget."
        ),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"capsule {__version__}")
    # `capsule completion` needs every command's options, not only its own.
    parser.set_defaults(whole_parser=build_parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    wanted = invoked(arguments) if arguments is not None else None
    for name, help_line in COMMANDS.items():
        if arguments is None or name == wanted:
            # A command spelled with a dash lives in a module spelled with an underscore.
            module = importlib.import_module(f"governance.commands.{name.replace('-', '_')}")
            module.register(sub)
        elif wanted is None:
            sub.add_parser(name, help=help_line)
    return parser


def no_command() -> UsageError:
    """A bare ``capsule``: the usage error that lists every command."""
    width = max(map(len, COMMANDS))
    listing = "\n".join(f"    {name:<{width}}  {line}" for name, line in COMMANDS.items())
    return UsageError(
        "no command given; `capsule COMMAND --help` shows one command's options:\n" + listing,
        code=USAGE,
    )


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        # Started as a command (not called with arguments): paths in UTF-8 whatever the locale.
        from governance.commands._utf8 import ensure_utf8_mode  # noqa: PLC0415 (defers locale, codecs)

        ensure_utf8_mode()
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Until the arguments parse, a usage error is JSON when --json was given.
    as_json = ["--json" in arguments]

    def run() -> int:
        named = any(not argument.startswith("-") for argument in arguments)
        if not named and not {"-h", "--help", "-V", "--version"} & set(arguments):
            raise no_command()
        args = build_parser(arguments).parse_args(arguments)
        as_json[0] = bool(getattr(args, "json", False))
        code: int = args.run(args)
        return code

    code = run_guarded("capsule", run, lambda: as_json[0])
    if argv is None:
        code = end_process("capsule", code)
    return code
