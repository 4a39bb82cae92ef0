"""Benchmark ``capsule outline``: every heading of a large Markdown file with
the shortest selector naming it.

    python bench/bench_outline.py [--runs N] [--keps N ...] [--smoke]

Generates, per ``--keps`` size, one file of that many seeded KEP-like
documents (a title, three sections, three subsections each with a Notes
under it: slugs repeat everywhere, as in kubernetes/enhancements), commits
it and times ``capsule outline FILE --json`` as a process, and the heading
parse alone in this process. Prints medians (min, max), the peak RSS of the
process, and how many headings got a bare, a qualified or no selector.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from governance.core.headings import parse_headings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# Beside this script: every measured process runs from a regular install of this tree.
import user_install

from support.gitrepo import Repo

TITLES = ["Summary", "Notes", "Alpha", "Beta", "GA", "Risks", "Test Plan", "Goals", "Upgrade"]


def document(keps: int) -> str:
    rng = random.Random(keps)
    out = []
    for k in range(keps):
        out.append(f"# KEP-{k}: Widgets {k}\n\nWhy this enhancement exists.\n\n")
        for section in ("Summary", "Motivation", "Design Details"):
            out.append(f"## {section}\n\nA paragraph of prose about it.\n\n")
            for sub in rng.sample(TITLES, 3):
                out.append(f"### {sub}\n\nMore words about {sub.lower()}.\n\n")
                out.append("#### Notes\n\nA note.\n\n")
    return "".join(out)


def outline(repo: Path) -> tuple[float, int, bytes]:
    """(seconds, peak RSS in KiB, stdout) of one ``capsule outline`` process."""
    install = user_install.get()
    with tempfile.TemporaryFile() as sink:
        start = time.perf_counter()
        process = subprocess.Popen(
            [install.script("capsule"), "outline", "kep.md", "--json"],
            cwd=repo,
            env=install.env(),
            stdout=sink,
            stderr=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            raise SystemExit(f"capsule outline exited {process.returncode}")
        sink.seek(0)
        return elapsed, usage.ru_maxrss, sink.read()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="measured runs per size")
    parser.add_argument("--keps", type=int, nargs="+", default=[100, 1000, 3000])
    parser.add_argument("--smoke", action="store_true", help="20 KEPs, one run")
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs, args.keps = 1, [20]

    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(user_install.NOTE)
    print(f"{'keps':>6} {'bytes':>11} {'headings':>9} {'bare':>7} {'qualified':>9} {'none':>5} "
          f"{'parse s':>8} {'outline s (min-max)':>22} {'peak MB':>8}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-outline-") as tmp:
        for keps in args.keps:
            repo = Repo(Path(tmp) / f"r{keps}")
            text = document(keps)
            repo.write("kep.md", text)
            repo.commit("corpus")
            start = time.perf_counter()
            parse_headings(text)
            parsed = time.perf_counter() - start
            times, peaks = [], []
            data = b""
            for _ in range(args.runs):
                elapsed, rss, data = outline(repo.path)
                times.append(elapsed)
                peaks.append(rss)
            headings = json.loads(data)["headings"]
            bare = sum(1 for h in headings if h["locator"] and "/" not in h["locator"])
            none = sum(1 for h in headings if h["locator"] is None)
            print(
                f"{keps:>6} {len(text.encode()):>11,} {len(headings):>9,} {bare:>7,} "
                f"{len(headings) - bare - none:>9,} {none:>5,} {parsed:>8.2f} "
                f"{statistics.median(times):>8.2f} ({min(times):.2f}-{max(times):.2f})"
                f"{max(peaks) / 1024:>12.0f}"
            )
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
