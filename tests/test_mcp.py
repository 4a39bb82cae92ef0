"""capsule mcp: every tool through the MCP SDK's own client, in process and
over stdio, errors included; resources; registration snippets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
from support.history import forge_target

TOOLS = {"list_packets", "outline", "suggest", "build", "verify", "replay", "check"}
P1 = "packets/P-1/packet.yml"


def talk(repo: Repo, body: Callable[[Client], Awaitable[Any]], *, write: bool = False) -> Any:
    """Run ``body`` against a server on ``repo`` through the SDK's in-process client."""
    server = make_server(Workspace.open(str(repo.path), write_enabled=write))

    async def main() -> Any:
        async with Client(server) as client:
            return await body(client)

    return anyio.run(main)


def call(repo: Repo, name: str, arguments: dict[str, Any], *, write: bool = False) -> Any:
    async def body(client: Client) -> Any:
        return await client.call_tool(name, arguments)

    return talk(repo, body, write=write)


def ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error(result: Any, code: str) -> dict[str, Any]:
    assert result.is_error
    found = result.structured_content["error"]
    assert found["code"] == code, found
    assert result.content[0].text == f"error [{code}]: {found['message']}"
    return dict(found)


def cli_build(cli: Callable[..., Result], repo: Repo, *args: str) -> bytes:
    out = repo.path.parent / "cli.json"
    assert cli(["build", P1, "-o", str(out), *args], cwd=repo.path).code == 0
    return out.read_bytes()


# tools/list


def test_tools_list_closed_inputs_and_declared_outputs(repo: Repo) -> None:
    async def body(client: Client) -> Any:
        return await client.list_tools()

    listed = talk(repo, body).tools
    assert {t.name for t in listed} == TOOLS
    for tool in listed:
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False, tool.name
        assert tool.output_schema is not None, tool.name
        assert tool.output_schema["additionalProperties"] is False, tool.name
        assert tool.description
        assert tool.annotations is not None
    build = next(t for t in listed if t.name == "build")
    assert set(build.input_schema["properties"]) == {"packet", "at"}
    assert build.annotations.read_only_hint is True


def test_record_exists_only_under_enable_write(repo: Repo) -> None:
    async def body(client: Client) -> Any:
        return await client.list_tools()

    build = next(t for t in talk(repo, body, write=True).tools if t.name == "build")
    assert set(build.input_schema["properties"]) == {"packet", "at", "record"}
    assert build.annotations.read_only_hint is False


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
    error(call(repo, "suggest", {"goal": "phase", "budget": 0}), "usage")
    error(call(repo, "suggest", {"goal": "phase", "paths": ["../*.md"]}), "invalid_glob")
    error(call(repo, "suggest", {"goal": "phase", "at": "main"}), "invalid_revision")
    error(call(repo, "suggest", {}), "invalid_arguments")


# build


def test_build_returns_the_cli_capsule_its_view_and_counts(
    repo: Repo, cli: Callable[..., Result]
) -> None:
    result = call(repo, "build", {"packet": P1})
    value = ok(result)
    data = value["capsule_json"].encode()
    assert data == cli_build(cli, repo)
    assert value["capsule"] == json.loads(data)
    assert value["sha256"] == sha256_hex(data)
    assert value["bytes"] == len(data)
    assert value["exact_tokens"]["count"] == tokens.count(value["capsule_json"])
    assert value["record"] is None
    # The text for the model is the Markdown view.
    assert result.content[0].text == render_markdown(read_capsule(data))


def test_build_passes_the_builders_warnings_on(repo: Repo) -> None:
    repo.write(
        "packets/P-2/packet.yml",
        packet_yaml("P-2", ["docs/roadmap.md#phase-2", "docs/roadmap.md#details"]),
    )
    repo.write("packets/P-2/context.md", "# Context\n")
    repo.commit("overlapping reads")
    value = ok(call(repo, "build", {"packet": "packets/P-2/packet.yml"}))
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


def test_build_errors_keep_the_builders_codes(repo: Repo) -> None:
    error(call(repo, "build", {"packet": P1, "at": "main"}), "invalid_revision")
    repo.write("docs/notes.md", "# Notes\n\nEdited, not committed.\n")
    error(call(repo, "build", {"packet": P1}), "source_dirty")


def test_arguments_outside_the_schema_are_coded_errors(repo: Repo) -> None:
    found = error(call(repo, "build", {"packet": P1, "extra": 1}), "invalid_arguments")
    assert "extra" in found["message"]
    error(call(repo, "build", {}), "invalid_arguments")
    error(call(repo, "build", {"packet": 7}), "invalid_arguments")
    error(call(repo, "check", {"all": "yes please"}), "invalid_arguments")


def test_record_is_refused_without_enable_write(repo: Repo) -> None:
    error(call(repo, "build", {"packet": P1, "record": True}), "write_disabled")
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


def test_check_all_and_named(repo: Repo) -> None:
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
    error(call(repo, "check", {}), "usage")
    error(call(repo, "check", {"packets": ["../x"]}), "unsafe_path")


# resources


def test_committed_packets_and_records_are_resources(repo: Repo) -> None:
    value = ok(call(repo, "build", {"packet": P1, "record": True}, write=True))
    record = value["record"]["path"]
    repo.git("add", "-A")
    repo.commit("the record")

    async def body(client: Client) -> Any:
        listed = await client.list_resources()
        uris = [str(r.uri) for r in listed.resources]
        read = await client.read_resource(f"capsule://{record}")
        packet = await client.read_resource(f"capsule://{P1}")
        return uris, read.contents[0].text, packet.contents[0].text

    uris, record_text, packet_text = talk(repo, body)
    assert uris == [
        f"capsule://{record}",
        "capsule://packets/P-1/context.md",
        f"capsule://{P1}",
    ]
    assert record_text == value["capsule_json"]
    assert packet_text == (repo.path / P1).read_text(encoding="utf-8")


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
            return read.contents[0].text, gone.value

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
            info = client.session.server_info if hasattr(client.session, "server_info") else None
            listed = await client.list_tools()
            built = await client.call_tool("build", {"packet": P1})
            capsule = built.structured_content["capsule_json"]
            verified = await client.call_tool("verify", {"capsule": capsule})
            refused = await client.call_tool("build", {"packet": "/etc/passwd"})
            return info, listed, built, verified, refused

    info, listed, built, verified, refused = anyio.run(main)
    assert {t.name for t in listed.tools} == TOOLS
    assert not built.is_error
    assert built.structured_content["commit"] == repo.head()
    assert verified.structured_content["ok"] is True
    assert refused.is_error
    assert refused.structured_content["error"]["code"] == "path_outside_repository"
    del info


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
