"""Benchmark ``capsule mcp``: a warm ``build`` call inside the server, and the
server's start-up.

Usage::

    .venv/bin/python bench/bench_mcp.py [--runs N] [--smoke]

Generates bench_build.py's docs repository (200 Markdown files, packets of 8
reads, half whole files and half ``#heading`` reads) in a temp folder, then:

* warm build, in process: one server, the SDK's in-process client; the first
  call of each packet warms the server (its blob cache, the tokenizer), then
  ``--runs`` calls per packet are timed from call to answer; goal: median at
  most 50 ms;
* warm build, over stdio: the same through ``capsule mcp`` as a subprocess
  and the SDK's stdio client (JSON-RPC framing, pipes, a second process);
* start-up: spawn ``capsule mcp`` and complete the initialize handshake and
  ``tools/list``, each run a fresh process; and the import of the server
  module alone.

Nothing is asserted: this script only prints figures. ``--smoke`` is the
smallest setting (20 files, one run) for a quick check that it still works.
"""

from __future__ import annotations

import argparse
import os
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
        first = await client.call_tool("build", {"packet": packet})
        assert not first.is_error, first.content
        assert first.structured_content["reads"] == 8
    samples = []
    for _ in range(runs):
        for packet in packets:
            started = time.perf_counter()
            result = await client.call_tool("build", {"packet": packet})
            samples.append(time.perf_counter() - started)
            assert not result.is_error
    return samples


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
    with tempfile.TemporaryDirectory() as tmp:
        git, packets, total = make_docs_repo(Path(tmp) / "docs-repo")
        repo = str(git.path)
        paths = [p.path for p in packets]
        print(f"repository: {len(paths)} packets of 8 reads over {total:,} bytes of Markdown")

        async def in_process() -> list[float]:
            async with Client(make_server(Workspace.open(repo))) as client:
                return await warm_builds(client, paths, args.runs)

        stats("warm build, in-process client", anyio.run(in_process), GOAL_WARM_BUILD_MS)

        params = StdioServerParameters(
            command=install.python,
            args=["-m", "governance", "mcp", "--repo", repo],
            env={"PATH": install.env()["PATH"]},
            cwd=repo,
        )

        async def over_stdio() -> list[float]:
            async with Client(params, mode="legacy") as client:
                return await warm_builds(client, paths, args.runs)

        stats("warm build, stdio client and subprocess", anyio.run(over_stdio), GOAL_WARM_BUILD_MS)

        async def start_once() -> float:
            started = time.perf_counter()
            async with Client(params, mode="legacy") as client:
                listed = await client.list_tools()
                took = time.perf_counter() - started
                assert len(listed.tools) >= 6
            return took

        stats(
            "start-up: spawn, initialize, tools/list",
            [anyio.run(start_once) for _ in range(max(3, args.runs // 3))],
        )
        imports = []
        for _ in range(max(3, args.runs // 3)):
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
        for _ in range(max(3, args.runs // 3)):
            started = time.perf_counter()
            subprocess.run([install.python, "-c", "pass"], check=True, env=install.env())
            floor.append(time.perf_counter() - started)
        stats("floor: python -c pass", floor)
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
