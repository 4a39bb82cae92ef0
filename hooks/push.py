"""``capsule-push``: what a push sends still builds and replays (pre-push)."""

from __future__ import annotations

from collections.abc import Sequence

from governance.commands._args import Parser
from governance.commands._hooks import run_hook


def main(argv: Sequence[str] | None = None) -> int:
    parser = Parser(
        prog="capsule-push",
        description=(
            "Run as a pre-push hook: for each pushed ref (git's lines on stdin, or the one "
            "pre-commit names in PRE_COMMIT_FROM_REF and PRE_COMMIT_TO_REF), every packet "
            "must build at the pushed tip, and every capsule record the pushed commits add "
            "or change must replay identically with its commit in the pushed history. "
            "Prints one line per failure: path: locator: code: what to do."
        ),
    )
    parser.add_argument("remote", nargs="?", help="the remote's name (git passes it)")
    parser.add_argument("url", nargs="?", help="the remote's URL (git passes it)")
    return run_hook(parser, argv, "push")


if __name__ == "__main__":
    raise SystemExit(main())
