"""Benchmark heavy work from small files: the heading count (issue 22, item 6).

Usage::

    .venv/bin/python bench/bench_heading_count.py [--smoke] [--lines N] [--files N]
        [--pythonpath DIR]

Generates a git repository in a temp folder holding ``--files`` Markdown
files (16 by default) of ``--lines`` one-letter headings each (``# a`` a
million times: 4 MB, under the 4 MiB ``max_heading_source_bytes``), a file
of exactly the policy's ``max_heading_count`` (10,000) such headings, and a
packet reading ``#a`` of the first file. Times, each as its own process
(``python -m governance``, reaped with ``os.wait4``: wall time and peak RSS):

* ``outline`` of one pathological file (``--json``), and of the file at the count;
* ``build --json`` of the ambiguous ``#a``: exit code and the error's bytes;
* ``suggest`` over every file (``--json``).

Prints each exit code, seconds, peak MB and stdout bytes. Nothing is
asserted. ``--pythonpath DIR`` runs the ``governance`` of another checkout
(to measure before a change); ``--smoke`` is 20,000 lines and 2 files.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# Beside this script: every measured process runs from a regular install of this tree.
import user_install

from support.gitrepo import Repo, git_env, packet_yaml

AT_COUNT = 10_000


def make_repo(where: Path, lines: int, files: int) -> Path:
    repo = where / "count-repo"
    git = Repo(repo, env=git_env(where / "home"))
    (repo / "policies").mkdir()
    (repo / "policies/capsule.yml").write_text("# Benchmark policy: the defaults.\n")
    (repo / "docs").mkdir()
    for n in range(files):
        (repo / f"docs/letters-{n}.md").write_bytes(b"# a\n" * lines)
    (repo / "docs/at-count.md").write_bytes(b"# a\n" * AT_COUNT)
    folder = repo / "packets" / "P-1"
    folder.mkdir(parents=True)
    text = packet_yaml("P-1", ["docs/letters-0.md#a"], title="Count", objective="Measure.")
    (folder / "packet.yml").write_text(text)
    (folder / "context.md").write_text("# Context\n\nBenchmark.\n")
    git.commit("bench")
    return repo


def measure(repo: Path, args: list[str], pythonpath: str | None) -> tuple[int, float, float, int]:
    """(exit code, seconds, peak RSS in MB, stdout bytes) of one process."""
    install = user_install.get()
    env = install.env()
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    with tempfile.TemporaryFile() as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [install.python, "-m", "governance", *args],
            cwd=repo,
            env=env,
            stdout=sink,
            stderr=subprocess.DEVNULL,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        size = sink.seek(0, os.SEEK_END)
    return proc.returncode, seconds, usage.ru_maxrss / 1024, size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="20,000 lines, 2 files")
    parser.add_argument("--lines", type=int, default=1_000_000, help="headings a file")
    parser.add_argument("--files", type=int, default=16, help="pathological files")
    parser.add_argument("--pythonpath", help="run the governance of another checkout")
    options = parser.parse_args(argv)
    lines, files = (20_000, 2) if options.smoke else (options.lines, options.files)
    print(user_install.NOTE)
    with tempfile.TemporaryDirectory() as where:
        repo = make_repo(Path(where), lines, files)
        print(f"{files} files of {lines:,} lines '# a' ({4 * lines:,} bytes each)")
        runs = [
            ("outline of one file", ["outline", "docs/letters-0.md", "--json"]),
            (f"outline at {AT_COUNT:,} headings", ["outline", "docs/at-count.md", "--json"]),
            ("build --json of #a", ["build", "packets/P-1/packet.yml", "--json"]),
            ("suggest over every file", ["suggest", "letters", "--json"]),
        ]
        for name, args in runs:
            code, seconds, peak, out = measure(repo, args, options.pythonpath)
            print(
                f"{name:<28} exit {code}  {seconds:7.2f} s  {peak:7.1f} MB peak  "
                f"{out:>11,} bytes out"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
