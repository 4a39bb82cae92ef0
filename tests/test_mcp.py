"""capsule mcp: every tool through the MCP SDK's own client, in process and
over stdio, errors included; resources; registration snippets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import tomllib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters

from governance.agents import tokens
from governance.agents.render import render_markdown
from governance.agents.server import make_server
from governance.agents.tools import Workspace
from governance.core.hashing import sha256_hex
from governance.core.reader import read_capsule
from support.gitrepo import Repo, Result, packet_yaml
from support.history import forge_target, forge_whole_read, git, make_history
from support.mcp import TOOLS

P1 = "packets/P-1/packet.yml"


def _text(read: Any) -> str:
    """The text of a read resource's one content."""
    text = read.contents[0].text
    assert isinstance(text, str)
    return text


def talk(repo: Repo, body: Callable[[Client], Awaitable[Any]], *, write: bool = False) -> Any:
    """Run ``body`` against a server on ``repo`` through the SDK's in-process client."""
    server = make_server(Workspace.open(str(repo.path), write_enabled=write))

    async def main() -> Any:
        async with Client(server) as client:
            return await body(client)

    return anyio.run(main)


def call(repo: Repo, name: str, arguments: dict[str, Any], *, write: bool = False) -> Any:
    async def body(client: Client) -> Any:
        return await client.call_tool("capsule_" + name, arguments)

    return talk(repo, body, write=write)


def ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error(result: Any, code: str) -> dict[str, Any]:
    """A tool error as every host reads it: isError, no structured content (the
    TypeScript SDK would validate it against the output schema), the code, the
    message and any advice in the text, and the same as JSON in a second text."""
    assert result.is_error
    assert result.structured_content is None
    human, machine = (block.text for block in result.content)
    found = json.loads(machine)["error"]
    assert found["code"] == code, found
    first, *rest = human.split("\n")
    assert human.startswith(f"error [{code}]: "), human
    assert found["message"].split("\n")[0] in first
    if "advice" in found:
        assert rest[-1] == f"advice: {found['advice']}"
    return dict(found)


def cli_build(cli: Callable[..., Result], repo: Repo, *args: str) -> bytes:
    out = repo.path.parent / "cli.json"
    assert cli(["build", P1, "-o", str(out), *args], cwd=repo.path).code == 0
    return out.read_bytes()


# tools/list


def test_tools_list_titles_descriptions_closed_strict_inputs_declared_outputs(repo: Repo) -> None:
    async def body(client: Client) -> Any:
        return await client.list_tools()

    listed = talk(repo, body).tools
    assert {t.name for t in listed} == set(TOOLS)
    for tool in listed:
        assert tool.title, tool.name
        assert "Call it" in tool.description, tool.name
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False, tool.name
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), (tool.name, name)
            assert "anyOf" not in prop, (tool.name, name)  # an optional argument is its type
        assert tool.output_schema is not None, tool.name
        assert tool.output_schema["additionalProperties"] is False, tool.name
        assert tool.annotations is not None
        assert tool.annotations.title == tool.title
    build = next(t for t in listed if t.name == "capsule_build")
    assert set(build.input_schema["properties"]) == {"packet", "at", "render", "exact_tokens"}
    assert build.input_schema["required"] == ["packet"]
    assert build.annotations.read_only_hint is True
    assert all(t.annotations.read_only_hint for t in listed)


def test_record_exists_only_under_enable_write(repo: Repo) -> None:
    async def body(client: Client) -> Any:
        return await client.list_tools()

    build = next(t for t in talk(repo, body, write=True).tools if t.name == "capsule_build")
    assert set(build.input_schema["properties"]) == {
        "packet",
        "at",
        "render",
        "exact_tokens",
        "record",
    }
    assert build.annotations.read_only_hint is False


def test_no_capability_is_advertised_without_something_behind_it(repo: Repo) -> None:
    async def body(client: Client) -> Any:
        capabilities = client.server_capabilities
        with pytest.raises(MCPError) as prompts:
            await client.list_prompts()
        return capabilities, prompts.value

    capabilities, prompts = talk(repo, body)
    assert capabilities.prompts is None
    assert capabilities.tools is not None
    assert capabilities.resources is not None
    assert prompts.code == -32601  # method not found


# the classes of bad input: each a coded tool error


