"""Benchmark ``capsule audit`` against issue 3's targets.

Usage::

    .venv/bin/python bench/bench_audit.py [--records N ...] [--history COMMITS ...]
                                          [--keep DIR] [--smoke]

For each ``--records`` size (default 1,000 and 5,000) it generates a bare
repository whose history carries one new capsule record per commit: 24
shared Markdown documents of 12 sections each, 40 packets that each read
three sections of three different documents and one whole glossary file (so
every document is read by several packets), the default policy. Commit k
rewrites a line of one section of document k mod 24 (documents change but do
not grow) and adds the record of packet (k mod 40) built at commit k-1, so
sources keep changing under the records and each source version is read by
a few of them. Each ``--history`` size (default: five times the smallest
``--records``) is a longer history carrying that smallest number of records,
one every (COMMITS / records) commits: against the history of the same
number of records it isolates the length of history.

Objects are written with pygit2 directly (no working tree, no ``git add``);
records are built in process by the trusted builder, with a cache. The
repository is then repacked, as a fresh clone would be.

Every measured run is its own process (``capsule audit --json``, or
``git cat-file --batch``), the median of five interleaved rounds (min and max
printed too): wall time is spawn to exit, so it includes interpreter start-up
and the history walk; peak RSS comes from GNU
time's ``%M`` when installed (``os.wait4`` otherwise, which on Linux also
carries over this script's own peak through exec). The floor is ``git
cat-file --batch`` reading every distinct blob the audit reads: each record,
and the packet, context, policy and source blobs it names. Nothing is
asserted about time: this script only prints. At the smallest size it also
times each stage in process (the walk, the replays, judging the rows), splits
a replay's time under the profiler (rebuild, headings, YAML, canonical JSON),
splits what is left of the process (the interpreter's start, the imports, the
teardown from its exit code to its exit), says what libgit2's check of each
object's hash costs the walk and the replays (the floor and ``git log`` check
none), and sets the walk against ``git log --raw -- packets``. ``--smoke`` is the smallest
setting (10 records, a history of 20 commits, one run each) for a quick check
that the script still works.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import platform
import pstats
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from governance.core.builder import build_capsule
from governance.core.cache import BlobCache
from governance.core.globs import PathGlobs
from governance.core.snapshot import Snapshot
from governance.core.trees import RECENT
from governance.history.audit import rows
from governance.history.pool import replay_items, work_items
from governance.history.ranges import parse_range
from governance.history.records import RECORDS_GLOB
from governance.history.walk import find_records, limit_git_memory

# The tests' shared helpers (tests/support): the policy text, the packet helper
# and the git environment exist once.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# Beside this script: every measured process runs from a regular install of this tree.
import user_install

from support.gitrepo import POLICY, clean_environ, packet_yaml

SEED = 20260301
N_DOCS = 24
SECTIONS = 12
N_PACKETS = 40
N_GLOSSARIES = 4
RUNS = 5

TARGET_REPLAYS_PER_S = 300.0
TARGET_FLOOR_RATIO = 10.0
TARGET_WALK_RATIO = 2.0

VOCABULARY = """
capsule packet record replay audit commit tree blob source excerpt heading policy budget
token canonical hash verify history branch merge review agent context scope contract
question locator section snapshot reader schema migration evidence shard
"""
WORDS = VOCABULARY.split()

FILE = pygit2.enums.FileMode.BLOB
TREE = pygit2.enums.FileMode.TREE


def _paragraph(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + ".\n"


class Docs:
    """The shared documents, as section bodies that commits keep editing."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.bodies = [
            [_paragraph(rng, 40) + _paragraph(rng, 30) for _ in range(SECTIONS)]
            for _ in range(N_DOCS)
        ]

    def text(self, doc: int) -> str:
        parts = [f"# Document {doc}\n\n", _paragraph(random.Random(doc), 20), "\n"]
        for section, body in enumerate(self.bodies[doc]):
            parts += [f"## Topic {doc}-{section}\n\n", body, "\n"]
        return "".join(parts)

    def edit(self, doc: int, section: int, revision: int) -> None:
        # Rewrite the section's second line: sources change, but do not grow with
        # history, so records stay the same size however long it gets.
        first = self.bodies[doc][section].split("\n")[0]
        self.bodies[doc][section] = f"{first}\nRevision {revision}: " + _paragraph(self.rng, 30)


