"""capsule mcp through a real host's client: the TypeScript SDK's Client and
StdioClientTransport (@modelcontextprotocol/sdk, pinned with its integrity
hashes by tests/mcp_client/package-lock.json; ``make test`` installs it with
``npm ci``). Unlike the Python SDK's client, it validates the structured
content of every result against the tool's output schema, errors included,
as Claude Code, Cursor and most hosts do: every answer here passed that."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.gitrepo import Repo, Result, packet_yaml
from support.mcp import TOOLS

pytestmark = pytest.mark.integration

CLIENT = Path(__file__).resolve().parent / "mcp_client"
SDK = "@modelcontextprotocol/sdk"
P1 = "packets/P-1/packet.yml"


def _node() -> str:
    node = shutil.which("node")
    assert node, (
        "node is not on PATH: these tests run the TypeScript SDK's MCP client; install "
        "Node.js 18 or later and npm, then make test (npm ci in tests/mcp_client)"
    )
    installed = CLIENT / "node_modules" / SDK / "package.json"
    assert installed.is_file(), (
        f"{installed.relative_to(CLIENT.parent.parent)} is missing: run make test, or "
        "npm ci in tests/mcp_client"
    )
    lock = json.loads((CLIENT / "package-lock.json").read_text())
    pinned = lock["packages"][f"node_modules/{SDK}"]["version"]
    found = json.loads(installed.read_text())["version"]
    assert found == pinned, f"{SDK} {found} is installed, the lockfile pins {pinned}: npm ci"
    return node


def session(repo: Repo, plan: list[dict[str, Any]], *, write: bool = False) -> dict[str, Any]:
    """Run ``plan`` through the TypeScript client against ``capsule mcp`` on ``repo``."""
    server = [sys.executable, "-m", "governance", "mcp", "--repo", str(repo.path)]
    done = subprocess.run(
        [_node(), str(CLIENT / "client.mjs"), "--", *server, *(["--enable-write"] * write)],
        input=json.dumps(plan),  # ASCII: a lone surrogate goes as its \ud800 escape
        capture_output=True,
        text=True,
        cwd=repo.path.parent,
        env=os.environ,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout)
    assert "Traceback" not in report["stderr"], report["stderr"]
    return report


def results(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each step's result; a step the client raised on fails the test."""
    for step in report["steps"]:
        assert "error" not in step, step
    return [step["result"] for step in report["steps"]]


def code_of(result: dict[str, Any]) -> str:
    """The code of a tool error as a host reads it back."""
    assert result.get("isError") is True, result
    assert "structuredContent" not in result, result
    human, machine = result["content"]
    assert human["type"] == machine["type"] == "text"
    code: str = json.loads(machine["text"])["error"]["code"]
    assert human["text"].startswith(f"error [{code}]: "), human["text"]
    return code


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"op": "callTool", "name": "capsule_" + name, "arguments": arguments}


@pytest.fixture
def record(repo: Repo, cli: Any) -> str:
    """P-1's record committed, and its path."""
    result: Result = cli(["build", P1, "--record", "--json"], cwd=repo.path)
    assert result.code == 0, result
    path = str(json.loads(result.out)["record"])
    repo.commit("the record")
    return path


def test_the_handshake_and_the_tool_list(repo: Repo) -> None:
    report = session(repo, [{"op": "listTools"}, {"op": "listPrompts"}])
    assert report["server"]["name"] == "git-capsule"
    assert "capsule_build" in report["instructions"]
    # Regression: an empty prompts capability was advertised.
    assert set(report["capabilities"]) == {"tools", "resources"}
    listed, prompts = report["steps"]
    assert prompts["error"]["code"] == -32601
    tools = listed["result"]["tools"]
    assert [t["name"] for t in tools] == list(TOOLS)
    for entry in tools:
        assert entry["title"]
        assert entry["annotations"]["readOnlyHint"] is True
        assert entry["outputSchema"]["type"] == "object"
        for name, prop in entry["inputSchema"]["properties"].items():
            assert prop["description"], (entry["name"], name)


