"""The argparse pieces every command shares: the parser class whose errors go
through the guarded runner, the ``--json`` flag and the exit-code epilog."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from governance.errors import USAGE, UsageError

EXIT_CODES = """\
exit codes:
  0  success
  1  a verification ran and found drift or disagreement
  2  bad usage or malformed input (packet, policy, capsule, revision)
  3  a source or selector failed closed (missing, unsafe, dirty, ambiguous...)
  4  over budget: the capsule would not fit its token budget

errors carry a stable code; with --json they are printed on stdout as
{"error": {"code": ..., "message": ...}}."""


class Parser(argparse.ArgumentParser):
    """argparse exits on its own; this one raises ``usage`` instead, so the
    guarded runner reports it like any error (a JSON error with --json, exit 2)."""

    def error(self, message: str) -> NoReturn:
        # The runner's error line starts with the program's name already
        # (``capsule: error [usage]: ...``): only a subcommand's name is said
        # again (``build: ...``, ``continuation run: ...``).
        where = self.prog.partition(" ")[2]
        raise UsageError(f"{where}: {message}" if where else message, code=USAGE)


def add_command(
    sub: Any, name: str, help: str, description: str, *, epilog: str = EXIT_CODES
) -> argparse.ArgumentParser:
    """The subcommand ``name`` with its help line, its description and the
    preformatted epilog (exit codes by default), kept as written."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="machine-readable output on stdout (errors too)"
    )