def test_an_unknown_tool_is_a_coded_tool_error(repo: Repo) -> None:
    found = error(call(repo, "nope", {}), "unknown_tool")
    assert "capsule_build" in found["message"]

    # The names before the prefix are other servers' now.
    async def body(client: Client) -> Any:
        return await client.call_tool("build", {"packet": P1})

    error(talk(repo, body), "unknown_tool")


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("check", {"all": "yes"}, "all"),
        ("check", {"all": 1}, "all"),
        ("build", {"packet": P1, "render": "true"}, "render"),
        ("build", {"packet": P1, "exact_tokens": 0}, "exact_tokens"),
        ("suggest", {"goal": "phase", "max_reads": "2"}, "max_reads"),
        ("suggest", {"goal": "phase", "max_reads": 2.5}, "max_reads"),
        ("suggest", {"goal": "phase", "max_reads": True}, "max_reads"),
        ("suggest", {"goal": "phase", "max_reads": 0}, "max_reads"),
        ("suggest", {"goal": "phase", "paths": "docs/*.md"}, "paths"),
        ("suggest", {"goal": 7}, "goal"),
        ("verify", {"capsule": {"schema": "capsule/1"}}, "capsule"),
        ("build", {}, "packet"),
        ("build", {"packet": P1, "extra": 1}, "extra"),
    ],
)
def test_arguments_are_strictly_typed(
    repo: Repo, tool: str, arguments: dict[str, Any], named: str
) -> None:
    # Regression: "yes" passed for true, "2" for 2 (pydantic's lax mode).
    found = error(call(repo, tool, arguments), "invalid_arguments")
    assert found["arguments"] == [named]
    assert named in found["message"]


def test_record_yes_is_not_true(repo: Repo) -> None:
    error(call(repo, "build", {"packet": P1, "record": "yes"}, write=True), "invalid_arguments")
    assert not (repo.path / "packets/P-1/capsules").exists()


@pytest.mark.parametrize(
    ("tool", "arguments", "where"),
    [
        ("outline", {"path": "\ud800"}, "arguments.path"),
        ("build", {"packet": "docs/\udcff.md"}, "arguments.packet"),
        ("verify", {"path": "a\udfffb.json"}, "arguments.path"),
        ("replay", {"capsule": "\ud800"}, "arguments.capsule"),
        ("check", {"packets": [P1, "\ud800"]}, "arguments.packets[1]"),
        ("suggest", {"goal": "phase \ud83d"}, "arguments.goal"),
        ("audit", {"range": "\ud800..HEAD"}, "arguments.range"),
    ],
)
def test_a_lone_surrogate_anywhere_is_a_coded_tool_error(
    repo: Repo, tool: str, arguments: dict[str, Any], where: str
) -> None:
    # Regression (issue 22, item 4): an uncoded UnicodeEncodeError traceback in
    # process, and no answer at all over stdio.
    # (A key or a tool name holding one the SDK's own client cannot send: the
    # stdio test sends those.)
    found = error(call(repo, tool, arguments), "invalid_arguments")
    assert found["argument"] == where
    assert "not Unicode text" in found["message"]
    json.dumps(found, ensure_ascii=False).encode("utf-8")  # nothing unencodable comes back


# list_packets, outline


def test_list_packets(repo: Repo) -> None:
    repo.write("packets/P-2/packet.yml", packet_yaml("P-2", ["docs/notes.md"]))
    repo.write("packets/P-2/context.md", "# Context\n")
    head = repo.commit("second packet")
    result = call(repo, "list_packets", {})
    assert ok(result) == {
        "at": head,
        "packets": [{"id": "P-1", "path": P1}, {"id": "P-2", "path": "packets/P-2/packet.yml"}],
    }
    assert result.content[0].text.splitlines()[1:] == [f"P-1  {P1}", "P-2  packets/P-2/packet.yml"]


def test_outline_names_each_heading_with_its_locator(repo: Repo) -> None:
    value = ok(call(repo, "outline", {"path": "docs/roadmap.md"}))
    assert value["path"] == "docs/roadmap.md"
    assert [h["locator"] for h in value["headings"]][:3] == [
        "docs/roadmap.md#roadmap",
        "docs/roadmap.md#phase-1",
        "docs/roadmap.md#phase-2",
    ]
    error(call(repo, "outline", {"path": "docs/absent.md"}), "source_missing")


# suggest


def test_suggest_answers_what_the_cli_prints(repo: Repo, cli: Callable[..., Result]) -> None:
    goal = "second phase nested details"
    result = call(repo, "suggest", {"goal": goal, "max_reads": 2})
    value = ok(result)
    printed = cli(["suggest", goal, "--max-reads", "2", "--json"], cwd=repo.path)
    assert printed.code == 0, printed.err
    assert value == json.loads(printed.out)
    assert value["reads"], "the roadmap's phase 2 matches the goal"
    assert result.content[0].text.startswith("required_reads:\n  - ")
    assert value["reads"][0]["locator"] in result.content[0].text