class Trees:
    """A nested {name: blob id | folder} model that writes only the folders that
    changed since the last commit."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self.root: dict[str, Any] = {}
        self.written: dict[int, pygit2.Oid] = {}

    def put(self, path: str, data: bytes) -> None:
        *folders, name = path.split("/")
        node = self.root
        self.written.pop(id(node), None)
        for folder in folders:
            node = node.setdefault(folder, {})
            self.written.pop(id(node), None)
        node[name] = self.repo.create_blob(data)

    def write(self, node: dict[str, Any] | None = None) -> pygit2.Oid:
        node = self.root if node is None else node
        done = self.written.get(id(node))
        if done is not None:
            return done
        builder = self.repo.TreeBuilder()
        for name, value in sorted(node.items()):
            if isinstance(value, dict):
                builder.insert(name, self.write(value), TREE)
            else:
                builder.insert(name, value, FILE)
        oid: pygit2.Oid = builder.write()
        self.written[id(node)] = oid
        return oid


def _packet(index: int, rng: random.Random) -> tuple[str, str]:
    packet_id = f"P-{index:03d}"
    docs = rng.sample(range(N_DOCS), 3)
    reads = [f"docs/doc-{d:02d}.md#topic-{d}-{rng.randrange(SECTIONS)}" for d in docs]
    reads.append(f"docs/glossary-{index % N_GLOSSARIES}.md")
    text = packet_yaml(
        packet_id,
        reads,
        title=f"Benchmark work item {index}",
        objective="Carry the benchmark work forward.",
    )
    return packet_id, text


def generate(path: Path, commits: int, every: int) -> None:
    """A root commit and ``commits`` more, adding a record on every ``every``-th."""
    rng = random.Random(SEED)
    repo = pygit2.init_repository(str(path), bare=True, initial_head="main")
    trees = Trees(repo)
    docs = Docs(rng)
    trees.put("policies/capsule.yml", POLICY.encode())
    for doc in range(N_DOCS):
        trees.put(f"docs/doc-{doc:02d}.md", docs.text(doc).encode())
    for glossary in range(N_GLOSSARIES):
        text = f"# Glossary {glossary}\n\n" + _paragraph(rng, 60)
        trees.put(f"docs/glossary-{glossary}.md", text.encode())
    packets = []
    for index in range(N_PACKETS):
        packet_id, text = _packet(index, rng)
        packets.append(packet_id)
        trees.put(f"packets/{packet_id}/packet.yml", text.encode())
        context = f"# Context\n\nWhy work item {index} exists.\n\n" + _paragraph(rng, 50)
        trees.put(f"packets/{packet_id}/context.md", context.encode())

    def signature(k: int) -> pygit2.Signature:
        return pygit2.Signature("Bench", "bench@example.invalid", 1767225600 + 60 * k, 0)

    parent = repo.create_commit(None, signature(0), signature(0), "initial", trees.write(), [])
    cache = BlobCache()
    for k in range(1, commits + 1):
        if k % every == 0:
            packet_id = packets[(k // every) % N_PACKETS]
            commit = repo[parent]
            assert isinstance(commit, pygit2.Commit)
            snapshot = Snapshot(repo=repo, tree=commit.tree, commit_id=str(parent), cache=cache)
            built = build_capsule(snapshot, f"packets/{packet_id}/packet.yml")
            trees.put(f"packets/{packet_id}/capsules/{str(parent)[:12]}.json", built.data)
        doc = k % N_DOCS
        docs.edit(doc, (k // N_DOCS) % SECTIONS, k)
        trees.put(f"docs/doc-{doc:02d}.md", docs.text(doc).encode())
        parent = repo.create_commit(
            None, signature(k), signature(k), f"commit {k}", trees.write(), [parent]
        )
    repo.references.create("refs/heads/main", parent, force=True)
    subprocess.run(["git", "repack", "-a", "-d", "-q"], cwd=path, check=True)
    subprocess.run(["git", "prune-packed"], cwd=path, check=True)


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in clean_environ().items() if not k.startswith("PYTHON")}
    env = user_install.get().env(env)
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["LC_ALL"] = "C"
    return env


@dataclass(frozen=True)
class Run:
    wall: float
    peak_kib: int
    stdout: bytes


def measure(argv: Sequence[str], *, cwd: Path, stdin: bytes | None = None) -> Run:
    time_bin = shutil.which("time") if sys.platform.startswith("linux") else None
    gnu = False
    if time_bin:
        probe = subprocess.run([time_bin, "-f", "%M", "true"], capture_output=True, check=False)
        gnu = probe.returncode == 0 and probe.stderr.strip().isdigit()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        full = [time_bin, "-f", "%M", *argv] if gnu and time_bin else list(argv)
        start = time.perf_counter()
        proc = subprocess.Popen(
            full,
            cwd=cwd,
            env=clean_env(),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=out,
            stderr=err,
        )
        if stdin is not None:
            assert proc.stdin is not None
            proc.stdin.write(stdin)
            proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {stderr.decode()[-2000:]}")
    peak = int(stderr.split()[-1]) if gnu else usage.ru_maxrss
    return Run(wall, peak, stdout)


def floor_blobs(repo_path: Path, report: dict[str, Any]) -> list[str]:
    """Every distinct blob the audit reads: each record, and what it was built from."""
    repo = pygit2.Repository(str(repo_path))
    blobs: dict[str, None] = {}
    for row in report["results"]:
        blobs[row["blob"]] = None
        record = repo[row["blob"]]
        assert isinstance(record, pygit2.Blob)
        capsule = json.loads(record.data)
        for part in (capsule["packet"], capsule["context"], capsule["policy"], *capsule["reads"]):
            blobs[part["blob"]] = None
    return list(blobs)


def capsule_command() -> list[str]:
    return [user_install.get().script("capsule")]


def median(runs: list[Run]) -> Run:
    """The run of median wall time (the lower middle one of an even count)."""
    ordered = sorted(runs, key=lambda run: run.wall)
    return ordered[(len(ordered) - 1) // 2]


def spread(runs: list[Run]) -> str:
    walls = [run.wall for run in runs]
    return f"{min(walls):.2f}-{max(walls):.2f}s"


def hash_check_cost(path: Path) -> float:
    """Seconds libgit2's check of each object's hash (on by default; git
    cat-file and git log make none) adds to a walk and its replays: the least
    of two interleaved rounds with the check and without it."""
    timings: dict[bool, list[float]] = {True: [], False: []}
    try:
        for _ in range(2):
            for verify in (True, False):
                pygit2.settings.enable_strict_hash_verification(verify)
                # Every tree read again (and its hash checked, or not).
                RECENT.clear()
                repo = pygit2.Repository(str(path))
                before = time.perf_counter()
                found = find_records(repo, parse_range(repo, None), PathGlobs([RECORDS_GLOB]))
                replay_items(repo, work_items(found.versions), jobs=1)
                timings[verify].append(time.perf_counter() - before)
    finally:
        pygit2.settings.enable_strict_hash_verification(True)
    return max(0.0, min(timings[True]) - min(timings[False]))


def stage_costs(path: Path) -> dict[str, float]:
    """Each stage of an audit in this process, in seconds: the history walk,
    the replays (and, under the profiler's clock, what a replay spends on
    reading the record, rebuilding and comparing), and judging the rows."""

    repo = pygit2.Repository(str(path))
    limit_git_memory()
    started = time.perf_counter()
    found = find_records(repo, parse_range(repo, None), PathGlobs([RECORDS_GLOB]))
    walked = time.perf_counter()
    items = work_items(found.versions)
    outcomes = replay_items(repo, items, jobs=1)
    replayed = time.perf_counter()
    rows(repo, found.versions, items, outcomes)
    judged = time.perf_counter()
    # The first walk pays for cold caches like the audit's own; later ones say
    # how steady that figure is.
    again = []
    for _ in range(2):
        # Parsing the trees again, as the first walk did: only libgit2's and
        # the system's caches are warm.
        RECENT.clear()
        before = time.perf_counter()
        find_records(repo, parse_range(repo, None), PathGlobs([RECORDS_GLOB]))
        again.append(time.perf_counter() - before)
    costs = {
        "walk": walked - started,
        "walk again": min(again),
        "hash check": hash_check_cost(path),
        "replay": replayed - walked,
        "judge": judged - replayed,
        "replays": float(len(items)),
    }
    # Where a replay's time goes, as shares of the profiled replay time.
    profile = cProfile.Profile()
    profile.enable()
    replay_items(pygit2.Repository(str(path)), items, jobs=1)
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]

    def cumulative(filename: str, function: str) -> float:
        return sum(
            entry[3]
            for (file, _, name), entry in stats.items()
            if file.endswith(filename) and name == function
        )

    whole = cumulative("record_rules.py", "judge_blob") or 1.0
    rebuild = cumulative("builder.py", "build_capsule")
    costs["rebuild"] = rebuild / whole
    costs["read, pre-checks, compare"] = 1.0 - rebuild / whole
    costs["  headings"] = cumulative("headings.py", "parse_headings") / whole
    costs["  YAML (packet, policy)"] = cumulative("yamlload.py", "load_yaml") / whole
    # Serialising: the capsule, and the fragments of its parts made on a miss.
    serialised = cumulative("canonical.py", "dumps") + cumulative("canonical.py", "fragment")
    costs["  canonical JSON"] = serialised / whole
    return costs


# `capsule audit --json --jobs 1` as the console script runs it, which, once
# it has its exit code (main hands it to end_process, which may end the
# process there), writes the time to the pipe it is given: from then to its
# exit is the teardown (CLOCK_MONOTONIC is one clock for every process of the
# machine).
TEARDOWN_PROBE = """
import os, sys, time
import governance.cli as cli
end_process = cli.end_process


