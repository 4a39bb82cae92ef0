"""``capsule cgp``: a Context Graph Protocol provider on stdin and stdout."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from governance.commands._args import add_command

HELP = "serve capsule parts as Context Graph Protocol frames (NDJSON over stdio)"

EPILOG = """\
protocol errors are envelopes on stdout, never an exit: each has a code
(bad_request, incompatible_version, unsupported_kind, internal, or
capsule:<code> for the code a capsule command would give) and the provider
keeps serving. It exits 0 on shutdown or at the end of input; 2 when --repo is
not a repository.

exit codes:
  0  the host sent shutdown, or closed stdin
  2  bad usage: not a repository"""


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "cgp",
        HELP,
        (
            "Run a Context Graph Protocol (contextgraph/1) provider over stdio: one JSON "
            "envelope per line in, one per line out. After the handshake, a query anchored on "
            'a packet (anchors: ["capsule://packets/<ID>"]) returns the parts of that '
            "packet's capsule built at HEAD (packet, context, every read) as doc "
            "frames: exact content, sha256 digests, L<a>-<b> line ranges, a file:// "
            "provenance in the work tree beside the capsule://commits/ one, token_cost = "
            "ceil(UTF-8 bytes / 4), within max_frames and max_tokens; a query without a "
            "packet anchor gets the sections capsule suggest proposes for its goal at HEAD; "
            "with as_of, both are served from the last commit at or before that time. "
            "verify answers valid, "
            "stale, gone or unknown from capsule verify. Reads committed objects only; "
            "writes nothing; sends nothing anywhere but stdout. See docs/cgp.md."
        ),
        epilog=EPILOG,
    )
    parser.add_argument(
        "--repo",
        metavar="PATH",
        help="the repository to serve (default: the one around the current directory)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.agents.cgp import serve  # noqa: PLC0415 (defers pygit2, PyYAML, json)
    from governance.core.repository import open_repository  # noqa: PLC0415 (defers pygit2)

    repo = open_repository(args.repo)
    return serve(repo, sys.stdin.buffer, sys.stdout.buffer)
