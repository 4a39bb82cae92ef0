"""Benchmark ``capsule build`` and ``capsule verify`` against issue 2's targets.

Usage::

    .venv/bin/python bench/bench_build.py [--runs N] [--keep DIR]

Generates two git repositories in a temp folder (or in DIR with ``--keep``):

* ``docs-repo``: 200 Markdown files of 1 to 4.5 KB (seeded pseudo-random text,
  ``#``/``##``/``###`` headings with unique titles), a roomy policy and a few
  packets of 8 required reads each, half whole files and half ``#heading`` reads;
* ``huge-repo``: the default policy, a 100 MiB source and a packet reading it
  whole, which must be refused with exit 4 (over budget), beside a small
  baseline packet.

Every measured operation is its own process, started with ``subprocess.Popen``
and reaped with ``os.wait4``: wall time is spawn to reap, and peak RSS is per
process, not the running maximum over all children of ``RUSAGE_CHILDREN``.
Where GNU time is installed the process runs under ``time -f %M`` (see
``launcher``). Nothing is asserted about time: this script only prints; the
one assertion is the refusal's exit code 4.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# The tests' shared helpers (tests/support): the policy text, the packet helper
# and the git environment exist once.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# Beside this script: every measured process runs from a regular install of this tree.
import user_install

from support.gitrepo import POLICY, Repo, git_env, packet_yaml

# What the benchmark's packets say of themselves.
BENCH_PACKET = {
    "title": "Benchmark packet",
    "objective": "Measure how long a capsule takes to build and verify.",
}

SEED = 20260101
N_FILES = 200
# Eight reads of files this size, half of them whole, fit the ADR's target of
# 12,000 estimated tokens (about 36 KB of capsule), which no policy may loosen.
MIN_BYTES = 1 * 1024
MAX_BYTES = 9 * 512
N_PACKETS = 5
READS_PER_PACKET = 8
HUGE_BYTES = 100 * 1024 * 1024
IMPORTTIME_RUNS = 5

TARGET_BUILD_MS = 150.0
TARGET_IMPORT_CLI_MS = 60.0
TARGET_REFUSAL_MS = 1000.0

ROOMY_POLICY = """\
# Benchmark policy: the ADR's limits, the roomiest any policy may be.
target_tokens: 12000
hard_limit_tokens: 16000
reserve_tokens: 1500
max_required_reads: 8
estimator: utf8_bytes_div_3_ceil
"""

# Run in a child process: call the CLI's ``main`` repeatedly, so the first call
# (lazy imports, caches) and the warm calls (the work itself) can be told apart.
IN_PROCESS = r"""
import contextlib, io, json, sys, time
from governance.cli import main
plan = json.loads(sys.argv[1])
out = {}
for name, argvs in plan.items():
    times = []
    for argv in argvs:
        sink = io.StringIO()
        start = time.perf_counter()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            code = main(argv)
        times.append((time.perf_counter() - start) * 1000.0)
        if code != 0:
            sys.exit(f"{name} {argv}: exit {code}: {sink.getvalue()}")
    out[name] = times
