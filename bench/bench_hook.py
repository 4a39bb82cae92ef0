"""Benchmark: the ``capsule-packets`` hook as a process, one source document staged.

Builds repositories of TOTAL packets in a temp folder, where AFFECTED of them
read the one document that gets staged and the rest read other documents, then
times ``capsule-packets docs/target.md`` (what pre-commit runs) as a separate
process, several times, and prints the median wall time.

Two sweeps show what the time follows: the total number of packets at a fixed
number of affected ones, and the number of affected packets at a fixed total.
Target: at most 500 ms median with 1,000 packets and one affected.

    python bench/bench_hook.py [--runs N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POLICY = """\
target_tokens: 12000
hard_limit_tokens: 16000
reserve_tokens: 1500
max_required_reads: 8
estimator: utf8_bytes_div_3_ceil
"""
OTHER_DOCS = 50
SECTIONS = 20


def document(title: str) -> str:
    parts = [f"# {title}\n\nAbout {title}.\n"]
    for n in range(SECTIONS):
        parts.append(f"\n## Section {n}\n\nThe text of section {n} of {title}, long enough.\n")
    return "".join(parts)


def packet(packet_id: str, reads: list[str]) -> str:
    lines = [
        f"id: {packet_id}",
        f"title: Work item {packet_id}",
        "objective: Carry the work forward.",
        "scope: docs",
        "dependencies: []",
        "contracts: []",
        "required_reads:",
        *[f'  - "{read}"' for read in reads],
    ]
    return "\n".join(lines) + "\n"


def git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def make_repo(root: Path, total: int, affected: int) -> Path:
    repo = root / f"repo-{total}-{affected}"
    (repo / "policies").mkdir(parents=True)
    (repo / "policies/capsule.yml").write_text(POLICY)
    docs = repo / "docs"
    docs.mkdir()
    (docs / "target.md").write_text(document("Target"))
    for n in range(OTHER_DOCS):
        (docs / f"other-{n:03d}.md").write_text(document(f"Other {n}"))
    for n in range(total):
        packet_id = f"P-{n:05d}"
        folder = repo / "packets" / packet_id
        folder.mkdir(parents=True)
        reads = [
            f"docs/other-{n % OTHER_DOCS:03d}.md#section-{n % SECTIONS}",
            f"docs/other-{(n * 7 + 3) % OTHER_DOCS:03d}.md",
        ]
        if n < affected:
            reads.insert(0, f"docs/target.md#section-{n % SECTIONS}")
        (folder / "packet.yml").write_text(packet(packet_id, reads))
        (folder / "context.md").write_text(f"# {packet_id}\n\nWhy {packet_id} exists.\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bench")
    # Stage one source document: a new paragraph at the end of its last section.
    with open(docs / "target.md", "a", encoding="utf-8") as handle:
        handle.write("\nOne more paragraph, staged.\n")
    git(repo, "add", "docs/target.md")
    return repo


def run_hook(repo: Path) -> float:
    hook = Path(sys.executable).with_name("capsule-packets")
    start = time.perf_counter()
    done = subprocess.run(
        [str(hook), "docs/target.md"], cwd=repo, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"capsule-packets failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return elapsed


def time_startup(runs: int) -> float:
    hook = Path(sys.executable).with_name("capsule-packets")
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([str(hook), "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per case (median)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()

    # (total, affected); 0 affected times the reverse index and the imports alone.
    cases = [(100, 0), (1000, 0), (100, 1), (1000, 1), (100, 10), (1000, 10), (100, 100),
             (1000, 100)]  # fmt: skip
    rows = []
    startup = time_startup(args.runs)
    print(f"interpreter start (capsule-packets --help): {startup * 1000:.1f} ms", flush=True)
    print(f"{'total':>6} {'affected':>9} {'median ms':>10}")
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as tmp:
        repos = {case: make_repo(Path(tmp), *case) for case in cases}
        for repo in repos.values():
            run_hook(repo)  # warm the OS caches once
        # Round-robin over the cases, so a busy machine slows them all alike.
        times: dict[tuple[int, int], list[float]] = {case: [] for case in cases}
        for _ in range(args.runs):
            for case, repo in repos.items():
                times[case].append(run_hook(repo))
    for total, affected in cases:
        median = statistics.median(times[total, affected])
        rows.append({"total": total, "affected": affected, "median_ms": median * 1000})
        print(f"{total:>6} {affected:>9} {median * 1000:>10.1f}")
    ms = {(r["total"], r["affected"]): r["median_ms"] for r in rows}
    per_packet = statistics.median((ms[1000, a] - ms[100, a]) / 900 for a in (0, 1, 10, 100))
    per_affected = (ms[1000, 100] - ms[1000, 1]) / 99
    print(
        f"each packet in the repository adds {per_packet:.3f} ms; "
        f"each affected packet adds {per_affected:.2f} ms"
    )
    headline = next(r for r in rows if r["total"] == 1000 and r["affected"] == 1)
    verdict = "meets" if headline["median_ms"] <= 500 else "MISSES"
    print(
        f"1,000 packets, 1 affected: {headline['median_ms']:.1f} ms median "
        f"({verdict} the 500 ms target)"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "startup_ms": startup * 1000,
                    "runs": args.runs,
                    "per_packet_ms": per_packet,
                    "per_affected_ms": per_affected,
                    "cases": rows,
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