def test_suggest_errors(repo: Repo) -> None:
    error(call(repo, "suggest", {"goal": "the of and"}), "goal_empty")
    error(call(repo, "suggest", {"goal": "phase", "budget": 0}), "invalid_arguments")
    error(call(repo, "suggest", {"goal": "phase", "paths": ["../*.md"]}), "invalid_pathspec")
    error(call(repo, "suggest", {"goal": "phase", "paths": ["nowhere/*.md"]}), "pathspec_no_match")
    error(call(repo, "suggest", {"goal": "phase", "at": "main"}), "invalid_revision")
    error(call(repo, "suggest", {}), "invalid_arguments")


# build


def test_build_answers_the_capsule_once_in_each_channel(
    repo: Repo, cli: Callable[..., Result]
) -> None:
    result = call(repo, "build", {"packet": P1})
    value = ok(result)
    data = value["capsule_json"].encode()
    assert data == cli_build(cli, repo)
    assert value["sha256"] == sha256_hex(data)
    assert value["bytes"] == len(data)
    assert value["record"] is None
    # Once as structured content, once as the text: its exact JSON, nothing else
    # (regression: the document, its text and its view, three times).
    assert "capsule" not in value
    assert value["text"] == "json"
    [text] = result.content
    assert text.text == value["capsule_json"]


def test_build_renders_the_markdown_view_on_request(repo: Repo) -> None:
    result = call(repo, "build", {"packet": P1, "render": True})
    value = ok(result)
    assert value["text"] == "markdown"
    [text] = result.content
    assert text.text == render_markdown(read_capsule(value["capsule_json"].encode()))


def test_build_counts_exact_tokens_only_when_asked(repo: Repo) -> None:
    # Regression: every first build paid for loading the tokenizer.
    assert ok(call(repo, "build", {"packet": P1}))["exact_tokens"] is None
    value = ok(call(repo, "build", {"packet": P1, "exact_tokens": True}))
    assert value["exact_tokens"] == {
        "encoding": "o200k_base",
        "count": tokens.count(value["capsule_json"]),
    }


def test_build_takes_the_id_list_packets_returns(repo: Repo) -> None:
    # Regression: {"packet": "GC-003"} was invalid_packet_path.
    (entry,) = ok(call(repo, "list_packets", {}))["packets"]
    by_id = ok(call(repo, "build", {"packet": entry["id"]}))
    by_path = ok(call(repo, "build", {"packet": entry["path"]}))
    assert by_id == by_path
    found = error(call(repo, "build", {"packet": "P 1"}), "invalid_packet_id")
    assert "P 1" in found["message"]
    error(call(repo, "build", {"packet": "P-9"}), "source_missing")


def test_build_passes_the_builders_warnings_on(repo: Repo) -> None:
    repo.write(
        "packets/P-2/packet.yml",
        packet_yaml("P-2", ["docs/roadmap.md#phase-2", "docs/roadmap.md#details"]),
    )
    repo.write("packets/P-2/context.md", "# Context\n")
    repo.commit("overlapping reads")
    value = ok(call(repo, "build", {"packet": "P-2"}))
    assert [w["code"] for w in value["warnings"]] == ["reads_overlap"]
    assert ok(call(repo, "build", {"packet": P1}))["warnings"] == []


def test_build_at_a_commit_and_an_absolute_path_inside(
    repo: Repo, cli: Callable[..., Result]
) -> None:
    first = repo.head()
    repo.write("docs/notes.md", "# Notes\n\nChanged.\n")
    repo.commit("later")
    value = ok(call(repo, "build", {"packet": str(repo.path / P1), "at": first[:8]}))
    assert value["commit"] == first
    assert value["capsule_json"].encode() == cli_build(cli, repo, "--at", first)


@pytest.mark.parametrize(
    ("packet", "code"),
    [
        ("../outside/packet.yml", "unsafe_path"),
        (".git/config", "unsafe_path"),
        ("packets//P-1/packet.yml", "unsafe_path"),
        ("/etc/passwd", "path_outside_repository"),
        ("packets/P-9/packet.yml", "source_missing"),
    ],
)
def test_build_refuses_unsafe_outside_and_missing_paths(repo: Repo, packet: str, code: str) -> None:
    error(call(repo, "build", {"packet": packet}), code)


def test_build_errors_keep_the_builders_codes_and_advice(repo: Repo) -> None:
    error(call(repo, "build", {"packet": P1, "at": "main"}), "invalid_revision")
    repo.write("packets/P-2/packet.yml", packet_yaml("P-2", ["docs/roadmap.md#phase-9"]))
    repo.write("packets/P-2/context.md", "# Context\n")
    repo.commit("a read of a heading that is not there")
    found = error(call(repo, "build", {"packet": "P-2"}), "heading_missing")
    assert found["advice"] == "restore the heading, or update the locator in the packet"
    repo.write("docs/notes.md", "# Notes\n\nEdited, not committed.\n")
    error(call(repo, "build", {"packet": P1}), "source_dirty")


