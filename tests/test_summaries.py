"""The text an MCP tool answers beside its structured content counts in words:
``1 packet``, ``2 packets`` (issue 23, the CLI's manners, for the agent surface)."""

from __future__ import annotations

from governance.agents import summaries, tools
from governance.agents.tools import Workspace
from support.gitrepo import Repo, packet_yaml


def test_one_packet_and_one_line_are_singular(repo: Repo) -> None:
    repo.write("docs/one.md", "# One\n")
    repo.commit("a one-line document")
    ws = Workspace.open(str(repo.path))
    listed = summaries.packets_text(tools.list_packets(ws))
    assert listed.splitlines()[0] == f"1 packet at {repo.head()[:12]}"
    checked = summaries.check_text(tools.check(ws, all=True))
    assert checked.splitlines()[-1] == f"1 of 1 packet would build at {repo.head()[:12]}"
    outlined = summaries.outline_text(tools.outline(ws, "docs/one.md"))
    assert outlined.splitlines()[0] == f"docs/one.md at {repo.head()[:12]}: 1 line"


def test_two_packets_are_plural(repo: Repo) -> None:
    repo.write("packets/P-2/packet.yml", packet_yaml("P-2", ["docs/notes.md"]))
    repo.write("packets/P-2/context.md", "# Context\n\nA second.\n")
    repo.commit("a second packet")
    ws = Workspace.open(str(repo.path))
    assert summaries.packets_text(tools.list_packets(ws)).startswith("2 packets at ")
    checked = summaries.check_text(tools.check(ws, all=True))
    assert checked.splitlines()[-1].startswith("2 of 2 packets would build at ")
