"""``capsule-packets``: every packet a staged change affects still builds."""

from __future__ import annotations

from collections.abc import Sequence

from governance.commands._args import Parser
from governance.commands._hooks import run_hook


def main(argv: Sequence[str] | None = None) -> int:
    parser = Parser(
        prog="capsule-packets",
        description=(
            "Check, against the index (the staged tree), every packet that a staged change "
            "(deletions included) or a PATH can affect: its packet.yml or context.md, the "
            "policy, or a file it reads. Staged changes count whether or not they are among "
            "the PATHs. Prints one line per failure: path: locator: code: what to do."
        ),
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="changed paths (pre-commit passes them), besides what is staged",
    )
    return run_hook(parser, argv, "packets")


if __name__ == "__main__":
    raise SystemExit(main())