def timed(*args):
    os.write(int(os.environ["BENCH_TEARDOWN_FD"]), repr(time.monotonic()).encode())
    return end_process(*args)


cli.end_process = timed
sys.argv[1:] = ["audit", "--json", "--jobs", "1"]
sys.exit(cli.main())
"""
# What an audit process imports before its walk (the rest, pygit2 and PyYAML
# among them, comes with these).
# The imports alone: the probe leaves at once after them, as a command process
# does, so the interpreter's teardown of what they loaded is not counted too.
AUDIT_IMPORTS = (
    "import governance.cli, governance.commands.audit, governance.history.audit; "
    "import os; os._exit(0)"
)


def teardown(path: Path) -> float:
    """Seconds from a one-job audit's exit code to its exit."""
    read, write = os.pipe()
    try:
        proc = subprocess.Popen(
            [user_install.get().python, "-c", TEARDOWN_PROBE],
            cwd=path,
            env={**clean_env(), "BENCH_TEARDOWN_FD": str(write)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(write,),
        )
        os.close(write)
        write = -1
        proc.wait()
        ended = time.monotonic()
        returned = float(os.read(read, 64) or "nan")
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
    return ended - returned


def process_costs(path: Path, runs: int) -> dict[str, float]:
    """Medians of interleaved rounds, in seconds: an empty interpreter's start
    (``python -c pass``), importing what an audit imports (less that start),
    and a one-job audit's teardown (from its exit code to its exit)."""
    started, imported, ended = [], [], []
    python = user_install.get().python
    for _ in range(runs):
        started.append(measure([python, "-c", "pass"], cwd=path).wall)
        imported.append(measure([python, "-c", AUDIT_IMPORTS], cwd=path).wall)
        ended.append(teardown(path))
    start = sorted(started)[(runs - 1) // 2]
    return {
        "start": start,
        "imports": sorted(imported)[(runs - 1) // 2] - start,
        "teardown": sorted(ended)[(runs - 1) // 2],
    }


def git_log_raw(path: Path, runs: int) -> Run:
    """The walk's floor: git listing every change under packets/ in history."""
    argv = ["git", "log", "--raw", "--no-abbrev", "--format=%H", "--", "packets"]
    return median([measure(argv, cwd=path) for _ in range(runs)])


ONE, AUTO = "1", "auto"
# The audits each round runs: one job, and the default (``--jobs auto``).
JOBS = {ONE: ["--jobs", "1"], AUTO: []}


def bench(
    root: Path, commits: int, every: int, jobs: Sequence[str], runs: int = RUNS
) -> dict[str, Any]:
    path = root / f"history-{commits}c-{commits // every}r"
    start = time.perf_counter()
    if not (path / "HEAD").exists():  # --keep DIR reuses what an earlier run generated
        generate(path, commits, every)
    generated = time.perf_counter() - start
    first = measure([*capsule_command(), "audit", "--json", "--jobs", "1"], cwd=path)
    report = json.loads(first.stdout)
    counts = report["counts"]
    if counts["identical"] != counts["records"]:
        raise SystemExit(f"the generated history does not audit clean: {counts}")
    blobs = floor_blobs(path, report)
    request = "".join(f"{blob}\n" for blob in blobs).encode()
    # Interleaved rounds: the floor and every audit once a round, so load
    # slows them alike; medians, with min-max.
    taken: dict[str, list[Run]] = {"floor": [], **{n: [] for n in jobs}}
    for _ in range(runs):
        taken["floor"].append(measure(["git", "cat-file", "--batch"], cwd=path, stdin=request))
        for n in jobs:
            argv = [*capsule_command(), "audit", "--json", *JOBS[n]]
            taken[n].append(measure(argv, cwd=path))
    return {
        "commits": commits,
        "records": counts["records"],
        "replays": counts["blobs"],
        "generated_s": generated,
        "blobs_read": len(blobs),
        "blob_bytes": len(taken["floor"][0].stdout),
        "floor": median(taken["floor"]),
        "audits": {n: median(taken[n]) for n in jobs},
        "spread": {n: spread(taken[n]) for n in jobs},
        # How many processes the default ran on here.
        "auto": json.loads(taken[AUTO][0].stdout)["jobs"] if AUTO in taken else None,
        "path": path,
    }


@contextlib.contextmanager
def workspace(keep: str | None) -> Iterator[Path]:
    if keep:
        path = Path(keep)
        path.mkdir(parents=True, exist_ok=True)
        yield path
    else:
        with tempfile.TemporaryDirectory(prefix="bench-audit-") as folder:
            yield Path(folder)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--records",
        type=int,
        nargs="+",
        default=[1000, 5000],
        help="history sizes: one record per commit (default 1000 5000)",
    )
    parser.add_argument(
        "--history",
        type=int,
        nargs="+",
        metavar="COMMITS",
        help="longer histories carrying as many records as the smallest --records size "
        "(default: five times that size)",
    )
    parser.add_argument(
        "--keep", metavar="DIR", help="generate into DIR and keep it (a later run reuses it)"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="smallest setting (10 records, 20 commits, one run): checks the script runs",
    )
    args = parser.parse_args(argv)
    runs = RUNS
    if args.smoke:
        args.records, args.history, runs = [10], [20], 1
    print(
        f"python {platform.python_version()}, pygit2 {pygit2.__version__} "
        f"(libgit2 {pygit2.LIBGIT2_VERSION}), {os.cpu_count()} cpus, "
        f"load {os.getloadavg()[0]:.2f}; medians of {runs} interleaved runs"
    )
    print(user_install.NOTE)
    print(
        f"{'commits':>8} {'records':>8} {'blobs read':>10} {'MiB':>6} {'cat-file':>9} "
        f"{'audit -j1':>10} {'replays/s':>10} {'x floor':>8} {'default':>10} "
        f"{'processes':>10} {'x floor':>8} {'peak RSS':>9}",
        flush=True,
    )
    results = []
    with workspace(args.keep) as root:
        sizes = [(n, 1, (ONE, AUTO)) for n in args.records]
        # As many records as the smallest size, in a longer history.
        smallest = min(args.records)
        for commits in args.history or [smallest * 5]:
            sizes.append((commits, commits // smallest, (ONE,)))
        for commits, every, jobs in sizes:
            r = bench(root, commits, every, jobs, runs)
            results.append(r)
            one = r["audits"][ONE]
            auto = r["audits"].get(AUTO)
            print(
                f"{r['commits']:>8,} {r['records']:>8,} {r['blobs_read']:>10,} "
                f"{r['blob_bytes'] / 2**20:>6.1f} {r['floor'].wall * 1000:>7.0f}ms "
                f"{one.wall:>9.2f}s {r['replays'] / one.wall:>10.0f} "
                f"{one.wall / r['floor'].wall:>7.1f}x "
                + (
                    f"{auto.wall:>9.2f}s {r['auto']:>10} {auto.wall / r['floor'].wall:>7.1f}x "
                    if auto
                    else " " * 30
                )
                + f"{one.peak_kib / 1024:>6.0f}MiB",
                flush=True,
            )
        first = results[0]
        costs = stage_costs(first["path"])
        log = git_log_raw(first["path"], runs)
        fixed = process_costs(first["path"], runs)
    print()
    print(
        "min-max of the one-job audit: "
        + ", ".join(f"{r['records']:,} records {r['spread'][ONE]}" for r in results)
    )
    replays = int(costs["replays"])
    print(f"\nstages of an audit of {first['records']:,} records, in one process:")
    for stage in ("walk", "replay", "judge"):
        per = f" ({costs[stage] * 1000 / replays:.2f} ms a replay)" if stage == "replay" else ""
        print(f"  {stage:<8} {costs[stage] * 1000:8.1f} ms{per}")
    print("  a replay's time, as shares under the profiler:")
    for label in ("read, pre-checks, compare", "rebuild", "  headings", "  YAML (packet, policy)",
                  "  canonical JSON"):  # fmt: skip
        print(f"    {label:<28} {costs[label] * 100:5.1f}%")
    staged = costs["walk"] + costs["replay"] + costs["judge"]
    print(
        f"  the rest of a one-job audit process (start-up, imports, output): "
        f"{(first['audits'][ONE].wall - staged) * 1000:.0f} ms, of which the interpreter's start "
        f"{fixed['start'] * 1000:.0f} ms (python -c pass), the imports "
        f"{fixed['imports'] * 1000:.0f} ms, the teardown {fixed['teardown'] * 1000:.1f} ms "
        "(from its exit code to its exit)"
    )
    print(
        f"  libgit2's check of each object's hash as it is read (cat-file and git log check "
        f"none): {costs['hash check'] * 1000:.0f} ms of the walk and replays"
    )
    walk_ratio = costs["walk"] / log.wall
    print(
        f"  the walk against git log --raw -- packets ({log.wall * 1000:.1f} ms as a process): "
        f"{walk_ratio:.2f}x (a second walk in the same process, its trees parsed again: "
        f"{costs['walk again'] / log.wall:.2f}x)"
    )

    def verdict(met: bool) -> str:
        return "met" if met else "MISSED"

    rate = first["replays"] / first["audits"][ONE].wall
    ratio = first["audits"][ONE].wall / first["floor"].wall
    auto = first["audits"][AUTO].wall / first["floor"].wall
    print(
        f"targets at {first['records']:,} records: >= {TARGET_REPLAYS_PER_S:.0f} replays/s on "
        f"one job: {rate:.0f} ({verdict(rate >= TARGET_REPLAYS_PER_S)}); "
        f"audit <= {TARGET_FLOOR_RATIO:.0f}x the cat-file floor: {auto:.1f}x as it runs by "
        f"default (--jobs auto: {first['auto']} processes here) "
        f"({verdict(auto <= TARGET_FLOOR_RATIO)}), {ratio:.1f}x on one job "
        f"({verdict(ratio <= TARGET_FLOOR_RATIO)}); the walk <= "
        f"{TARGET_WALK_RATIO:.0f}x git log --raw: {walk_ratio:.2f}x "
        f"({verdict(walk_ratio <= TARGET_WALK_RATIO)})"
    )
    print(
        "wall times include process start and the history walk; generation took "
        + ", ".join(f"{r['generated_s']:.0f}s" for r in results)
        + f"; load {os.getloadavg()[0]:.2f} at the end"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
