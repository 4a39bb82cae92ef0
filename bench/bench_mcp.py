"""Benchmark ``capsule mcp`` as a host sees it: spawn to ``initialize``, the
first and the warm ``capsule_build``, and what an answer weighs.

Usage::

    .venv/bin/python bench/bench_mcp.py [--runs N] [--smoke]

Generates bench_build.py's docs repository (200 Markdown files, packets of 8
reads, half whole files and half ``#heading`` reads) in a temp folder, then:

* host side, the TypeScript SDK's client (tests/mcp_client, installed by
  ``make test``; skipped with a note when node or it is missing): ``--runs``
  fresh ``capsule mcp`` processes, each timed from spawn to the end of the
  initialize handshake, then ``tools/list``, the first ``capsule_build`` of
  the session and warm builds; and the bytes of a build answer (its JSON
  result, content and structured content) against the capsule's own;
* the same through the Python SDK's stdio client;
* warm build, in process: one server, the SDK's in-process client; the first
  call of each packet warms the server (its blob cache), then ``--runs``
  calls per packet are timed from call to answer; goal: median at most 50 ms;
* the CPU time a server spends to start, answer ``initialize`` and exit
  (steadier than wall time on a loaded machine); the import of the server
  module alone, and the interpreter's start.

Nothing is asserted: this script only prints figures. ``--smoke`` is the
smallest setting (20 files, one run) for a quick check that it still works.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from governance.agents.server import make_server
from governance.agents.tools import Workspace

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_build  # noqa: E402
import user_install  # noqa: E402 (every measured process runs from a regular install)
from bench_build import make_docs_repo  # noqa: E402

GOAL_WARM_BUILD_MS = 50.0
CLIENT = HERE.parent / "tests" / "mcp_client"


def stats(label: str, samples: list[float], goal: float | None = None) -> None:
    ms = sorted(s * 1000 for s in samples)
    median = statistics.median(ms)
    verdict = ""
    if goal is not None:
        verdict = f"  (goal <= {goal:.0f} ms: {'met' if median <= goal else 'MISSED'})"
    print(
        f"{label:<44} median {median:7.1f} ms  min {ms[0]:7.1f}  max {ms[-1]:7.1f}  "
        f"n={len(ms)}{verdict}"
    )


async def warm_builds(client: Any, packets: list[str], runs: int) -> list[float]:
    for packet in packets:
        first = await client.call_tool("capsule_build", {"packet": packet})
        assert not first.is_error, first.content
        assert first.structured_content["reads"] == 8
    samples = []
    for _ in range(runs):
        for packet in packets:
            started = time.perf_counter()
            result = await client.call_tool("capsule_build", {"packet": packet})
            samples.append(time.perf_counter() - started)
            assert not result.is_error
    return samples


def typescript_client(command: list[str], packet: str, runs: int, warm: int) -> None:
    """``runs`` sessions of the TypeScript SDK's client, each a fresh server."""
    node = shutil.which("node")
    if node is None or not (CLIENT / "node_modules").is_dir():
        print("host (TS client): skipped: no node, or no npm ci in tests/mcp_client")
        return
    plan = [{"op": "listTools"}] + [
        {"op": "callTool", "name": "capsule_build", "arguments": {"packet": packet}}
    ] * (1 + warm)
    connect, listing, first, later, ratios = [], [], [], [], []
    for _ in range(runs):
        done = subprocess.run(
            [node, str(CLIENT / "client.mjs"), "--", *command],
            input=json.dumps(plan),
            capture_output=True,
            text=True,
            check=True,
        )
        report = json.loads(done.stdout)
        steps = report["steps"]
        assert all("error" not in s and not s["result"].get("isError") for s in steps), steps
        connect.append(report["connectMs"] / 1000)
        listing.append(steps[0]["ms"] / 1000)
        first.append(steps[1]["ms"] / 1000)
        later += [s["ms"] / 1000 for s in steps[2:]]
        result = steps[1]["result"]
        sent = json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode()
        ratios.append((len(sent), result["structuredContent"]["bytes"]))
    stats("host (TS client): spawn to initialized", connect)
    stats("host (TS client): tools/list", listing)
    stats("host (TS client): first capsule_build", first)
    stats("host (TS client): warm capsule_build", later, GOAL_WARM_BUILD_MS)
    answer, capsule = ratios[0]
    print(
        f"host (TS client): a build answer is {answer:,} bytes for a {capsule:,}-byte capsule "
        f"({answer / capsule:.2f} times)"
    )


