"""``capsule mcp``: serve this repository's capsules to an agent over MCP (stdio)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from governance import errors
from governance.commands._args import add_command
from governance.errors import UsageError
from governance.output import err

HELP = "serve capsules to an agent over MCP (build, verify, replay, check, suggest, ...)"


def register(sub: Any) -> None:
    from governance.agents.mcpconfig import CLIENTS  # noqa: PLC0415 (defers json)

    parser = add_command(
        sub,
        "mcp",
        HELP,
        (
            "Run an MCP server on stdio (the optional extra: pip install "
            "'git-capsule[mcp]') for the repository at --repo (default: the one around the "
            "cwd), fixed when it starts. Tools: list_packets, outline, suggest, build, verify, "
            "replay, check; each has a closed input schema and a declared output schema, "
            "answers with structured content and a text for the model (build: the capsule's "
            "Markdown view), and reports every error as a tool error with its stable code. "
            "Paths are repository paths, refused when unsafe or outside the repository, as on "
            "the command line. Committed packets, contexts and records are resources "
            "(capsule://<path>). Read-only unless --enable-write, which adds build's "
            "record argument. --print-config CLIENT prints the snippet registering the "
            "server with that client, with absolute paths, and writes nothing."
        ),
    )
    parser.add_argument(
        "--repo",
        metavar="PATH",
        help="the repository to serve (default: the one around the cwd)",
    )
    parser.add_argument(
        "--enable-write",
        action="store_true",
        help="let build write a record (record: true); without it the server never writes",
    )
    parser.add_argument(
        "--print-config",
        metavar="CLIENT",
        choices=CLIENTS,
        help=f"print the registration snippet for one of: {', '.join(CLIENTS)}; start nothing",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from governance.agents.tools import Workspace  # noqa: PLC0415 (defers pygit2, json)

    workspace = Workspace.open(args.repo, write_enabled=args.enable_write)
    if args.print_config:
        from governance.agents.mcpconfig import WHERE, server_command, snippet  # noqa: PLC0415 (defers json)

        command = server_command(workspace.root, enable_write=args.enable_write)
        sys.stdout.write(snippet(args.print_config, command))
        err(f"capsule: {WHERE[args.print_config]}")
        return 0
    try:
        from governance.agents.server import serve  # noqa: PLC0415 (defers pygit2, mcp, tempfile, importlib.resources, subprocess, concurrent.futures, multiprocessing, json)
    except ImportError as exc:
        raise UsageError(
            f"capsule mcp needs the MCP SDK: pip install 'git-capsule[mcp]' ({exc})",
            code=errors.MCP_UNAVAILABLE,
        ) from None
    serve(workspace)
    return 0
