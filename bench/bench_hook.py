"""Benchmark: the ``capsule-packets`` hook as a process, one source document staged.

Builds repositories of TOTAL packets in a temp folder, where AFFECTED of them
read the one document that gets staged and the rest read other documents, then
times ``capsule-packets docs/target.md`` (what pre-commit runs) as a separate
process, several times, and prints the median wall time.

Two sweeps show what the time follows: the total number of packets at a fixed
number of affected ones, and the number of affected packets at a fixed total.
Target: at most 500 ms median with 1,000 packets and one affected.

    python bench/bench_hook.py [--runs N] [--json FILE] [--smoke]

``--smoke`` is the smallest setting (10 and 100 packets, one run) for a quick
check that the script still works.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The tests' shared helpers (tests/support): the policy text, the packet helper
# and the git environment exist once.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# Beside this script: every measured process runs from a regular install of this tree.
import user_install

from support.gitrepo import POLICY, Repo, git_env, packet_yaml

OTHER_DOCS = 50
SECTIONS = 20


def document(title: str) -> str:
    parts = [f"# {title}\n\nAbout {title}.\n"]
    for n in range(SECTIONS):
        parts.append(f"\n## Section {n}\n\nThe text of section {n} of {title}, long enough.\n")
    return "".join(parts)


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
        (folder / "packet.yml").write_text(packet_yaml(packet_id, reads))
        (folder / "context.md").write_text(f"# {packet_id}\n\nWhy {packet_id} exists.\n")
    git = Repo(repo, env=git_env(root / "home"))
    git.commit("bench")
    # Stage one source document: a new paragraph at the end of its last section.
    with open(docs / "target.md", "a", encoding="utf-8") as handle:
        handle.write("\nOne more paragraph, staged.\n")
    git.git("add", "docs/target.md")
    return repo


def run_hook(repo: Path) -> float:
    install = user_install.get()
    start = time.perf_counter()
    done = subprocess.run(
        [install.script("capsule-packets"), "docs/target.md"],
        cwd=repo,
        env=install.env(),
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"capsule-packets failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return elapsed


def time_startup(runs: int) -> float:
    install = user_install.get()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [install.script("capsule-packets"), "--help"],
            env=install.env(),
            capture_output=True,
            check=True,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per case (median)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument(
        "--smoke", action="store_true", help="smallest setting (10 and 100 packets, one run)"
    )
    args = parser.parse_args()

    # (total, affected); 0 affected times the reverse index and the imports alone.
    small, large = (10, 100) if args.smoke else (100, 1000)
    if args.smoke:
        args.runs = 1
    cases = [(total, affected) for affected in (0, 1, 10, 100) for total in (small, large)]
    cases = [(total, affected) for total, affected in cases if affected <= total]
    rows = []
    print(user_install.NOTE)
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
    both = [a for a in (0, 1, 10, 100) if (small, a) in ms and (large, a) in ms]
    per_packet = statistics.median((ms[large, a] - ms[small, a]) / (large - small) for a in both)
    per_affected = (ms[large, 100] - ms[large, 1]) / 99
    print(
        f"each packet in the repository adds {per_packet:.3f} ms; "
        f"each affected packet adds {per_affected:.2f} ms"
    )
    headline = next(r for r in rows if r["total"] == large and r["affected"] == 1)
    verdict = "meets" if headline["median_ms"] <= 500 else "MISSES"
    print(
        f"{large:,} packets, 1 affected: {headline['median_ms']:.1f} ms median "
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