print(json.dumps(out))
"""


# --------------------------------------------------------------------------- processes


def clean_env() -> dict[str, str]:
    """The caller's environment without GIT_* variables (a hook's GIT_DIR must not
    leak), as the user install runs a process: without the variables that stop
    Python from using its .pyc files, its console scripts first on PATH."""
    return user_install.get().env({k: v for k, v in os.environ.items() if not k.startswith("GIT_")})


@dataclass(frozen=True)
class Sample:
    wall_ms: float
    rss_mb: float
    code: int
    stderr: str


@functools.cache
def launcher() -> str | None:
    """GNU time, when installed. ``os.wait4`` alone is not enough on Linux: exec()
    carries the spawning process's high-water RSS into the child's ru_maxrss, so
    every child would report at least this script's own peak. GNU time is a small
    C program; what it reports (through its own wait4) has a ~1 MB floor instead."""
    found = shutil.which("time")
    if found is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".rss") as report:
        done = subprocess.run(
            [found, "-f", "%M", "-o", report.name, "true"], capture_output=True, check=False
        )
        text = Path(report.name).read_text().strip()
    if done.returncode != 0 or not text.isdigit():
        return None
    return found


def measure(
    argv: Sequence[str],
    *,
    cwd: Path,
    stdin: Path | None = None,
    expect: int | None = 0,
) -> Sample:
    """Run one process; wall time from spawn to reap, peak RSS of the command itself."""
    with contextlib.ExitStack() as stack:
        err = stack.enter_context(tempfile.TemporaryFile())
        report = stack.enter_context(tempfile.NamedTemporaryFile(suffix=".rss"))
        source = stack.enter_context(open(stdin, "rb")) if stdin else subprocess.DEVNULL
        wrapper = launcher()
        launch = [wrapper, "-f", "%M", "-o", report.name, *argv] if wrapper else list(argv)
        start = time.perf_counter()
        proc = subprocess.Popen(
            launch,
            cwd=cwd,
            env=clean_env(),
            stdin=source,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall_ms = (time.perf_counter() - start) * 1000.0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
        # GNU time writes "Command exited with non-zero status N" before the format.
        lines = Path(report.name).read_text().split()
    if wrapper:
        rss_mb = int(lines[-1]) / 1024
    else:
        # ru_maxrss is KiB on Linux, bytes on macOS.
        rss_mb = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    if expect is not None and proc.returncode != expect:
        raise SystemExit(
            f"bench: {' '.join(argv)} exited {proc.returncode}, expected {expect}\n{stderr}"
        )
    return Sample(wall_ms, rss_mb, proc.returncode, stderr)


def output_of(argv: Sequence[str], *, cwd: Path | None = None) -> str:
    done = subprocess.run(
        list(argv), cwd=cwd, env=clean_env(), capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


# --------------------------------------------------------------------------- repositories


def new_repo(path: Path) -> Repo:
    """A repository built with the git CLI, with the tests' pinned identity and dates."""
    path.mkdir(parents=True)
    return Repo(path, env={**git_env(path.parent / "home"), **clean_env()})


def slug(title: str) -> str:
    # Titles are ASCII letters, digits, spaces and dots, where github-slugger
    # lowercases, drops the dots and turns each space into a dash.
    return "".join(c for c in title.lower() if c.isalnum() or c == " ").replace(" ", "-")


class TextMaker:
    """Deterministic Markdown-ish prose from one seeded generator."""

    ACCENTED = ("café", "naïve", "façade", "Zürich", "日本語", "señal", "über")

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        consonants, vowels = "bcdfghklmnprstvz", "aeiou"
        words: set[str] = set()
        while len(words) < 3000:
            n = rng.randint(1, 4)
            words.add("".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(n)))
        self.words = sorted(words)

    def title(self) -> str:
        return " ".join(self.rng.choices(self.words, k=self.rng.randint(2, 4))).capitalize()

    def sentence(self) -> str:
        words = self.rng.choices(self.words, k=self.rng.randint(6, 18))
        if self.rng.random() < 0.15:
            words[self.rng.randrange(len(words))] = self.rng.choice(self.ACCENTED)
        if self.rng.random() < 0.2:
            i = self.rng.randrange(len(words))
            words[i] = f"`{words[i]}()`"
        return " ".join(words).capitalize() + "."

    def block(self) -> str:
        roll = self.rng.random()
        if roll < 0.12:
            items = [f"- {self.sentence()}" for _ in range(self.rng.randint(2, 6))]
            return "\n".join(items)
        if roll < 0.18:
            body = [
                f"{self.rng.choice(self.words)} = {self.rng.randint(0, 9999)}"
                for _ in range(self.rng.randint(2, 8))
            ]
            return "\n".join(["```text", *body, "```"])
        sentences = [self.sentence() for _ in range(self.rng.randint(2, 7))]
        # Hard-wrap near 80 columns, as hand-written Markdown usually is.
        lines, line = [], ""
        for word in " ".join(sentences).split(" "):
            if line and len(line) + 1 + len(word) > 80:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
        return "\n".join(lines)


