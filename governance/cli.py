"""The ``capsule`` command line: one parser, one error boundary.

Command modules register their own options and import heavy libraries only
when they run, so ``capsule --help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from governance import __version__
from governance.errors import CapsuleError, UsageError, coded

COMMANDS = (
    "build",
    "verify",
    "replay",
    "audit",
    "check",
    "install-hook",
    "continuation",
    "sign",
    "render",
)

# What a shell reports for a process killed by SIGPIPE (128 + 13).
EXIT_BROKEN_PIPE = 141

EXIT_CODES = """\
exit codes:
  0  success
  1  a verification ran and found drift or disagreement
  2  bad usage or malformed input (packet, policy, capsule, revision)
  3  a source or selector failed closed (missing, unsafe, dirty, ambiguous...)
  4  over budget: the capsule would not fit its token budget

errors carry a stable code; with --json they are printed on stdout as
{"error": {"code": ..., "message": ...}}."""


class _Parser(argparse.ArgumentParser):
    # argparse exits on its own; route its complaints through our boundary so
    # --json callers get a JSON error and the exit code stays 2.
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}", code="usage")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="capsule",
        description=(
            "Compile execution packets into context capsules: the exact bytes an agent "
            "must read, bound to a git commit and SHA-256 hashes, inside a token budget."
        ),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"capsule {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMANDS:
        # A command spelled with a dash lives in a module spelled with an underscore.
        module = importlib.import_module(f"governance.commands.{name.replace('-', '_')}")
        module.register(sub)
    return parser


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="machine-readable output on stdout (errors too)"
    )


def _report(error: CapsuleError, as_json: bool) -> None:
    if as_json:
        from governance.output import print_json

        print_json(error.to_json())
    else:
        print(f"capsule: error [{error.code}]: {error.message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:
        # The reader went away (`capsule build ... | head`): nothing to say to
        # it, and no second error when Python flushes stdout at exit.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _main(argv: list[str]) -> int:
    as_json = "--json" in argv
    try:
        args = build_parser().parse_args(argv)
        as_json = bool(getattr(args, "json", False))
        code: int = args.run(args)
        return code
    except CapsuleError as error:
        _report(error, as_json)
        return error.exit_code
    except KeyboardInterrupt:
        print("capsule: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise
    except Exception as exc:
        # The file system or git said no: the user's to fix, not a crash.
        reported = coded(exc)
        if reported is None:
            raise
        _report(reported, as_json)
        return reported.exit_code
