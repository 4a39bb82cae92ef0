"""``capsule-records``: every staged capsule record is genuine."""

from __future__ import annotations

from collections.abc import Sequence

from governance.commands._args import Parser
from governance.commands._hooks import run_hook


def main(argv: Sequence[str] | None = None) -> int:
    parser = Parser(
        prog="capsule-records",
        description=(
            "Check every staged capsule record (packets/<ID>/capsules/<commit>.json) and "
            "every record among PATHs, read from the index: canonical, "
            "internally consistent, in its place, its commit present, and replaying "
            "byte for byte at that commit. Prints one line per failure: "
            "path: locator: code: what to do."
        ),
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="records to check besides the staged ones; other files are ignored",
    )
    return run_hook(parser, argv, "records")


if __name__ == "__main__":
    raise SystemExit(main())