@dataclass
class Doc:
    path: str
    text: str
    sections: list[str] = field(default_factory=list)  # slugs of its ``##`` headings


def make_doc(maker: TextMaker, index: int, size: int) -> Doc:
    doc = Doc(path=f"docs/d{index:03d}.md", text="")
    parts = [f"# Document {index:03d} {maker.title()}", maker.block()]
    length = sum(len(p.encode("utf-8")) + 2 for p in parts)
    section = 0
    sub = 0
    while length < size:
        if section == 0 or maker.rng.random() < 0.3:
            section += 1
            sub = 0
            title = f"{index:03d}.{section} {maker.title()}"
            doc.sections.append(slug(title))
            heading = f"## {title}"
        elif maker.rng.random() < 0.4:
            sub += 1
            heading = f"### {index:03d}.{section}.{sub} {maker.title()}"
        else:
            heading = ""
        new = [heading] if heading else []
        new.append(maker.block())
        parts += new
        length += sum(len(p.encode("utf-8")) + 2 for p in new)
    doc.text = "\n\n".join(parts) + "\n"
    return doc


@dataclass(frozen=True)
class Packet:
    id: str
    path: str
    reads: tuple[str, ...]
    blobs: tuple[str, ...]  # paths read whole by build: policy, packet, context, sources


def make_docs_repo(root: Path) -> tuple[Repo, list[Packet], int]:
    rng = random.Random(SEED)
    maker = TextMaker(rng)
    git = new_repo(root)
    git.write("policies/capsule.yml", ROOMY_POLICY)
    docs = []
    for index in range(N_FILES):
        # Leave room for the last block so no file ends above 50 KB.
        doc = make_doc(maker, index, rng.randint(MIN_BYTES, MAX_BYTES - 2048))
        git.write(doc.path, doc.text)
        docs.append(doc)
    packets = []
    for number in range(1, N_PACKETS + 1):
        packet_id = f"BENCH-{number:02d}"
        chosen = rng.sample(docs, READS_PER_PACKET)
        reads = [
            doc.path if i % 2 == 0 else f"{doc.path}#{rng.choice(doc.sections)}"
            for i, doc in enumerate(chosen)
        ]
        folder = f"packets/{packet_id}"
        git.write(f"{folder}/packet.yml", packet_yaml(packet_id, reads, **BENCH_PACKET))
        context = "\n\n".join([f"# Context for {packet_id}", *(maker.block() for _ in range(6))])
        git.write(f"{folder}/context.md", context + "\n")
        blobs = (
            "policies/capsule.yml",
            f"{folder}/packet.yml",
            f"{folder}/context.md",
            *(doc.path for doc in chosen),
        )
        packets.append(Packet(packet_id, f"{folder}/packet.yml", tuple(reads), blobs))
    git.commit("benchmark corpus")
    total = sum(len(d.text.encode("utf-8")) for d in docs)
    return git, packets, total