def test_record_is_refused_without_enable_write(repo: Repo) -> None:
    found = error(call(repo, "build", {"packet": P1, "record": True}), "write_disabled")
    assert "--enable-write" in found["advice"]
    assert not (repo.path / "packets/P-1/capsules").exists()


def test_record_under_enable_write(repo: Repo, cli: Callable[..., Result]) -> None:
    value = ok(call(repo, "build", {"packet": P1, "record": True}, write=True))
    record = value["record"]
    assert record["path"] == f"packets/P-1/capsules/{repo.head()[:12]}.json"
    assert (repo.path / record["path"]).read_bytes() == value["capsule_json"].encode()
    assert (repo.path / record["path"]).read_bytes() == cli_build(cli, repo)
    # Without record, even an enabled server writes nothing.
    (repo.path / record["path"]).unlink()
    ok(call(repo, "build", {"packet": P1}, write=True))
    assert not (repo.path / record["path"]).exists()


# verify


def test_verify_a_capsule_given_as_text_or_as_a_path(repo: Repo) -> None:
    capsule = ok(call(repo, "build", {"packet": P1}))["capsule_json"]
    value = ok(call(repo, "verify", {"capsule": capsule}))
    assert value["ok"] is True
    assert {p["status"] for p in value["parts"]} == {"unchanged"}
    assert value["capsule"]["path"] == "(argument)"
    (repo.path / "p1.json").write_text(capsule, encoding="utf-8")
    by_path = ok(call(repo, "verify", {"path": "p1.json"}))
    assert by_path["capsule"]["path"] == "p1.json"
    assert by_path["parts"] == value["parts"]


def test_verify_reports_drift_per_part(repo: Repo) -> None:
    capsule = ok(call(repo, "build", {"packet": P1}))["capsule_json"]
    repo.write("docs/notes.md", "# Notes\n\nOther notes.\n")
    repo.commit("notes changed")
    result = call(repo, "verify", {"capsule": capsule})
    value = ok(result)
    assert value["ok"] is False
    notes = next(p for p in value["parts"] if p["locator"] == "docs/notes.md")
    assert notes["code"] == "source_changed"
    assert "docs/notes.md  source_changed" in result.content[0].text


def test_verify_errors(repo: Repo, tmp_path: Path) -> None:
    capsule = ok(call(repo, "build", {"packet": P1}))["capsule_json"]
    error(call(repo, "verify", {"capsule": capsule.replace("Second", "Fourth")}), "capsule_corrupt")
    error(call(repo, "verify", {"capsule": capsule + " "}), "non_canonical")
    error(call(repo, "verify", {}), "usage")
    error(call(repo, "verify", {"capsule": capsule, "path": "p1.json"}), "usage")
    outside = tmp_path / "outside.json"
    outside.write_text(capsule, encoding="utf-8")
    error(call(repo, "verify", {"path": str(outside)}), "path_outside_repository")
    error(call(repo, "verify", {"path": "../outside.json"}), "unsafe_path")
    error(call(repo, "verify", {"path": "absent.json"}), "source_missing")
    # A link inside the repository to a file outside it is never followed.
    (repo.path / "link.json").symlink_to(outside)
    error(call(repo, "verify", {"path": "link.json"}), "source_symlink")
    (repo.path / "docs/linked").symlink_to(tmp_path)
    error(call(repo, "verify", {"path": "docs/linked/outside.json"}), "source_symlink")


def test_verify_reads_only_regular_files_and_bounds_them(repo: Repo) -> None:
    os.mkfifo(repo.path / "pipe.json")
    # A FIFO would block a reader forever: it is refused, not opened for reading.
    error(call(repo, "verify", {"path": "pipe.json"}), "source_not_file")
    error(call(repo, "verify", {"path": "docs"}), "source_not_file")
    error(call(repo, "verify", {"path": "docs/notes.md/x.json"}), "source_missing")
    with open(repo.path / "huge.json", "wb") as handle:
        handle.truncate(17 << 20)  # sparse: no 17 MiB written to disk
    error(call(repo, "verify", {"path": "huge.json"}), "input_too_large")
    error(call(repo, "verify", {"capsule": "x" * (17 << 20)}), "input_too_large")


# replay


def test_replay_identical_and_different(repo: Repo) -> None:
    value = ok(call(repo, "build", {"packet": P1, "record": True}, write=True))
    record = value["record"]["path"]
    same = ok(call(repo, "replay", {"path": record}))
    assert same["identical"] is True
    assert same["rebuilt_sha256"] == value["sha256"]
    forged = forge_target(value["capsule_json"].encode(), 15000).decode()
    result = call(repo, "replay", {"capsule": forged})
    differs = ok(result)
    assert differs["identical"] is False
    assert [d["path"] for d in differs["differences"]] == [
        "budget.target_tokens",
        "policy.target_tokens",
    ]
    assert "budget.target_tokens" in result.content[0].text


