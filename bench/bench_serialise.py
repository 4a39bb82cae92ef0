"""Benchmark the serialisation of a rebuild: the plain document against the
document of cached fragments the builder serialises.

Usage::

    .venv/bin/python bench/bench_serialise.py [--repo PATH] [--rounds N] [--smoke]

It builds every packet at the head of a ``bench_audit.py`` history (generated
in a temporary folder, or ``--repo``, e.g. one that ``bench_audit.py --keep``
kept), with one cache as a replay has it. For each capsule it serialises,
through the size fixpoint, (a) the plain document, as every build did before
fragments, and (b) the same document with the packet, context, policy and
each read as the canonical fragment the builder caches with them; both must
give the capsule's bytes (checked first). Rounds interleave (a), (b) and a
whole rebuild with a warm cache, so load slows them alike: medians, with min
and max, in microseconds a capsule. Nothing is asserted about time: this
script only prints. ``--smoke`` runs one short round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pygit2

from governance.core import budget, canonical
from governance.core.builder import Built, build_capsule
from governance.core.cache import BlobCache
from governance.core.snapshot import Snapshot

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_audit import generate


def composed(built: Built) -> dict[str, Any]:
    """``built``'s document with its cached parts as fragments, as the builder has it."""
    document = built.document
    return {
        **document,
        "packet": canonical.fragment(document["packet"]),
        "context": canonical.fragment(document["context"]),
        "policy": canonical.fragment(document["policy"]),
        "reads": [excerpt.fragment for excerpt in built.excerpts],
    }


def per_capsule(work: Callable[[], object], count: int, repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        work()
    return (time.perf_counter() - started) / (repeat * count) * 1e6


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", help="a bench_audit.py history (default: generate one)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    parser.add_argument("--smoke", action="store_true", help="one short round")
    args = parser.parse_args(argv)
    rounds, repeat = (1, 2) if args.smoke else (args.rounds, 100)
    with tempfile.TemporaryDirectory(prefix="bench-serialise-") as folder:
        path = Path(args.repo) if args.repo else Path(folder) / "history"
        if not args.repo:
            generate(path, 0, 1)
        repo = pygit2.Repository(str(path))
        head = repo.revparse_single("refs/heads/main")
        assert isinstance(head, pygit2.Commit)
        cache = BlobCache()

        def snapshot() -> Snapshot:
            return Snapshot(repo=repo, tree=head.tree, commit_id=str(head.id), cache=cache)

        listing = head.tree["packets"]
        assert isinstance(listing, pygit2.Tree)
        packets = [f"packets/{entry.name}/packet.yml" for entry in listing]
        built = [build_capsule(snapshot(), packet) for packet in packets]
        pairs = [(b.document, composed(b), b.data) for b in built]
        for plain, parts, data in pairs:
            both = {
                budget.fixpoint(plain, canonical.dumps),
                budget.fixpoint(parts, canonical.dumps),
            }
            if both != {data}:
                raise SystemExit("the composed document does not serialise to the capsule")

        def plain_run() -> None:
            for plain, _, _ in pairs:
                budget.fixpoint(plain, canonical.dumps)

        def composed_run() -> None:
            for _, parts, _ in pairs:
                budget.fixpoint(parts, canonical.dumps)

        def rebuild_run() -> None:
            for packet in packets:
                build_capsule(snapshot(), packet)

        runs: dict[str, Callable[[], None]] = {
            "plain document": plain_run,
            "cached fragments": composed_run,
            "whole rebuild, warm cache": rebuild_run,
        }
        taken: dict[str, list[float]] = {name: [] for name in runs}
        for index in range(rounds):
            order = list(runs) if index % 2 == 0 else list(reversed(runs))
            for name in order:
                times = repeat if name != "whole rebuild, warm cache" else max(repeat // 10, 1)
                taken[name].append(per_capsule(runs[name], len(pairs), times))
    size = statistics.mean(len(data) for _, _, data in pairs)
    print(
        f"{len(pairs)} capsules of {size:,.0f} bytes on average, {os.cpu_count()} cpus, load "
        f"{os.getloadavg()[0]:.2f}; medians of {rounds} interleaved rounds, us a capsule"
    )
    for name, values in taken.items():
        print(
            f"  {name:<28} {statistics.median(values):8.1f}  "
            f"(min {min(values):.1f}, max {max(values):.1f})"
        )
    plain, parts = (statistics.median(taken[n]) for n in ("plain document", "cached fragments"))
    rebuild = statistics.median(taken["whole rebuild, warm cache"])
    print(
        f"  fragments serialise {plain / parts:.1f}x faster; the serialisation is "
        f"{parts / rebuild * 100:.0f}% of a warm rebuild (the plain document's would be "
        f"{plain / (rebuild - parts + plain) * 100:.0f}%)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
