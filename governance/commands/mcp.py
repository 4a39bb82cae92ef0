"""``capsule mcp``: serve this repository's capsules to an agent over MCP (stdio)."""

from __future__ import annotations

import argparse
import importlib.util
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
            "cwd), fixed when it starts. Tools: capsule_list_packets, capsule_build, "
            "capsule_outline, capsule_suggest, capsule_verify, capsule_status, capsule_replay, "
            "capsule_check, capsule_audit; each has a title, a closed and strict input schema "
            "with every argument described, and a declared output schema, and answers with "
            "structured content and a text (capsule_build: the capsule's exact JSON, or with "
            "render: true its Markdown view). A packet is named by its id or its path. Every "
            "error, an unknown tool or mistyped arguments included, is a tool error (isError) "
            "whose text starts 'error [code]:' with its stable code. Paths are repository paths, "
            "refused when unsafe or outside the repository, as on the command line. Resources: "
            "each packet's capsule (capsule://packets/<ID>) and the committed packets, contexts "
            "and records (capsule://<path>), with resource templates for each. Read-only unless "
            "--enable-write, which adds capsule_build's record argument. --print-config CLIENT "
            "prints the snippet registering the server with that client, with absolute paths, "
            "and writes nothing."
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
        if importlib.util.find_spec("mcp") is None:
            err(
                "capsule: warning: the MCP SDK is not installed beside this capsule, so the "
                "server this starts exits 2 (mcp_unavailable): pip install 'git-capsule[mcp]'"
            )
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
