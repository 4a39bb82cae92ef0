"""Benchmark ``capsule check --all``: every packet of a repository built and
checked at HEAD, nothing emitted.

    python bench/bench_check.py [--runs N] [--packets N ...] [--smoke]

Generates, per ``--packets`` size, the repository bench_hook.py makes (50
shared documents of 20 sections, each packet reading a section and a whole
file), commits it and times ``capsule check --all`` as a process, the sizes
interleaved round by round so a busy machine slows them alike. Prints the
median (min, max) per size, the cost of one packet from the slope, and the
machine's load. Target (issue 13): 1,000 packets in at most 1.5 s. Nothing is
asserted; the one check is that every packet would build (exit 0).
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

# The tests' shared helpers (tests/support): the git environment exists once.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# Beside this script: every measured process runs from a regular install of this tree.
import user_install
from bench_hook import make_repo

from support.gitrepo import Repo, git_env

TARGET_S = 1.5


def check_all(repo: Path) -> float:
    install = user_install.get()
    start = time.perf_counter()
    done = subprocess.run(
        [install.script("capsule"), "check", "--all"],
        cwd=repo,
        env=install.env(),
        capture_output=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"capsule check --all exited {done.returncode}: {done.stderr[-2000:]!r}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="measured runs per size")
    parser.add_argument("--packets", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--smoke", action="store_true", help="20 packets, one run")
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs, args.packets = 1, [20]
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(user_install.NOTE)
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        repos = {}
        for size in args.packets:
            repo = make_repo(Path(tmp), size, 0)
            # The staged edit bench_hook makes is not wanted here.
            Repo(repo, git_env(Path(tmp) / "home"), init=False).git("reset", "-q", "--hard")
            repos[size] = repo
            check_all(repo)  # warm-up: page cache and .pyc files
        times: dict[int, list[float]] = {size: [] for size in args.packets}
        for _ in range(args.runs):
            for size, repo in repos.items():
                times[size].append(check_all(repo))
    print(f"{'packets':>8} {'median s':>9} {'min s':>7} {'max s':>7} {'ms/packet':>10}")
    for size in args.packets:
        values = times[size]
        median = statistics.median(values)
        print(
            f"{size:>8} {median:9.3f} {min(values):7.3f} {max(values):7.3f} "
            f"{median * 1000 / size:10.2f}"
        )
    if len(args.packets) > 1:
        small, large = min(args.packets), max(args.packets)
        slope = (statistics.median(times[large]) - statistics.median(times[small])) / (
            large - small
        )
        print(f"each packet adds {slope * 1000:.2f} ms")
    if 1000 in times:
        headline = statistics.median(times[1000])
        verdict = "meets" if headline <= TARGET_S else "MISSES"
        print(f"1,000 packets: {headline:.3f} s median ({verdict} the {TARGET_S} s target)")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