def test_every_tool_with_good_input(repo: Repo, record: str, cli: Any) -> None:
    capsule = (repo.path / record).read_text(encoding="utf-8")
    plan = [
        {"op": "listTools"},
        tool("list_packets"),
        tool("build", packet="P-1"),
        tool("build", packet=P1, render=True, exact_tokens=True),
        tool("outline", path="docs/roadmap.md"),
        tool("suggest", goal="second phase nested details", max_reads=2),
        tool("verify", capsule=capsule),
        tool("verify", path=record),
        tool("status", all=True),
        tool("replay", path=record),
        tool("replay", capsule=capsule),
        tool("check", all=True),
        tool("check", packets=["P-1"]),
        tool("audit"),
        tool("audit", range=f"{Path(record).stem}..HEAD"),
    ]
    report = session(repo, plan)
    (
        _,
        packets,
        built,
        rendered,
        outline,
        suggested,
        verified,
        verified_path,
        statused,
        replayed,
        replayed_text,
        checked,
        named,
        audited,
        ranged,
    ) = results(report)
    for result in results(report)[1:]:
        assert not result.get("isError"), result
        assert isinstance(result["structuredContent"], dict)
    assert packets["structuredContent"]["packets"] == [{"id": "P-1", "path": P1}]
    # At HEAD, the record's commit is HEAD's parent: the capsule's bytes differ only there.
    value = built["structuredContent"]
    assert built["content"] == [{"type": "text", "text": value["capsule_json"]}]
    assert value["exact_tokens"] is None
    assert rendered["content"][0]["text"].startswith("# Capsule `P-1`")
    assert rendered["structuredContent"]["exact_tokens"]["count"] > 0
    assert outline["structuredContent"]["headings"][1]["locator"] == "docs/roadmap.md#phase-1"
    assert suggested["structuredContent"]["reads"]
    assert verified["structuredContent"]["ok"] is True
    assert verified_path["structuredContent"]["parts"] == verified["structuredContent"]["parts"]
    printed = cli(["status", "--all", "--json"], cwd=repo.path)
    assert statused["structuredContent"] == {
        k: v for k, v in json.loads(printed.out).items() if k != "strict"
    }
    assert statused["structuredContent"]["records"][0]["path"] == record
    assert replayed["structuredContent"]["identical"] is True
    assert replayed_text["structuredContent"]["identical"] is True
    assert checked["structuredContent"]["ok"] is True
    assert named["structuredContent"]["packets"][0]["path"] == P1
    printed = cli(["audit", "--json", "--jobs", "1"], cwd=repo.path)
    assert audited["structuredContent"] == json.loads(printed.out)
    assert ranged["structuredContent"]["counts"]["records"] == 1


def test_each_class_of_bad_input_reads_back_its_code(repo: Repo) -> None:
    repo.write("packets/P-2/packet.yml", packet_yaml("P-2", ["docs/roadmap.md#phase-9"]))
    repo.write("packets/P-2/context.md", "# Context\n")
    repo.commit("a packet reading a heading that is not there")
    cases = [
        # unknown tool (regression: an uncoded "Unknown tool: build")
        ({"op": "callTool", "name": "build", "arguments": {"packet": P1}}, "unknown_tool"),
        # wrongly typed (regression: "yes" was true), missing, extra
        (tool("check", all="yes"), "invalid_arguments"),
        (tool("suggest", goal="phase", max_reads="2"), "invalid_arguments"),
        (tool("build"), "invalid_arguments"),
        (tool("build", packet=P1, extra=1), "invalid_arguments"),
        # a lone surrogate (regression: no answer; the client timed out)
        (tool("outline", path="\ud800"), "invalid_arguments"),
        (tool("build", packet="P-\udc00"), "invalid_arguments"),
        (tool("check", packets=["\udfff"]), "invalid_arguments"),
        # paths (regression: every one an output-schema failure in the client)
        (tool("outline", path="../../etc/passwd"), "unsafe_path"),
        (tool("build", packet="/etc/passwd"), "path_outside_repository"),
        (tool("build", packet="P 1"), "invalid_packet_id"),
        (tool("build", packet="P-9"), "source_missing"),
        (tool("build", packet="P-2"), "heading_missing"),
        (tool("build", packet=P1, at="main"), "invalid_revision"),
        (tool("build", packet=P1, record=True), "write_disabled"),
        (tool("verify", capsule="{}"), "unsupported_schema"),
        (tool("verify"), "usage"),
        (tool("replay", path="absent.json"), "source_missing"),
        (tool("suggest", goal="the of and"), "goal_empty"),
        (tool("check"), "usage"),
        (tool("audit", range="nope..HEAD"), "invalid_revision"),
        (tool("status", all=1), "invalid_arguments"),
    ]
    report = session(repo, [{"op": "listTools"}, *(step for step, _ in cases)])
    got = [code_of(result) for result in results(report)[1:]]
    assert got == [code for _, code in cases]
    missing = results(report)[1 + [c for _, c in cases].index("heading_missing")]
    assert "advice: restore the heading" in missing["content"][0]["text"]


def test_resources_and_their_templates(repo: Repo, record: str) -> None:
    plan = [
        {"op": "listResources"},
        {"op": "listResourceTemplates"},
        {"op": "readResource", "uri": "capsule://packets/P-1"},
        {"op": "readResource", "uri": f"capsule://{record}"},
        {"op": "readResource", "uri": "capsule://packets/P-9"},
        {"op": "readResource", "uri": "capsule://packets/P-1/\ud800"},
    ]
    listed, templates, capsule, recorded, missing, surrogate = session(repo, plan)["steps"]
    uris = [r["uri"] for r in listed["result"]["resources"]]
    assert uris[0] == "capsule://packets/P-1"
    assert f"capsule://{record}" in uris
    first = templates["result"]["resourceTemplates"][0]
    assert first["uriTemplate"] == "capsule://packets/{id}"
    assert json.loads(capsule["result"]["contents"][0]["text"])["id"] == "P-1"
    assert recorded["result"]["contents"][0]["text"] == (repo.path / record).read_text()
    assert missing["error"]["code"] == -32002
    assert "error [source_missing]" in missing["error"]["message"]
    assert missing["error"]["data"]["code"] == "source_missing"
    assert surrogate["error"]["data"]["code"] == "invalid_arguments"


def test_record_under_enable_write(repo: Repo) -> None:
    report = session(
        repo, [{"op": "listTools"}, tool("build", packet="P-1", record=True)], write=True
    )
    _, built = results(report)
    written = built["structuredContent"]["record"]
    assert written["status"] == "written"
    assert (repo.path / written["path"]).read_text() == built["structuredContent"]["capsule_json"]