def test_replay_errors(repo: Repo) -> None:
    capsule = ok(call(repo, "build", {"packet": P1}))["capsule_json"]
    missing = json.loads(capsule)
    missing_commit = "0" * 40
    forged = capsule.replace(missing["commit"], missing_commit)
    error(call(repo, "replay", {"capsule": forged}), "commit_missing")
    error(call(repo, "replay", {"capsule": "{}"}), "unsupported_schema")


# check


def test_check_all_and_named_by_id_or_path(repo: Repo) -> None:
    assert ok(call(repo, "check", {"all": True}))["ok"] is True
    repo.write("packets/P-2/packet.yml", packet_yaml("P-2", ["docs/roadmap.md#phase-9"]))
    repo.write("packets/P-2/context.md", "# Context\n")
    repo.commit("a broken packet")
    result = call(repo, "check", {"packets": ["packets/P-2/packet.yml"]})
    value = ok(result)
    assert value["ok"] is False
    assert value["exit_code"] == 3
    (packet,) = value["packets"]
    assert [f["code"] for f in packet["failures"]] == ["heading_missing"]
    assert "heading_missing" in result.content[0].text
    assert ok(call(repo, "check", {"packets": ["P-2", "P-1"]}))["packets"] == [
        packet,
        {"path": P1, "ok": True, "failures": [], "secrets_waived": [], "dependencies": []},
    ]
    error(call(repo, "check", {}), "usage")
    error(call(repo, "check", {"packets": ["../x"]}), "unsafe_path")


# status


def test_status_is_the_clis_report(repo: Repo, cli: Callable[..., Result]) -> None:
    history = make_history(cli, repo)
    repo.write("docs/notes.md", "# Notes\n\nRewritten.\n")
    repo.commit("notes rewritten")
    result = call(repo, "status", {})
    value = ok(result)
    printed = json.loads(cli(["status", "--json"], cwd=repo.path).out)
    assert value == {k: v for k, v in printed.items() if k != "strict"}
    assert value["counts"]["found"] == len(history.records)
    # The roadmap was rewritten without its phases: the newest records miss them.
    assert [(r["packet"], r["status"]) for r in value["records"]] == [
        ("P-1", "missing"),
        ("P-2", "missing"),
    ]
    changed = {(p["locator"], p["status"]) for p in value["records"][0]["changed"]}
    assert ("docs/notes.md", "stale") in changed
    assert ("docs/roadmap.md#phase-2", "missing") in changed
    text = result.content[0].text
    assert text.splitlines()[-1].startswith(f"{value['counts']['verified']} record")
    assert any(
        line.split() == ["stale", "docs/notes.md", "source_changed"] for line in text.splitlines()
    )
    every = ok(call(repo, "status", {"all": True}))
    assert every == {
        k: v for k, v in json.loads(cli(["status", "--all", "--json"], cwd=repo.path).out).items()
        if k != "strict"
    }  # fmt: skip
    assert every["counts"]["verified"] == len(history.records)


def test_status_errors(repo: Repo) -> None:
    error(call(repo, "status", {"all": "yes"}), "invalid_arguments")
    error(call(repo, "status", {"strict": True}), "invalid_arguments")


# audit


def test_audit_is_the_clis_report(repo: Repo, cli: Callable[..., Result]) -> None:
    history = make_history(cli, repo)
    result = call(repo, "audit", {})
    value = ok(result)
    printed = cli(["audit", "--json", "--jobs", "1"], cwd=repo.path)
    assert value == json.loads(printed.out)
    assert value["counts"]["identical"] == len(history.records)
    assert value["ok"] is True
    assert result.content[0].text.endswith(f"{len(history.records)} identical, 0 drift, 0 error")
    ranged = ok(call(repo, "audit", {"range": f"{history.c3}..HEAD"}))
    assert ranged == json.loads(
        cli(["audit", f"{history.c3}..HEAD", "--json", "--jobs", "1"], cwd=repo.path).out
    )
    assert ranged["counts"]["records"] == 3


def test_audit_honours_waivers_as_the_cli_does(repo: Repo, cli: Callable[..., Result]) -> None:
    history = make_history(cli, repo)
    path = repo.path / history.records[1]
    path.write_bytes(forge_whole_read(path.read_bytes(), 1, "# Notes\n\nSome nodes.\n"))
    repo.commit("a forged record")
    blob = git(repo.path, "rev-parse", f"HEAD:{history.records[1]}")
    repo.write(
        "policies/audit-waivers.yml",
        f"waivers:\n  - blob: {blob}\n    reason: forged in review\n",
    )
    repo.commit("waive it")
    value = ok(call(repo, "audit", {}))
    assert value == json.loads(cli(["audit", "--json", "--jobs", "1"], cwd=repo.path).out)
    assert [w["blob"] for w in value["waivers"]] == [blob]
    assert [r["result"] for r in value["results"] if r["blob"] == blob] != ["identical"]


