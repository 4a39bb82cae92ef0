"""Benchmark ``capsule suggest`` (issue 10): time and memory as a process, and how
they grow with the corpus.

Usage::

    .venv/bin/python bench/bench_suggest.py [--smoke] [--runs N] [--sizes 100,300,1000]
        [--keep DIR] [--pythonpath DIR]

Generates, per size, a git repository of that many Markdown files of about
30 KB each (seeded pseudo-random prose from a 4,000-word vocabulary, ``#`` /
``##`` / ``###`` headings, a fenced code block now and then, so 1,000 files
are about 30 MB), commits it, and runs ``python -m governance suggest GOAL
--json`` on it ``--runs`` times per goal, each as its own process reaped with
``os.wait4``: wall time is spawn to reap, CPU time (user + system, the median)
and peak RSS are that process's; on a loaded machine CPU time is the steadier
figure. Target
(1,000 files): at most 2 s median and 300 MB. Only printed, never asserted,
except that every run exits 0 and proposes at least one read. ``--smoke`` is
the smallest setting (20 files, one run) for a quick check that the script
works.
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

# The tests' shared helpers (tests/support): the policy text and the git
# environment exist once.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# Beside this script: every measured process runs from a regular install of this tree.
import user_install

from support.gitrepo import POLICY, git_env

SEED = 20261001
TARGET_S = 2.0
TARGET_MB = 300.0
FILE_BYTES = 30_000
GOALS = [
    "Compare the sharded replay and the incremental audit of records",
    'How does the "budget fixpoint" converge for a large capsule?',
    "Kubernetes Enhancement Proposals graduation criteria vs production readiness",
]
# Words the goals use, planted in the prose so every goal has candidates everywhere.
_PLANTED = (
    "sharded replay incremental audit records budget fixpoint converge capsule "
    "kubernetes enhancement proposals graduation criteria production readiness"
)
PLANTED = _PLANTED.split()


def vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {"".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(4000)}
    return sorted(words) + PLANTED


def paragraph(rng: random.Random, words: list[str]) -> str:
    # A skewed choice: a few words are common, most are rare (as in prose).
    n = rng.randint(30, 110)
    picked = [words[min(int(rng.paretovariate(1.1)) - 1, len(words) - 1)] for _ in range(n)]
    picked = [rng.choice(words) if rng.random() < 0.5 else w for w in picked]
    return " ".join(picked).capitalize() + ".\n\n"


def document(rng: random.Random, words: list[str], index: int) -> str:
    parts = [f"# Document {index} {rng.choice(words)}\n\n"]
    size = 0
    section = 0
    while size < FILE_BYTES:
        section += 1
        level = rng.choice(("##", "##", "###"))
        title = " ".join(rng.choice(words) for _ in range(rng.randint(1, 4)))
        parts.append(f"{level} {title.capitalize()} {section}\n\n")
        for _ in range(rng.randint(1, 5)):
            parts.append(paragraph(rng, words))
        if rng.random() < 0.1:
            parts.append("```sh\n# not a heading\ncapsule build packets/X/packet.yml\n```\n\n")
        size = sum(len(p) for p in parts)
    return "".join(parts)


def make_repo(where: Path, n_files: int) -> Path:
    repo = where / f"suggest-{n_files}"
    repo.mkdir(parents=True)
    env = {**git_env(where), "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}  # fmt: skip
    git = ["git"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True, env=env)
    rng = random.Random(SEED)
    words = vocabulary(rng)
    (repo / "policies").mkdir()
    (repo / "policies/capsule.yml").write_text(POLICY)
    for index in range(n_files):
        folder = repo / "docs" / f"part{index % 20:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"doc{index:04d}.md").write_text(document(rng, words, index))
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run([*git, "commit", "-qm", "corpus"], cwd=repo, check=True, env=env)
    return repo


def measure(repo: Path, goal: str, pythonpath: str | None) -> tuple[float, float, float, dict]:
    install = user_install.get()
    env = install.env()
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    start = time.perf_counter()
    proc = subprocess.Popen(
        [install.python, "-m", "governance", "suggest", goal, "--json"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.stdout.close()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, err.decode(errors="replace")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, json.loads(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="smallest setting, one run")
    parser.add_argument("--runs", type=int, default=5, help="runs per goal and size")
    parser.add_argument("--sizes", default="100,300,1000", help="corpus sizes, in files")
    parser.add_argument("--keep", type=Path, help="generate the repositories here and keep them")
    parser.add_argument("--pythonpath", help="run the governance package found here")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.sizes.split(",")]
    if args.smoke:
        args.runs, sizes = 1, [20]
    print(f"load average at start: {os.getloadavg()}")
    print(user_install.NOTE)
    print(f"{'files':>6} {'MB':>6} {'sections':>9} {'median s':>9} {'min s':>6} {'max s':>6} "
          f"{'cpu s':>6} {'peak MB':>8}  reads per goal")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep if args.keep is not None else Path(tmp)
        for n_files in sizes:
            repo = make_repo(where, n_files)
            times, cpus, peaks, reads = [], [], [], []
            sections = n_bytes = 0
            for goal in GOALS:
                for _ in range(args.runs):
                    seconds, cpu, peak, result = measure(repo, goal, args.pythonpath)
                    times.append(seconds)
                    cpus.append(cpu)
                    peaks.append(peak)
                assert result["reads"], goal
                reads.append(len(result["reads"]))
                sections, n_bytes = result["corpus"]["sections"], result["corpus"]["bytes"]
            print(
                f"{n_files:>6} {n_bytes / 1e6:>6.1f} {sections:>9,} "
                f"{statistics.median(times):>9.3f} {min(times):>6.3f} {max(times):>6.3f} "
                f"{statistics.median(cpus):>6.3f} {max(peaks):>8.0f}  {reads}"
            )
    print(f"target at 1,000 files: median <= {TARGET_S:g} s, peak RSS <= {TARGET_MB:g} MB "
          f"({len(GOALS)} goals x {args.runs} runs per size)")  # fmt: skip
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
