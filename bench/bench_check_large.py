"""Benchmark every path that checks a packet whose whole-file read is huge
(issue 22 item 3).

Usage::

    .venv/bin/python bench/bench_check_large.py [--smoke] [--runs N] [--huge BYTES]
        [--keep DIR] [--pythonpath DIR]

Generates a git repository in a temp folder (or in DIR with ``--keep``) with
one packet, ``BIG``, whose one required read is a whole file of ``--huge``
bytes (256 MiB by default; lines of ASCII, so git stores it small and writes
it fast). No capsule of it can fit any budget, and the object header says so
before the blob is inflated. Then times, each in its own process reaped with
``os.wait4`` (wall time spawn to reap, peak RSS that process's):

* ``build packets/BIG/packet.yml`` (refused from the header: exit 4);
* ``check packets/BIG/packet.yml`` and ``check --all`` (exit 4);
* the MCP ``check`` tool, as the library call the server makes
  (``governance.agents.tools.check``), in a process of its own;
* ``capsule-packets``, the pre-commit hook, with an edit of the packet's
  context staged (exit 4).

Nothing is asserted about time or memory; the exit codes are. ``--smoke`` is
the smallest setting (1 MiB, one run). ``--pythonpath DIR`` runs the
``governance`` of another checkout (to measure before a change).
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

# The tests' shared helpers (tests/support): the packet helper and the git
# environment exist once.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# Beside this script: every measured process runs from a regular install of this tree.
import user_install

from support.gitrepo import POLICY, Repo, git_env, packet_yaml

LINE = b"x" * 1023 + b"\n"
MCP_CHECK = (
    "import sys\n"
    "from governance.agents.tools import Workspace, check\n"
    "result = check(Workspace.open('.'), all=True)\n"
    "sys.exit(result['exit_code'])\n"
)


def write_huge(path: Path, size: int) -> None:
    """``size`` bytes of 1 KiB lines, written a MiB at a time."""
    block = LINE * 1024
    with path.open("wb") as out:
        left = size
        while left >= len(block):
            out.write(block)
            left -= len(block)
        out.write(block[: max(left - 1, 0)] + (b"\n" if left else b""))


def make_repo(where: Path, huge: int) -> Path:
    repo = where / "large-repo"
    git = Repo(repo, env=git_env(where / "home"))
    git.write("policies/capsule.yml", POLICY)
    (repo / "docs").mkdir()
    write_huge(repo / "docs/huge.md", huge)
    git.write("packets/BIG/packet.yml", packet_yaml("BIG", ["docs/huge.md"]))
    git.write("packets/BIG/context.md", "# Context\n\nBenchmark.\n")
    git.commit("bench")
    return repo


def stage_an_edit(repo: Path, where: Path) -> None:
    """What the hook is run on (last): an edit of the packet's context, staged."""
    git = Repo(repo, env=git_env(where / "home"), init=False)
    git.write("packets/BIG/context.md", "# Context\n\nBenchmark, edited.\n")
    git.git("add", "packets/BIG/context.md")


def measure(repo: Path, argv: list[str], env: dict[str, str]) -> tuple[int, float, float]:
    """(exit code, seconds, peak RSS in MB) of one process."""
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
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--huge", type=int, default=256 << 20, help="size of the whole-file read")
    parser.add_argument("--keep", type=Path, help="generate the repository here and keep it")
    parser.add_argument("--pythonpath", help="run the governance package found here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs, args.huge = 1, 1 << 20
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(user_install.NOTE)
    install = user_install.get()
    env = install.env()
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    packet = "packets/BIG/packet.yml"
    paths = [
        ("build PACKET", [install.python, "-m", "governance", "build", packet]),
        ("check PACKET", [install.python, "-m", "governance", "check", packet]),
        ("check --all", [install.python, "-m", "governance", "check", "--all"]),
        ("MCP check", [install.python, "-c", MCP_CHECK]),
        ("capsule-packets", [install.script("capsule-packets")]),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep if args.keep is not None else Path(tmp)
        start = time.perf_counter()
        repo = make_repo(where, args.huge)
        made = time.perf_counter() - start
        print(f"a whole-file read of {args.huge:,} B, committed in {made:.1f} s")
        for name, command in paths:
            if name == "capsule-packets":
                stage_an_edit(repo, where)
            runs = [measure(repo, command, env) for _ in range(args.runs)]
            codes = sorted({code for code, _, _ in runs})
            median = statistics.median(s for _, s, _ in runs)
            peak = max(mb for _, _, mb in runs)
            print(
                f"{name:<16} exit {codes}, median {median:.3f} s, peak RSS {peak:.0f} MB "
                f"({args.runs} runs)"
            )
            if args.pythonpath is None:
                assert codes == [4], f"{name}: exit {codes}, expected 4 (over_budget)"
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