def test_audit_errors(repo: Repo) -> None:
    error(call(repo, "audit", {"range": "nope..HEAD"}), "invalid_revision")
    error(call(repo, "audit", {"range": "HEAD~1"}), "invalid_revision")
    error(call(repo, "audit", {"paths": ["../*.json"]}), "invalid_glob")


# resources


def test_capsules_packets_and_records_are_resources(repo: Repo) -> None:
    value = ok(call(repo, "build", {"packet": P1, "record": True}, write=True))
    record = value["record"]["path"]
    repo.git("add", "-A")
    repo.commit("the record")

    async def body(client: Client) -> Any:
        listed = await client.list_resources()
        uris = [str(r.uri) for r in listed.resources]
        read = await client.read_resource(f"capsule://{record}")
        packet = await client.read_resource(f"capsule://{P1}")
        capsule = await client.read_resource("capsule://packets/P-1")
        return uris, _text(read), _text(packet), capsule.contents[0]

    uris, record_text, packet_text, capsule = talk(repo, body)
    assert uris == [
        "capsule://packets/P-1",
        f"capsule://{record}",
        "capsule://packets/P-1/context.md",
        f"capsule://{P1}",
    ]
    assert record_text == value["capsule_json"]
    assert packet_text == (repo.path / P1).read_text(encoding="utf-8")
    # The capsule at HEAD, built when read: the record's commit is HEAD's parent.
    assert capsule.mime_type == "application/json"
    assert json.loads(capsule.text)["commit"] == repo.head()


def test_resource_templates_name_every_kind(repo: Repo) -> None:
    async def body(client: Client) -> Any:
        return await client.list_resource_templates()

    templates = talk(repo, body).resource_templates
    assert [t.uri_template for t in templates] == [
        "capsule://packets/{id}",
        "capsule://packets/{id}/packet.yml",
        "capsule://packets/{id}/context.md",
        "capsule://packets/{id}/capsules/{record}",
    ]
    assert all(t.title and t.description and t.mime_type for t in templates)


@pytest.mark.parametrize(
    ("uri", "code", "rpc"),
    [
        ("capsule://packets/P-9", "source_missing", -32002),
        ("capsule://packets/P-1/notes.md", "source_missing", -32002),
        ("capsule://docs/roadmap.md", "source_missing", -32002),
        ("capsule://packets/P-1/capsules/0123.json", "source_missing", -32002),
        ("capsule://packets/..%2F..%2Fetc", "invalid_packet_id", -32002),
        ("capsule://packets/P-1/capsules/..%2F..%2F..%2Fetc%2Fpasswd.json", "unsafe_path", -32602),
    ],
)
def test_a_resource_that_cannot_be_read_is_a_coded_error(
    repo: Repo, uri: str, code: str, rpc: int
) -> None:
    async def body(client: Client) -> Any:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
        return refused.value

    refused = talk(repo, body)
    assert refused.code == rpc
    assert refused.message.startswith(f"error [{code}]: ")
    assert refused.data["code"] == code


def test_a_resource_is_read_at_the_time_of_the_read(repo: Repo) -> None:
    server = make_server(Workspace.open(str(repo.path)))
    repo.write("packets/P-1/context.md", "# Context\n\nRewritten.\n")
    repo.commit("context rewritten after the server started")

    async def main() -> Any:
        async with Client(server) as client:
            read = await client.read_resource("capsule://packets/P-1/context.md")
            repo.git("rm", "-q", "packets/P-1/context.md")
            repo.commit("context removed")
            with pytest.raises(MCPError) as gone:
                await client.read_resource("capsule://packets/P-1/context.md")
            return _text(read), gone.value

    text, gone = anyio.run(main)
    assert text == "# Context\n\nRewritten.\n"
    assert "error [source_missing]" in str(gone)


# the stdio server, as a client starts it


def _config(repo: Repo, client: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "governance", "mcp", "--print-config", client, *extra],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.parts)


def test_print_config_for_each_client_writes_nothing(repo: Repo) -> None:
    before = _listing(repo.path)
    claude = _config(repo, "claude-code")
    assert claude.returncode == 0, claude.stderr
    entry = json.loads(claude.stdout)["mcpServers"]["git-capsule"]
    assert entry["type"] == "stdio"
    assert os.path.isabs(entry["command"])
    assert entry["args"][-3:] == ["mcp", "--repo", str(repo.path.resolve())]
    assert ".mcp.json" in claude.stderr
    cursor = json.loads(_config(repo, "cursor").stdout)["mcpServers"]["git-capsule"]
    assert cursor == {"command": entry["command"], "args": entry["args"]}
    codex = tomllib.loads(_config(repo, "codex", "--enable-write").stdout)
    table = codex["mcp_servers"]["git-capsule"]
    assert table["command"] == entry["command"]
    assert table["args"] == [*entry["args"], "--enable-write"]
    assert _listing(repo.path) == before
    bad = _config(repo, "vscode")
    assert bad.returncode == 2


