"""Benchmark ``capsule cgp`` and signed records.

Usage::

    .venv/bin/python bench/bench_cgp.py [--runs N] [--smoke]

Generates bench_build.py's docs repository (200 Markdown files, packets of 8
reads, half whole files and half ``#heading`` reads) in a temp folder, then:

* start-up: spawn ``capsule cgp``, send the handshake, read the ack; each run
  a fresh process;
* anchored query: one provider, ``--runs`` queries per packet (each builds the
  packet's capsule at HEAD and returns its ten frames), timed from the line
  written to the reply read;
* verify: the frames of a packet verified against HEAD (one capsule rebuilt
  and ``capsule verify`` run on it);
* signing: ``capsule sign`` of one record (ssh-keygen -Y sign), and the check of
  its signature (two ssh-keygen runs: check-novalidate and verify).

Nothing is asserted: this script only prints figures. ``--smoke`` is the
smallest setting (20 files, one run) for a quick check that it still works.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from governance.history.signatures import check_signature, signers_from

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_build  # noqa: E402
import user_install  # noqa: E402 (every measured process runs from a regular install)
from bench_build import make_docs_repo  # noqa: E402


def stats(label: str, samples: list[float]) -> None:
    ms = sorted(s * 1000 for s in samples)
    print(
        f"{label:<44} median {statistics.median(ms):7.1f} ms  min {ms[0]:7.1f}  "
        f"max {ms[-1]:7.1f}  n={len(ms)}"
    )


class Provider:
    def __init__(self, repo: Path) -> None:
        install = user_install.get()
        self.process = subprocess.Popen(
            [install.python, "-m", "governance", "cgp", "--repo", str(repo)],
            cwd=repo,
            env=install.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.buffer = b""

    def ask(self, envelope: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(envelope).encode() + b"\n")
        self.process.stdin.flush()
        fd = self.process.stdout.fileno()
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([fd], [], [], 120)
            assert ready, "no reply"
            self.buffer += os.read(fd, 1 << 20)
        line, _, self.buffer = self.buffer.partition(b"\n")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


HANDSHAKE = {"type": "handshake", "protocol_version": "contextgraph/1.0"}


def query(packet: str) -> dict[str, Any]:
    body = {"goal": "bench", "anchors": [f"capsule://packets/{packet}"]}
    return {"type": "query", "id": packet, "query": {**body, "max_frames": 64, "max_tokens": 10**6}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per operation")
    parser.add_argument("--smoke", action="store_true", help="smallest setting (20 files, one run)")
    args = parser.parse_args()
    if args.smoke:
        args.runs = 1
        bench_build.N_FILES = 20
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    print(user_install.NOTE)
    python, env = user_install.get().python, user_install.get().env()
    with tempfile.TemporaryDirectory(prefix="bench-cgp-") as folder:
        root = Path(folder)
        git, packets, _ = make_docs_repo(root / "docs")
        repo = git.path
        ids = [packet.id for packet in packets]

        starts = []
        for _ in range(args.runs):
            began = time.perf_counter()
            provider = Provider(repo)
            assert provider.ask(HANDSHAKE)["type"] == "handshake_ack"
            starts.append(time.perf_counter() - began)
            provider.close()
        stats("start-up to handshake_ack", starts)

        provider = Provider(repo)
        provider.ask(HANDSHAKE)
        frames: dict[str, list[dict[str, Any]]] = {}
        for packet in ids:  # warm: the first query of each packet
            frames[packet] = provider.ask(query(packet))["result"]["frames"]
        queries = []
        for _ in range(args.runs):
            for packet in ids:
                began = time.perf_counter()
                reply = provider.ask(query(packet))
                queries.append(time.perf_counter() - began)
                assert reply["type"] == "frames", reply
        count = len(frames[ids[0]])
        size = sum(len(f["content"].encode()) for f in frames[ids[0]])
        stats(f"anchored query ({count} frames, {size:,} bytes)", queries)
        verifies = []
        for _ in range(args.runs):
            for packet in ids:
                identities = [
                    {
                        "provider_id": "git-capsule",
                        "frame_id": f["id"],
                        "content_digest": f["content_digest"],
                    }
                    for f in frames[packet]
                ]
                began = time.perf_counter()
                reply = provider.ask({"type": "verify", "request": {"frames": identities}})
                verifies.append(time.perf_counter() - began)
                assert {v["status"] for v in reply["response"]["verdicts"]} == {"valid"}
        stats(f"verify ({count} frames)", verifies)
        provider.close()

        key = root / "key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        done = subprocess.run(
            [python, "-m", "governance", "build", packets[0].path, "--record", "--json"],
            cwd=repo,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        record = repo / json.loads(done.stdout)["record"]
        signs = []
        for _ in range(args.runs):
            began = time.perf_counter()
            subprocess.run(
                [python, "-m", "governance", "sign", str(record), "--key", str(key)],
                cwd=repo,
                env=env,
                check=True,
                capture_output=True,
            )
            signs.append(time.perf_counter() - began)
        stats(f"capsule sign ({record.stat().st_size:,}-byte record)", signs)

        sys.path.insert(0, str(HERE.parent))

        public = " ".join((root / "key.pub").read_text().split()[:2])
        signers = signers_from("bench", f"bench@example.org {public}\n".encode(), b"")
        data, signature = record.read_bytes(), Path(f"{record}.sig").read_bytes()
        checks = []
        for _ in range(args.runs):
            began = time.perf_counter()
            result = check_signature(data, signature, signers, when=datetime.now(UTC))
            checks.append(time.perf_counter() - began)
            assert result.status == "signed", result
        stats("signature check (in process)", checks)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