def make_huge_repo(root: Path) -> Repo:
    git = new_repo(root)
    git.write("policies/capsule.yml", POLICY)
    git.write("docs/small.md", "# Small\n\nA small source for the baseline build.\n")
    line = b"A repeated line of a very large generated Markdown source, padded out.\n"
    block = line * (1024 * 1024 // len(line) + 1)
    with open(root / "docs" / "huge.md", "wb") as handle:
        written = 0
        while written < HUGE_BYTES:
            chunk = block[: HUGE_BYTES - written]
            handle.write(chunk)
            written += len(chunk)
    for packet_id, read in (("HUGE", "docs/huge.md"), ("SMALL", "docs/small.md")):
        git.write(f"packets/{packet_id}/packet.yml", packet_yaml(packet_id, [read], **BENCH_PACKET))
        git.write(f"packets/{packet_id}/context.md", f"# {packet_id}\n\nOne whole-file read.\n")
    git.commit("a huge source")
    return git


# --------------------------------------------------------------------------- statistics


def p90(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


@dataclass
class Row:
    name: str
    samples: list[Sample] = field(default_factory=list)
    target: str = ""
    ok: bool | None = None
    times: list[float] = field(default_factory=list)  # for in-process rows (no RSS)

    @property
    def wall(self) -> list[float]:
        return self.times or [s.wall_ms for s in self.samples]

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    @property
    def rss(self) -> float | None:
        return max(s.rss_mb for s in self.samples) if self.samples else None


def print_table(rows: Sequence[Row]) -> None:
    width = max(len(r.name) for r in rows)
    head = (
        f"{'operation':<{width}}  {'n':>3}  {'median ms':>9}  {'min':>7}  {'max':>7}  "
        f"{'p90':>7}  {'peak RSS MB':>11}"
    )
    print(f"{head}  {'target':<28}  status")
    print("-" * (len(head) + 38))
    for r in rows:
        rss = f"{r.rss:11.1f}" if r.rss is not None else f"{'-':>11}"
        status = "" if r.ok is None else ("meets" if r.ok else "MISSES")
        print(
            f"{r.name:<{width}}  {len(r.wall):>3}  {r.median:9.1f}  {min(r.wall):7.1f}  "
            f"{max(r.wall):7.1f}  {p90(r.wall):7.1f}  {rss}  {r.target:<28}  {status}"
        )


# --------------------------------------------------------------------------- -X importtime


@dataclass
class Imported:
    name: str
    depth: int
    self_us: float
    cumulative_us: float
    children: list[Imported] = field(default_factory=list)


def importtime(argv: Sequence[str], *, cwd: Path, runs: int) -> list[Imported]:
    """Per module, in import order, the median self/cumulative microseconds of ``runs`` runs."""
    # A name can be listed twice (``import a.b`` at top level after ``a`` imported
    # ``a.b``), so entries are keyed by name and occurrence.
    seen: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    for _ in range(runs):
        err = measure([user_install.get().python, "-X", "importtime", *argv], cwd=cwd).stderr
        count: dict[str, int] = {}
        for line in err.splitlines():
            if not line.startswith("import time:") or "[us]" in line:
                continue
            self_us, cumulative_us, label = line[len("import time:") :].split("|")
            name = label.strip()
            depth = (len(label) - len(label.lstrip(" ")) - 1) // 2
            count[name] = count.get(name, 0) + 1
            entry = (depth, int(self_us), int(cumulative_us))
            seen.setdefault((name, count[name]), []).append(entry)
    return [
        Imported(
            name,
            values[0][0],
            statistics.median(v[1] for v in values),
            statistics.median(v[2] for v in values),
        )
        for (name, _), values in seen.items()
    ]


def import_roots(imports: Sequence[Imported], startup: Sequence[Imported]) -> list[str]:
    """The modules imported at top level (not by another import), beyond interpreter start:
    importing these in a fresh interpreter loads everything the command loaded."""
    at_start = {i.name for i in startup}
    roots = [i.name for i in imports if i.depth == 0 and i.name not in at_start]
    return list(dict.fromkeys(roots))


def import_tree(imports: Sequence[Imported]) -> list[Imported]:
    """-X importtime prints a module after everything it imported, one level deeper."""
    pending: dict[int, list[Imported]] = {}
    roots: list[Imported] = []
    for imp in imports:
        imp.children = pending.pop(imp.depth + 1, [])
        (roots if imp.depth == 0 else pending.setdefault(imp.depth, [])).append(imp)
    return roots


def by_package(imports: Sequence[Imported]) -> list[tuple[str, float, int]]:
    """Self time summed per top-level package: an exact split of the import time."""
    stdlib = sys.stdlib_module_names
    totals: dict[str, tuple[float, int]] = {}
    for imp in imports:
        root = imp.name.split(".")[0]
        if root.startswith("__editable__"):
            key = "(setuptools editable finder, in site)"
        elif root in stdlib or root.startswith("_"):
            key = f"stdlib {root}"
        else:
            key = root
        ms, count = totals.get(key, (0.0, 0))
        totals[key] = (ms + imp.self_us / 1000.0, count + 1)
    return sorted(((k, ms, n) for k, (ms, n) in totals.items()), key=lambda t: -t[1])


def print_importtime(
    title: str, imports: Sequence[Imported], *, min_ms: float, max_depth: int, top: int
) -> None:
    total_ms = sum(i.self_us for i in imports) / 1000.0
    print(f"\n{title}: {len(imports)} modules, {total_ms:.1f} ms of imports (sum of self)")
    print(f"  import tree, entries >= {min_ms:g} ms cumulative (cum / self ms):")

    def show(node: Imported, level: int) -> None:
        if node.cumulative_us / 1000.0 < min_ms or level > max_depth:
            return
        print(
            f"    {node.cumulative_us / 1000.0:6.1f} {node.self_us / 1000.0:5.1f}  "
            f"{'  ' * level}{node.name}"
        )
        for child in sorted(node.children, key=lambda c: -c.cumulative_us):
            show(child, level + 1)

    for root in sorted(import_tree(imports), key=lambda r: -r.cumulative_us):
        show(root, 0)
    print("  by top-level package (sum of self ms):")
    for key, ms, count in by_package(imports)[:top]:
        print(f"    {ms:6.1f}  {count:>4} modules  {key}")


# --------------------------------------------------------------------------- main


def find_peers(cwd: Path) -> dict[str, list[str]]:
    """Tools that put files into a prompt, where installed, measured in the same
    rounds: files-to-prompt (no hashing, no checks) and repomix (through npx,
    only if already installed: nothing is downloaded)."""
    peers: dict[str, list[str]] = {}
    here = Path(sys.executable).parent
    found = shutil.which("files-to-prompt", path=f"{here}{os.pathsep}{os.environ.get('PATH', '')}")
    if found and Path(found).parent == here:
        # Installed beside this script's interpreter: run its script with the user
        # install's, which has the same libraries and no editable finder.
        peers["files-to-prompt"] = [user_install.get().python, found]
    elif found:
        peers["files-to-prompt"] = [found]
    npx = shutil.which("npx")
    if npx:
        probe = subprocess.run(
            [npx, "--no-install", "repomix", "--version"],
            cwd=cwd,
            env=clean_env(),
            capture_output=True,
            check=False,
        )
        if probe.returncode == 0:
            peers["repomix"] = [npx, "--no-install", "repomix", "--stdout", "--no-security-check"]
    return peers


def machine_info(capsule: str, py: str) -> None:
    versions = output_of(
        [
            py,
            "-c",
            "import pygit2, yaml, jsonschema, markdown_it\n"
            "print(pygit2.__version__, pygit2.LIBGIT2_VERSION, yaml.__version__, "
            "jsonschema.__version__ if hasattr(jsonschema, '__version__') else '?', "
            "markdown_it.__version__)",
        ]
    ).split()
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    print("machine")
    print(f"  cpu          {cpu}")
    print(f"  nproc        {usable} usable of {os.cpu_count()}")
    if hasattr(os, "getloadavg"):
        load = os.getloadavg()
        print(
            f"  load avg     {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (other work skews timings)"
        )
    print(f"  os           {platform.platform()}")
    print(f"  python       {platform.python_version()} ({platform.python_implementation()})")
    print(f"  pygit2       {versions[0]} (libgit2 {versions[1]})")
    print(f"  PyYAML       {versions[2]}  jsonschema {versions[3]}  markdown-it-py {versions[4]}")
    print(f"  git          {output_of(['git', '--version'])}")
    print(f"  capsule      {output_of([capsule, '--version'])}")
    wrapper = launcher()
    if wrapper:
        print(f"  peak RSS     GNU time -f %M ({wrapper}); wall time includes its ~1 ms spawn")
    else:
        print("  peak RSS     os.wait4 (no GNU time): includes this script's own peak RSS")


@contextlib.contextmanager
def workspace(keep: str | None) -> Iterator[Path]:
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="capsule-bench-") as tmp:
            yield Path(tmp)
        return
    root = Path(keep).resolve()
    if root.exists() and any(root.iterdir()):
        raise SystemExit(f"bench: --keep {keep}: folder exists and is not empty")
    root.mkdir(parents=True, exist_ok=True)
    yield root
    print(f"\nkept the generated repositories in {root}")


def run(runs: int, root: Path, *, dev_venv: bool = False) -> None:
    install = user_install.get()
    capsule = install.script("capsule")
    py = install.python
    machine_info(capsule, py)
    print(f"  install      {user_install.NOTE}")
    print("  bytecode     .pyc compiled first (as pip does); PYTHONDONTWRITEBYTECODE unset")

    started = time.perf_counter()
    git, packets, corpus = make_docs_repo(root / "docs-repo")
    made_docs = time.perf_counter() - started
    huge = make_huge_repo(root / "huge-repo")
    made_huge = time.perf_counter() - started - made_docs
    out = root / "capsules"
    out.mkdir()
    print("\nsetup")
    print(
        f"  docs-repo    {N_FILES} Markdown files, {corpus / 1e6:.1f} MB, {len(packets)} packets "
        f"of {READS_PER_PACKET} reads (half whole, half #heading); made in {made_docs:.1f} s"
    )
    print(f"  huge-repo    one {HUGE_BYTES // 2**20} MiB source; made in {made_huge:.1f} s")

    # git cat-file --batch input per packet: the same blobs the build reads.
    batches = []
    for packet in packets:
        batch = out / f"{packet.id}.batch"
        batch.write_text("".join(f"HEAD:{path}\n" for path in packet.blobs))
        batches.append(batch)

    # -X importtime first (it doubles as a warm-up): what each command imports. Run
    # the way the console script runs: import governance.cli, call main().
    as_script = "import sys; from governance.cli import main; sys.exit(main())"
    first = out / "importtime.json"
    profiles = {
        "startup": importtime(["-c", "pass"], cwd=git.path, runs=IMPORTTIME_RUNS),
        "cli": importtime(["-c", "import governance.cli"], cwd=git.path, runs=IMPORTTIME_RUNS),
        "build": importtime(
            ["-c", as_script, "build", packets[0].path, "--output", str(first)],
            cwd=git.path,
            runs=IMPORTTIME_RUNS,
        ),
        "verify": importtime(
            ["-c", as_script, "verify", str(first)], cwd=git.path, runs=IMPORTTIME_RUNS
        ),
    }
    build_roots = import_roots(profiles["build"], profiles["startup"])
    verify_roots = import_roots(profiles["verify"], profiles["startup"])

    peers = find_peers(git.path)
    rows = {
        "spawn": Row("true (process spawn floor)"),
        "startup": Row("python -c pass (interpreter floor)"),
        "import_gov": Row('python -c "import governance"'),
        "import_cli": Row(
            'python -c "import governance.cli"',
            target=f"<= {TARGET_IMPORT_CLI_MS:.0f} ms median",
        ),
        "imports_build": Row(f"python: import all {len(profiles['build'])} modules of a build"),
        "imports_verify": Row(f"python: import all {len(profiles['verify'])} modules of a verify"),
        "catfile": Row("git cat-file --batch (11 blobs, floor)"),
        "build": Row(
            "capsule build (8 reads) --output", target=f"<= {TARGET_BUILD_MS:.0f} ms median"
        ),
        "verify": Row("capsule verify (8 reads)", target=f"<= {TARGET_BUILD_MS:.0f} ms median"),
        **{name: Row(f"peer: {name} (same 8 files, whole)") for name in peers},
    }
    dev_capsule = str(Path(sys.executable).with_name("capsule"))
    if dev_venv:
        rows["startup_dev"] = Row("python -c pass, development venv")
        rows["build_dev"] = Row("capsule build (8 reads), development venv")
    sizes: dict[str, int] = {}
    # One warm-up round (page cache, .pyc files), then interleaved measured rounds.
    for round_ in range(runs + 1):
        packet = packets[round_ % len(packets)]
        capsule_file = out / f"{packet.id}.json"
        taken = {
            "spawn": measure(["true"], cwd=git.path),
            "startup": measure([py, "-c", "pass"], cwd=git.path),
            "import_gov": measure([py, "-c", "import governance"], cwd=git.path),
            "import_cli": measure([py, "-c", "import governance.cli"], cwd=git.path),
            "imports_build": measure([py, "-c", "import " + ", ".join(build_roots)], cwd=git.path),
            "imports_verify": measure(
                [py, "-c", "import " + ", ".join(verify_roots)], cwd=git.path
            ),
            "catfile": measure(
                ["git", "cat-file", "--batch"],
                cwd=git.path,
                stdin=batches[round_ % len(packets)],
            ),
            "build": measure(
                [capsule, "build", packet.path, "--output", str(capsule_file)], cwd=git.path
            ),
            "verify": measure([capsule, "verify", str(capsule_file)], cwd=git.path),
        }
        if dev_venv:
            taken["startup_dev"] = measure([sys.executable, "-c", "pass"], cwd=git.path)
            taken["build_dev"] = measure(
                [dev_capsule, "build", packet.path, "--output", str(out / "dev.json")],
                cwd=git.path,
            )
        sources = [path for path in packet.blobs[3:]]
        for name, argv in peers.items():
            taken[name] = measure([*argv, *sources], cwd=git.path)
        sizes[packet.id] = capsule_file.stat().st_size
        if round_:
            for key, sample in taken.items():
                rows[key].samples.append(sample)

    # The same CLI calls inside one process: first call vs warm calls.
    plan = {
        "build": [
            ["build", packets[i % len(packets)].path, "--output", str(out / f"in-{i}.json")]
            for i in range(runs + 1)
        ],
        "verify": [["verify", str(out / f"in-{i}.json")] for i in range(runs + 1)],
    }
    done = subprocess.run(
        [py, "-c", IN_PROCESS, json.dumps(plan)],
        cwd=git.path,
        env=clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    in_process = json.loads(done.stdout)
    first_build, *warm_build = in_process["build"]
    first_verify, *warm_verify = in_process["verify"]
    rows["build_warm"] = Row("  build in-process, warm main() call", times=warm_build)
    rows["verify_warm"] = Row("  verify in-process, warm main() call", times=warm_verify)

    # The 100 MiB refusal, beside a baseline build of a small packet in the same repo.
    baseline = Row("capsule build, 1 small read (baseline)")
    refusal = Row(
        f"capsule build, {HUGE_BYTES // 2**20} MiB read (refused)",
        target=f"< {TARGET_REFUSAL_MS:.0f} ms, <= 1 copy ({HUGE_BYTES // 2**20} MiB)",
    )
    codes = set()
    for round_ in range(runs + 1):
        small = measure(
            [capsule, "build", "packets/SMALL/packet.yml", "--output", str(out / "small.json")],
            cwd=huge.path,
        )
        big = measure(
            [capsule, "build", "packets/HUGE/packet.yml", "--output", str(out / "huge.json")],
            cwd=huge.path,
            expect=4,
        )
        assert big.code == 4, big
        assert not (out / "huge.json").exists(), "a refused build wrote its output"
        codes.add(big.code)
        if round_:
            baseline.samples.append(small)
            refusal.samples.append(big)
    extra_mb = refusal.rss - baseline.rss if refusal.rss and baseline.rss else 0.0
    refusal.ok = refusal.median < TARGET_REFUSAL_MS and extra_mb <= HUGE_BYTES / 2**20

    rows["build"].ok = rows["build"].median <= TARGET_BUILD_MS
    rows["verify"].ok = rows["verify"].median <= TARGET_BUILD_MS
    rows["import_cli"].ok = rows["import_cli"].median <= TARGET_IMPORT_CLI_MS

    print(f"\nresults ({runs} measured runs each after one warm-up; wall time spawn to reap)")
    order = [
        "spawn",
        "startup",
        "import_gov",
        "import_cli",
        "imports_build",
        "imports_verify",
        "catfile",
        "build",
        "build_warm",
        "verify",
        "verify_warm",
    ]
    if dev_venv:
        order.insert(order.index("startup") + 1, "startup_dev")
        order.insert(order.index("build") + 1, "build_dev")
    print_table([*(rows[k] for k in [*order, *peers]), baseline, refusal])
    if dev_venv:
        print(
            "\nthe development venv (editable install) against the user install, same rounds: "
            f"python -c pass {rows['startup_dev'].median:.1f} / {rows['startup'].median:.1f} ms, "
            f"capsule build {rows['build_dev'].median:.1f} / {rows['build'].median:.1f} ms "
            f"({rows['build_dev'].median - rows['build'].median:+.1f} ms)"
        )
    print("\nratios, medians of the same interleaved rounds (capsule / other)")
    for name in ("startup", "catfile", *peers):
        for command in ("build", "verify"):
            ratio = rows[command].median / rows[name].median
            print(f"  capsule {command:<6} / {rows[name].name:<44} {ratio:6.2f}x")
    if not peers:
        print("  (no peer installed: pip install files-to-prompt; repomix through npx)")
    print("\ncapsule sizes: " + ", ".join(f"{k} {v / 1000:.0f} kB" for k, v in sizes.items()))

    print(f"\n{HUGE_BYTES // 2**20} MiB refusal")
    message = refusal.samples[-1].stderr.strip().splitlines()
    print(f"  exit code     {sorted(codes)} in every run (expected 4: over budget)")
    print(f"  message       {message[0] if message else '(none)'}")
    print(f"  median wall   {refusal.median:.1f} ms (baseline build {baseline.median:.1f} ms)")
    print(
        f"  peak RSS      {refusal.rss:.1f} MB vs baseline {baseline.rss:.1f} MB: "
        f"{extra_mb:+.1f} MB (one copy of the source would be +{HUGE_BYTES / 2**20:.0f} MiB)"
    )

    # Where an end-to-end command goes, from the process medians above.
    startup = rows["startup"].median
    cli = rows["import_cli"].median
    at_cli = {i.name for i in profiles["cli"]}
    print("\nwhere the time goes (medians of separate processes)")
    for name, imports_key, roots in (
        ("build", "imports_build", build_roots),
        ("verify", "imports_verify", verify_roots),
    ):
        total = rows[name].median
        imports = rows[imports_key].median
        warm = rows[f"{name}_warm"].median
        print(f"  capsule {name}: {total:.1f} ms")
        print(f"    {startup:7.1f} ms  interpreter start, site included")
        print(f"    {cli - startup:7.1f} ms  import governance.cli")
        later = ", ".join(r for r in roots if r not in at_cli)
        print(f"    {imports - cli:7.1f} ms  imports after the CLI: {later}")
        print(f"    {total - imports:7.1f} ms  parsing argv, first-call caches and the work")
        print(f"    {'':7}    (the work alone, warm in-process: {warm:.1f} ms)")
    print(
        f"  in one process the first build call took {first_build:.1f} ms, and the first "
        f"verify after it {first_verify:.1f} ms"
    )

    print_importtime(
        f"python -X importtime -c 'import governance.cli' (median of {IMPORTTIME_RUNS})",
        profiles["cli"],
        min_ms=1.0,
        max_depth=3,
        top=10,
    )
    print_importtime(
        f"python -X importtime: capsule build {packets[0].path} (median of {IMPORTTIME_RUNS})",
        profiles["build"],
        min_ms=4.0,
        max_depth=4,
        top=12,
    )
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    if load:
        print(f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=15, help="measured runs per operation")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="smallest setting (20 files, an 8 MiB source, one run): checks the script runs",
    )
    parser.add_argument(
        "--keep", metavar="DIR", help="generate into DIR (new or empty) and keep it"
    )
    parser.add_argument(
        "--dev-venv",
        action="store_true",
        help="also time python -c pass and capsule build from the development venv running "
        "this script (its editable finder included), in the same rounds",
    )
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.smoke:
        global N_FILES, HUGE_BYTES, IMPORTTIME_RUNS
        N_FILES, HUGE_BYTES, IMPORTTIME_RUNS = 20, 8 * 1024 * 1024, 1
        args.runs = 1
    started = time.perf_counter()
    with workspace(args.keep) as root:
        run(args.runs, root, dev_venv=args.dev_venv)
    print(f"\nbenchmark took {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