def test_end_to_end_over_stdio_as_registered(repo: Repo) -> None:
    # Start the server exactly as the printed registration says, from another
    # folder, and talk to it with the SDK's stdio client: the initialize
    # handshake, tools/list, build, verify, then shut down.
    entry = json.loads(_config(repo, "claude-code").stdout)["mcpServers"]["git-capsule"]
    params = StdioServerParameters(
        command=entry["command"],
        args=entry["args"],
        cwd=str(repo.path.parent),
        env={"PATH": os.environ["PATH"], "HOME": os.environ["HOME"]},
    )

    async def main() -> Any:
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            listed = await client.list_tools()
            built = await client.call_tool("capsule_build", {"packet": "P-1"})
            capsule = built.structured_content["capsule_json"]
            verified = await client.call_tool("capsule_verify", {"capsule": capsule})
            refused = await client.call_tool("capsule_build", {"packet": "/etc/passwd"})
            return listed, built, verified, refused

    listed, built, verified, refused = anyio.run(main)
    assert {t.name for t in listed.tools} == set(TOOLS)
    assert not built.is_error
    assert built.structured_content["commit"] == repo.head()
    assert verified.structured_content["ok"] is True
    error(refused, "path_outside_repository")


# the wire: a line the SDK's own transport would drop unanswered


