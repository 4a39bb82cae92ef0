"""Benchmark the heading-source limit (issue 9, items 2 and 3).

Usage::

    .venv/bin/python bench/bench_heading_limit.py [--smoke] [--runs N] [--keep DIR]
        [--limit BYTES] [--huge BYTES] [--pythonpath DIR]

Generates a git repository in a temp folder (or in DIR with ``--keep``) with
two packets:

* ``ADMIT``: eight ``#heading`` reads into one Markdown source of exactly the
  policy's ``max_heading_source_bytes`` (the largest source a heading read
  admits; 4 MiB by default), so the build parses it, once;
* ``REFUSE``: one ``#heading`` read into a source of ``--huge`` bytes (100 MiB
  by default), which must be refused (exit 3, ``source_too_large``) from its
  object header, before it is inflated.

Each build is its own process (``python -m governance build``), reaped with
``os.wait4``: wall time is spawn to reap, peak RSS is that process's. Targets:
the admitted build under 2 s and 300 MB, the refusal under 1 s. Nothing is
asserted about time; the exit codes are asserted. ``--smoke`` is the smallest
setting (a 256 KiB limit, a 1 MiB refused source, one run) for a quick check
that the script still works. ``--pythonpath DIR`` runs the ``governance`` of
another checkout (to measure before a change).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The tests' shared helpers (tests/support): the packet helper and the git
# environment exist once.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# Beside this script: every measured process runs from a regular install of this tree.
import user_install

from support.gitrepo import Repo, git_env, packet_yaml

SEED = 20260109
TARGET_ADMIT_S = 2.0
TARGET_ADMIT_MB = 300.0
TARGET_REFUSE_S = 1.0
READS = 8
DEFAULT_LIMIT = 4 << 20
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


def write_markdown(path: Path, size: int, rng: random.Random) -> None:
    """Exactly ``size`` bytes of Markdown, ``## Section N`` headings over prose,
    written in pieces: the benchmark's own peak RSS stays small, as a child's
    figure on Linux starts from its parent's."""
    written = 0
    n = 0
    with path.open("wb") as out:
        chunk = b"# Big\n\n"
        while written + len(chunk) < size:
            out.write(chunk)
            written += len(chunk)
            n += 1
            para = " ".join(rng.choice(WORDS) for _ in range(150))
            chunk = f"## Section {n}\n\n{para}\n\n{para}\n\n".encode()
        out.write(chunk[: size - written - 1] + b"\n")


def make_repo(where: Path, limit: int, huge: int) -> Path:
    repo = where / "limit-repo"
    git = Repo(repo, env=git_env(where / "home"))
    rng = random.Random(SEED)
    (repo / "policies").mkdir()
    # The default limit is left implicit, so a checkout without the key can run it.
    setting = "" if limit == DEFAULT_LIMIT else f"max_heading_source_bytes: {limit}\n"
    (repo / "policies/capsule.yml").write_text("# Benchmark policy.\n" + setting)
    (repo / "docs").mkdir()
    write_markdown(repo / "docs/admitted.md", limit, rng)
    write_markdown(repo / "docs/huge.md", huge, rng)
    reads = [f"docs/admitted.md#section-{n}" for n in range(1, READS + 1)]
    for packet_id, its_reads in (("ADMIT", reads), ("REFUSE", ["docs/huge.md#section-1"])):
        folder = repo / "packets" / packet_id
        folder.mkdir(parents=True)
        text = packet_yaml(
            packet_id,
            its_reads,
            title="Heading-limit benchmark",
            objective="Measure heading reads of large sources.",
        )
        (folder / "packet.yml").write_text(text)
        (folder / "context.md").write_text("# Context\n\nBenchmark.\n")
    git.commit("bench")
    return repo


def measure(repo: Path, packet_id: str, pythonpath: str | None) -> tuple[int, float, float]:
    """(exit code, seconds, peak RSS in MB) of one build in its own process."""
    install = user_install.get()
    env = install.env()
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    argv = [install.python, "-m", "governance", "build", f"packets/{packet_id}/packet.yml"]
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    assert proc.stderr is not None
    proc.stderr.read()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, seconds, usage.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="smallest setting, one run")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="max_heading_source_bytes")
    parser.add_argument("--huge", type=int, default=100 << 20, help="size of the refused source")
    parser.add_argument("--keep", type=Path, help="generate the repository here and keep it")
    parser.add_argument("--pythonpath", help="run the governance package found here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs, args.limit, args.huge = 1, 256 << 10, 1 << 20
    print(f"load average at start: {os.getloadavg()}")
    print(user_install.NOTE)
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep if args.keep is not None else Path(tmp)
        repo = make_repo(where, args.limit, args.huge)
        rows = [
            ("ADMIT", f"{READS} heading reads of one {args.limit:,} B source", 0,
             TARGET_ADMIT_S, TARGET_ADMIT_MB),
            ("REFUSE", f"1 heading read of a {args.huge:,} B source", 3, TARGET_REFUSE_S, None),
        ]  # fmt: skip
        for packet_id, what, expected, target_s, target_mb in rows:
            runs = [measure(repo, packet_id, args.pythonpath) for _ in range(args.runs)]
            codes = {code for code, _, _ in runs}
            median = statistics.median(s for _, s, _ in runs)
            peak = max(mb for _, _, mb in runs)
            goal = f"target < {target_s:g} s" + (f", < {target_mb:g} MB" if target_mb else "")
            print(
                f"{packet_id:<7} {what}: exit {sorted(codes)}, median {median:.3f} s, "
                f"peak RSS {peak:.0f} MB ({goal}; {args.runs} runs)"
            )
            if args.pythonpath is None:
                assert codes == {expected}, f"{packet_id}: exit {codes}, expected {expected}"
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
