"""The snippet that registers ``capsule mcp`` with an agent client, with
absolute paths. Writes nothing; the SDK is not needed."""

from __future__ import annotations

import json
import os
import sys

CLIENTS = ("claude-code", "codex", "cursor")
SERVER_NAME = "git-capsule"

WHERE = {
    "claude-code": "add this entry to .mcp.json at the repository root (project scope)",
    "codex": "add this table to ~/.codex/config.toml",
    "cursor": "add this entry to .cursor/mcp.json in the repository (or ~/.cursor/mcp.json)",
}


def server_command(repo_root: str, *, enable_write: bool = False) -> list[str]:
    """The absolute command line that starts the server on ``repo_root``: the
    ``capsule`` script running now, else this interpreter with ``-m governance``."""
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(script) == "capsule" and os.path.isfile(script):
        prefix = [script]
    else:
        prefix = [os.path.abspath(sys.executable), "-m", "governance"]
    command = [*prefix, "mcp", "--repo", os.path.abspath(repo_root)]
    if enable_write:
        command.append("--enable-write")
    return command


def _ascii(json_text: str) -> str:
    # Printable ASCII only, so a hostile folder name (an escape, a C1 control, a
    # bidi override) cannot act on the terminal the snippet is printed to: JSON
    # escapes all but DEL, which only a string can hold here.
    return json_text.replace("\x7f", "\\u007f")


def _toml_string(text: str) -> str:
    # A JSON string with \u escapes is a TOML basic string: the same escapes for
    # quote, backslash, control and non-ASCII characters.
    return _ascii(json.dumps(text))


def snippet(client: str, command: list[str]) -> str:
    """The registration text for ``client`` (one of CLIENTS)."""
    if client == "codex":
        args = ", ".join(_toml_string(arg) for arg in command[1:])
        return (
            f"[mcp_servers.{SERVER_NAME}]\ncommand = {_toml_string(command[0])}\nargs = [{args}]\n"
        )
    entry: dict[str, object] = {"command": command[0], "args": command[1:]}
    if client == "claude-code":
        entry = {"type": "stdio", **entry}
    return _ascii(json.dumps({"mcpServers": {SERVER_NAME: entry}}, indent=2)) + "\n"