HELLO = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
).encode()


def server_cpu(command: list[str], cwd: str) -> float:
    """The CPU seconds a server spends from its start to its initialize answer
    and its exit: steadier than wall time on a loaded machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd)
    assert server.stdin is not None
    assert server.stdout is not None
    server.stdin.write(HELLO + b"\n")
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["id"] == 0
    server.stdin.close()
    server.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="measured calls per packet")
    parser.add_argument(
        "--smoke", action="store_true", help="smallest setting (20 files, one run): checks it runs"
    )
    args = parser.parse_args()
    if args.smoke:
        bench_build.N_FILES = 20
        args.runs = 1
    print(f"load average at start: {os.getloadavg()}")
    print(user_install.NOTE)
    install = user_install.get()
    sessions = max(3, args.runs // 3)
    with tempfile.TemporaryDirectory() as tmp:
        git, packets, total = make_docs_repo(Path(tmp) / "docs-repo")
        repo = str(git.path)
        paths = [p.path for p in packets]
        print(f"repository: {len(paths)} packets of 8 reads over {total:,} bytes of Markdown")
        command = [install.python, "-m", "governance", "mcp", "--repo", repo]
        typescript_client(command, paths[0], sessions, args.runs)

        cpu = [server_cpu(command, repo) for _ in range(sessions)]
        stats("server CPU (user+sys): start, initialize, exit", cpu)

        params = StdioServerParameters(
            command=command[0], args=command[1:], env={"PATH": install.env()["PATH"]}, cwd=repo
        )

        async def python_session() -> tuple[float, float, float, list[float]]:
            started = time.perf_counter()
            async with Client(params, mode="legacy") as client:
                connected = time.perf_counter() - started
                begun = time.perf_counter()
                await client.list_tools()
                listed = time.perf_counter() - begun
                begun = time.perf_counter()
                built = await client.call_tool("capsule_build", {"packet": paths[0]})
                first = time.perf_counter() - begun
                assert not built.is_error, built.content
                return connected, listed, first, await warm_builds(client, paths[:1], args.runs)

        runs = [anyio.run(python_session) for _ in range(sessions)]
        stats("Python SDK stdio client: spawn to initialized", [r[0] for r in runs])
        stats("Python SDK stdio client: tools/list", [r[1] for r in runs])
        stats("Python SDK stdio client: first capsule_build", [r[2] for r in runs])
        stats(
            "Python SDK stdio client: warm capsule_build",
            [t for r in runs for t in r[3]],
            GOAL_WARM_BUILD_MS,
        )

        async def in_process() -> list[float]:
            async with Client(make_server(Workspace.open(repo))) as client:
                return await warm_builds(client, paths, args.runs)

        stats("warm build, in-process client", anyio.run(in_process), GOAL_WARM_BUILD_MS)
        imports = []
        for _ in range(sessions):
            started = time.perf_counter()
            subprocess.run(
                [install.python, "-c", "import governance.agents.server"],
                check=True,
                cwd=repo,
                env=install.env(),
            )
            imports.append(time.perf_counter() - started)
        stats("python -c 'import governance.agents.server'", imports)
        floor = []
        for _ in range(sessions):
            started = time.perf_counter()
            subprocess.run([install.python, "-c", "pass"], check=True, env=install.env())
            floor.append(time.perf_counter() - started)
        stats("floor: python -c pass", floor)
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