def _wire(repo: Repo, lines: list[bytes], answers: int) -> tuple[list[dict[str, Any]], str]:
    """The first ``answers`` answer lines of a server to ``lines`` (after the
    handshake's), then its stderr once stdin is closed."""
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    sent = [json.dumps(hello).encode(), json.dumps(ready).encode(), *lines]
    server = subprocess.Popen(
        [sys.executable, "-m", "governance", "mcp", "--repo", str(repo.path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    server.stdin.write(b"".join(line + b"\n" for line in sent))
    server.stdin.flush()
    # Read before stdin closes: at its end the server stops what is in flight.
    # A server that stays silent is killed, and the read fails, in two minutes.
    silence = threading.Timer(120, server.kill)
    silence.start()
    try:
        got = [json.loads(server.stdout.readline()) for _ in range(answers + 1)]
    finally:
        silence.cancel()
    _, stderr = server.communicate(timeout=120)
    assert server.returncode == 0, stderr
    assert got[0]["id"] == 0
    return got[1:], stderr.decode("utf-8", "replace")


def _request(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    document = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return json.dumps(document).encode()


def test_every_request_line_gets_an_answer_over_stdio(repo: Repo) -> None:
    # Regression (issue 22, item 4): a lone surrogate's line got no answer at
    # all (the SDK's parser refuses it and its transport drops the line), and
    # the client waited until it timed out. Each line here is answered, and
    # the session goes on: the last request is served as usual.
    call = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}'
    lines = [
        (call % (1, '{"name":"capsule_outline","arguments":{"path":"\\ud800"}}')).encode(),
        (call % (2, '{"name":"capsule_build","arguments":{"packet":"P-\xff"}}')).encode("latin-1"),
        (call % (3, '{"name":"\\udc00","arguments":{}}')).encode(),
        (call % (4, '{"name":"capsule_build","arguments":{"\\ud800":1}}')).encode(),
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"capsule://\\ud800"}}',
        b"this is not json",
        b'{"jsonrpc":"2.0","id":7,"method":7}',
        b"[1, 2]",
        b'{"jsonrpc":"2.0","method":"notifications/\\ud800"}',
        b"",
        _request(9, "tools/call", {"name": "capsule_list_packets", "arguments": {}}),
    ]
    answers, stderr = _wire(repo, lines, 10)
    by_id = {a.get("id"): a for a in answers if a.get("id") is not None}
    for request_id, where in [
        (1, "arguments.path"),
        (2, "arguments.packet"),
        (3, "name"),
        (4, "arguments (a key)"),
    ]:
        result = by_id[request_id]["result"]
        assert result["isError"] is True
        assert "structuredContent" not in result
        assert result["content"][0]["text"].startswith("error [invalid_arguments]: " + where)
    assert by_id[5]["error"]["code"] == -32602
    assert by_id[5]["error"]["data"]["code"] == "invalid_arguments"
    assert by_id[7]["error"]["code"] == -32600
    unanswerable = [a["error"] for a in answers if a.get("id") is None]
    assert [e["code"] for e in unanswerable] == [-32600, -32700, -32600]
    assert not by_id[9]["result"].get("isError")
    assert by_id[9]["result"]["structuredContent"]["packets"][0]["id"] == "P-1"
    assert "Traceback" not in stderr


def test_an_answer_holding_text_that_is_not_utf8_is_still_sent(repo: Repo) -> None:
    # A path from the repository may hold a byte that is not UTF-8 (git keeps
    # bytes); the answer shows it as U+FFFD rather than failing to be written.
    import mcp_types as types  # noqa: PLC0415

    from governance.agents.wire import write_line  # noqa: PLC0415

    message = types.JSONRPCResponse(
        jsonrpc="2.0", id=1, result={"content": [{"type": "text", "text": "docs/\udcff.md"}]}
    )
    assert json.loads(write_line(message))["result"]["content"][0]["text"] == "docs/\ufffd.md"


def test_cli_start_up_never_imports_the_sdk(repo: Repo) -> None:
    script = (
        "import sys\n"
        "from governance.cli import build_parser, main\n"
        "build_parser()\n"
        "main(['mcp', '--print-config', 'codex'])\n"
        "main(['build', 'packets/P-1/packet.yml', '-o', 'x.json'])\n"
        "sdk = ('mcp', 'mcp.', 'mcp_types', 'pydantic')\n"
        "print(sorted(m for m in sys.modules if m.startswith(sdk)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=repo.path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_without_the_sdk_the_command_says_so(repo: Repo) -> None:
    script = (
        "import sys\n"
        "sys.modules['mcp'] = None\n"
        "from governance.cli import main\n"
        "raise SystemExit(main(['mcp']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=repo.path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "mcp_unavailable" in done.stderr
    assert "git-capsule[mcp]" in done.stderr


def test_print_config_warns_when_the_sdk_is_missing(repo: Repo) -> None:
    # Regression: the snippet was printed and exit 0, for a server that then exits 2.
    script = (
        "import sys\n"
        "sys.modules['mcp'] = None\n"
        "from governance.cli import main\n"
        "raise SystemExit(main(['mcp', '--print-config', 'claude-code']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=repo.path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mcpServers"]["git-capsule"]["type"] == "stdio"
    assert "warning" in done.stderr
    assert "mcp_unavailable" in done.stderr
    assert "git-capsule[mcp]" in done.stderr
    assert "warning" not in _config(repo, "claude-code").stderr


def test_a_folder_that_is_no_repository_is_refused_before_serving(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "governance", "mcp", "--repo", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "not_a_repository" in done.stderr


def test_the_server_exits_0_when_its_client_closes_stdin(repo: Repo) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "governance", "mcp", "--repo", str(repo.path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""


def test_print_config_names_the_capsule_script_that_ran(repo: Repo) -> None:
    script = Path(sys.executable).parent / "capsule"
    assert script.is_file(), "make test installs the capsule script beside the interpreter"
    done = subprocess.run(
        [str(script), "mcp", "--print-config", "codex"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=True,
    )
    table = tomllib.loads(done.stdout)["mcp_servers"]["git-capsule"]
    assert table == {"command": str(script), "args": ["mcp", "--repo", str(repo.path.resolve())]}


def test_regression_a_repository_without_commits_still_gets_a_server(tmp_path: Path) -> None:
    # make_server listed resources from HEAD and raised invalid_revision before
    # serving anything: now each tool answers with the code, and no resources.
    empty = Repo(tmp_path / "empty")
    error(call(empty, "list_packets", {}), "invalid_revision")
    error(call(empty, "build", {"packet": P1}), "invalid_revision")

    async def body(client: Client) -> Any:
        return await client.list_resources()

    assert talk(empty, body).resources == []


def test_print_config_of_a_hostile_repository_path_is_escaped_and_exact(
    repo: Repo, tmp_path: Path
) -> None:
    # A folder name may hold an escape, a C1 CSI, a bidi override and DEL: the
    # snippet reaches the terminal as printable ASCII, and each client still
    # reads the path back exactly (JSON and TOML both take \u escapes).
    hostile = tmp_path / "clone\x1b[2J\u009b31m\u202egnp.\x7fend"
    repo.path.rename(hostile)
    command = [sys.executable, "-m", "governance", "mcp", "--repo", str(hostile)]
    for client in ("claude-code", "cursor", "codex"):
        done = subprocess.run(
            [*command, "--print-config", client],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        for line in done.stdout.splitlines():
            assert line.isascii(), (client, line)
            assert line.isprintable(), (client, line)
        if client == "codex":
            args = tomllib.loads(done.stdout)["mcp_servers"]["git-capsule"]["args"]
        else:
            args = json.loads(done.stdout)["mcpServers"]["git-capsule"]["args"]
        assert args[-3:] == ["mcp", "--repo", str(hostile.resolve())]
