"""Benchmark ``capsule status`` on the history bench_audit.py builds.

Usage::

    .venv/bin/python bench/bench_status.py [--records N ...] [--runs N] [--keep DIR] [--smoke]

For each ``--records`` size (default 1,000) it generates bench_audit.py's
bare repository: one new record a commit, 40 packets reading sections of 24
documents that every commit edits, so at HEAD the newest record of each
packet is a few commits old and most older ones are stale. It then times, as
processes run from a regular install of this tree (the median of ``--runs``
interleaved rounds, min and max beside it): ``capsule status --json`` (the
40 newest records), ``capsule status --all --json`` (every record) and,
for scale, ``capsule verify --json`` of one record. In process it splits one
``--all`` run into listing the records at HEAD, the walk that orders them,
and the verifying; and times what a CGP query anchored on one packet adds
to its frames (the packet's newest record judged as ``status`` judges it),
and the history walk that the signature's status adds where HEAD lists
allowed signers (the walk ``audit --require-signatures`` makes to find the
commit that brought a ``.sig`` in; this history has no signers). Nothing is
asserted about time: this script only prints.
``--smoke`` is the smallest setting (20 records, one run).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pygit2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import user_install
from bench_audit import Run, capsule_command, generate, measure, median, spread

from governance.agents.cgp_records import record_entries
from governance.core.cache import BlobCache
from governance.core.globs import PathGlobs
from governance.core.snapshot import Snapshot
from governance.history.ranges import parse_range
from governance.history.records import records_in, signature_path
from governance.history.status import recency, status
from governance.history.walk import find_records

RUNS = 5


def cpu_seconds() -> float:
    """User and system time of every child process waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], cwd: Path) -> tuple[Run, float]:
    """The run, and the CPU time it took: less swayed by a busy machine than wall time."""
    before = cpu_seconds()
    run = measure(argv, cwd=cwd)
    return run, cpu_seconds() - before


def stages(path: Path) -> dict[str, float]:
    """One ``--all`` status in this process, split: the listing, the walk, the rest."""
    repo = pygit2.Repository(str(path))
    started = time.perf_counter()
    snapshot = Snapshot.at(repo, "HEAD", check_worktree=False)
    paths = records_in(snapshot.tree)
    listed = time.perf_counter()
    recency(repo, snapshot.commit_id, paths)
    walked = time.perf_counter()
    status(pygit2.Repository(str(path)), all_records=True, cache=BlobCache())
    whole = time.perf_counter() - walked
    return {
        "list": listed - started,
        "walk": walked - listed,
        "verify": whole - (walked - started),
    }


def anchored(path: Path, runs: int) -> dict[str, float]:
    """In process, the median of ``runs``: a CGP packet anchor's record entries
    (its newest record judged against HEAD), and the signature walk."""
    repo = pygit2.Repository(str(path))
    snapshot = Snapshot.at(repo, "HEAD", check_worktree=False)
    newest = status(repo).records[0]
    taken: dict[str, list[float]] = {"cgp record entries": [], "signature walk": []}
    for _ in range(runs):
        started = time.perf_counter()
        entries = record_entries(repo, newest.packet, cache=BlobCache())
        taken["cgp record entries"].append(time.perf_counter() - started)
        assert entries, newest.path
        assert entries[0]["uri"].endswith(newest.path), entries
        started = time.perf_counter()
        globs = PathGlobs([signature_path(newest.path)])
        find_records(repo, parse_range(repo, snapshot.commit_id), globs)
        taken["signature walk"].append(time.perf_counter() - started)
    return {name: sorted(found)[(len(found) - 1) // 2] for name, found in taken.items()}


def bench(root: Path, records: int, runs: int) -> dict[str, Any]:
    path = root / f"history-{records}c-{records}r"
    if not (path / "HEAD").exists():  # --keep DIR reuses what an earlier run generated
        generate(path, records, 1)
    first = measure([*capsule_command(), "status", "--all", "--json"], cwd=path)
    report = json.loads(first.stdout)
    one = report["records"][0]["path"]
    repo = pygit2.Repository(str(path))
    head = repo.head.peel(pygit2.Commit)
    blob = repo[head.tree[one].id]
    assert isinstance(blob, pygit2.Blob)
    capsule = path / "one-record.json"
    capsule.write_bytes(blob.data)
    commands = {
        "status": [*capsule_command(), "status", "--json"],
        "status --all": [*capsule_command(), "status", "--all", "--json"],
        "verify (one record)": [*capsule_command(), "verify", str(capsule), "--json"],
        "audit --jobs 1": [*capsule_command(), "audit", "--jobs", "1", "--json"],
    }
    taken: dict[str, list[Run]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            run, seconds = timed(argv, path)
            taken[name].append(run)
            cpu[name].append(seconds)
    newest = json.loads(taken["status"][0].stdout)["counts"]
    return {
        "records": records,
        "counts": report["counts"],
        "newest": newest,
        "runs": {name: median(found) for name, found in taken.items()},
        "spread": {name: spread(found) for name, found in taken.items()},
        "cpu": {name: sorted(found)[(len(found) - 1) // 2] for name, found in cpu.items()},
        "stages": stages(path),
        "anchored": anchored(path, runs),
    }


@contextlib.contextmanager
def workspace(keep: str | None) -> Iterator[Path]:
    if keep:
        path = Path(keep)
        path.mkdir(parents=True, exist_ok=True)
        yield path
    else:
        with tempfile.TemporaryDirectory(prefix="bench-status-") as folder:
            yield Path(folder)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, nargs="+", default=[1000])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it")
    parser.add_argument("--smoke", action="store_true", help="20 records, one run")
    args = parser.parse_args(argv)
    if args.smoke:
        args.records, args.runs = [20], 1
    print(user_install.NOTE)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with workspace(args.keep) as root:
        for size in args.records:
            found = bench(root, size, args.runs)
            counts = found["counts"]
            print(
                f"\n{size:,} records at HEAD ({counts['unchanged']} unchanged, "
                f"{counts['intact']} intact, {counts['stale']} stale, {counts['missing']} "
                f"missing, {counts['error']} error); the newest of each packet: "
                f"{found['newest']['verified']}"
            )
            runs = found["runs"]
            spreads = found["spread"]
            cpu = found["cpu"]
            print(f"  {'':<20} {'wall':>6}   {'(min-max)':<13} {'CPU':>6}   peak RSS")
            for name, run in runs.items():
                print(
                    f"  {name:<20} {run.wall:6.2f} s ({spreads[name]:<11}) {cpu[name]:6.2f} s "
                    f"{run.peak_kib / 1024:5.0f} MiB"
                )
            per = 1000 * cpu["status --all"] / size
            ratio = cpu["status --all"] / cpu["audit --jobs 1"]
            print(f"  --all: {per:.2f} ms of CPU a record, {ratio:.1f}x a one-job audit's CPU")
            print("  in process, --all:")
            for name, seconds in found["stages"].items():
                print(f"    {name:<8} {seconds:6.3f} s")
            print("  in process, one packet (median):")
            for name, seconds in found["anchored"].items():
                print(f"    {name:<20} {seconds:6.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
