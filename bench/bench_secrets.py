"""Benchmark the secret scan (issue 24, item 4): what it adds to a build.

Usage::

    .venv/bin/python bench/bench_secrets.py [--smoke] [--runs N]

Generates a git repository in a temp folder with two packets, each as large
as the default budget lets a capsule be:

* ``WHOLE``: one whole-file read of about 32,000 bytes of prose and code
  (digests, identifiers, URLs: what the scan must not flag);
* ``SECTION``: one ``#heading`` read of a section of about 32,000 bytes in a
  Markdown source of 4 MiB (the policy's ``max_heading_source_bytes``): the
  parse reads the whole source, the scan only the section.

Each packet is built in this process with a fresh cache every run (nothing
memoised from the run before), with the scan and without it
(``scan_secrets=False``, what replay does), interleaved; the figure is the
median. Then the scan alone on the 32,000 bytes, and the one-off cost of
loading the detector (detect-secrets imports requests), as two processes
interleaved: ``import governance.core.builder`` with and without
``detector()``. Nothing is asserted; ``--smoke`` runs each once.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import pygit2  # noqa: E402

from governance.core.builder import build_capsule  # noqa: E402
from governance.core.cache import BlobCache  # noqa: E402
from governance.core.secretscan import detector  # noqa: E402
from governance.core.snapshot import Snapshot  # noqa: E402
from support.gitrepo import POLICY, Repo, git_env, packet_yaml  # noqa: E402

SEED = 20260124
# About the largest read the default budget (12,000 tokens, bytes / 3) lets in.
READ_BYTES = 32_000
SOURCE_BYTES = 4 << 20


def prose(rng: random.Random, size: int) -> str:
    """Markdown-like lines of what documentation holds: words, digests, ids, URLs."""
    words = ["the", "capsule", "records", "build", "commit", "policy", "read", "agent"]
    lines: list[str] = []
    total = 0
    while total < size:
        kind = rng.randrange(5)
        if kind == 0:
            line = f"sha256 {rng.randbytes(32).hex()} of blob {rng.randbytes(20).hex()}"
        elif kind == 1:
            line = (
                f"    result = build_capsule(snapshot, 'packets/T-{rng.randrange(999)}/packet.yml')"
            )
        elif kind == 2:
            where = f"{rng.randbytes(6).hex()}/docs#section-{rng.randrange(99)}"
            line = f"See https://example.invalid/{where}"
        else:
            line = " ".join(rng.choice(words) for _ in range(12)) + "."
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def make_repo(where: Path) -> Repo:
    rng = random.Random(SEED)
    repo = Repo(where / "repo", git_env(where / "home"))
    repo.write("policies/capsule.yml", POLICY)
    repo.write("docs/large.md", "# Large\n\n" + prose(rng, READ_BYTES - 10))
    filler = prose(rng, SOURCE_BYTES - READ_BYTES - 100)
    section = prose(rng, READ_BYTES - 20)
    repo.write("docs/huge.md", f"# Huge\n\n## Target\n\n{section}\n## Rest\n\n{filler}")
    for packet, read in (("WHOLE", "docs/large.md"), ("SECTION", "docs/huge.md#target")):
        repo.write(f"packets/{packet}/packet.yml", packet_yaml(packet, [read]))
        repo.write(f"packets/{packet}/context.md", "# Context\n\nA benchmark.\n")
    repo.commit("bench")
    return repo


def build_ms(repo: Repo, packet: str, *, scan: bool) -> float:
    git = pygit2.Repository(str(repo.path))
    snapshot = Snapshot.at(git, repo.head(), check_worktree=False)
    snapshot.cache = BlobCache()
    start = time.perf_counter()
    build_capsule(snapshot, f"packets/{packet}/packet.yml", scan_secrets=scan)
    return (time.perf_counter() - start) * 1e3


def process_ms(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    return (time.perf_counter() - start) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one run of each")
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    runs = 1 if args.smoke else args.runs
    found = detector()
    print(
        f"detector: {found.status()['detector']} {found.version}, "
        f"{len(found.plugins)} plugins" + ("" if found.available else f" ({found.unavailable})")
    )
    with tempfile.TemporaryDirectory() as folder:
        repo = make_repo(Path(folder))
        build_ms(repo, "WHOLE", scan=True)  # warm: the detector and the libraries loaded
        for packet in ("WHOLE", "SECTION"):
            scanned, plain = [], []
            for _ in range(runs):
                scanned.append(build_ms(repo, packet, scan=True))
                plain.append(build_ms(repo, packet, scan=False))
            with_scan, without = statistics.median(scanned), statistics.median(plain)
            print(
                f"build {packet:<7} ({runs} runs, median): {without:7.1f} ms without the scan, "
                f"{with_scan:7.1f} ms with it: +{with_scan - without:.1f} ms "
                f"({(with_scan / without - 1) * 100:+.0f}%)"
            )
        text = (repo.path / "docs/large.md").read_text()
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            found.scan(text)
            times.append((time.perf_counter() - start) * 1e3)
        scan = statistics.median(times)
        print(
            f"scan alone of {len(text.encode()):,} bytes ({text.count(chr(10)):,} lines): "
            f"{scan:.1f} ms ({len(text) / scan / 1e3:.2f} MB/s)"
        )
    base = "import governance.core.builder"
    loaded = base + "; from governance.core.secretscan import detector; detector()"
    rounds = 1 if args.smoke else 11
    bare, full = [], []
    for _ in range(rounds):
        bare.append(process_ms(base))
        full.append(process_ms(loaded))
    print(
        f"loading the detector ({rounds} process pairs, median): "
        f"{statistics.median(bare):.0f} ms -> {statistics.median(full):.0f} ms "
        f"(+{statistics.median(full) - statistics.median(bare):.0f} ms a process)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
