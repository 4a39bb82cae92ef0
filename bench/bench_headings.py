"""Benchmark the heading line scan against markdown-it-py's parse.

Usage::

    .venv/bin/python bench/bench_headings.py [--smoke] [--runs N]

For two sets of documents it times, per document, the line scan alone
(``headings_scan.scan_headings``), the markdown-it parse alone (what
``parse_headings`` did before the scan) and ``parse_headings`` as it is (the
scan, and the parse where the scan declines), and prints how many documents
the scan answered:

* the shared documents of bench/bench_audit.py (its ``Docs``: 24 files of a
  title, an intro and 12 ``##`` sections of two paragraphs), what audit's
  replays parse;
* this repository's README.md, docs/*.md and packets/**/*.md.

Each figure is the best of N rounds (5 by default; ``--smoke``: 1) of one pass
over the set, in ms per document. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from governance.core import headings
from governance.core.headings_scan import scan_headings

# bench_audit's documents, as its replays parse them.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_audit import SEED, Docs

ROOT = Path(__file__).resolve().parent.parent


def best(function: Callable[[str], Any], texts: Sequence[str], runs: int) -> float:
    """Best of ``runs`` passes over ``texts``, in ms per document."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        for text in texts:
            function(text)
        times.append(time.perf_counter() - started)
    return min(times) * 1000 / len(texts)


def report(label: str, texts: list[str], runs: int) -> None:
    # What markdown-it is given: front matter blanked (no BOM in these files).
    prepared = [headings._blank_front_matter(text) for text in texts]
    answered = sum(scan_headings(text) is not None for text in prepared)
    headings._parser()  # both parsers built before any timing
    headings._block_parser()
    scan = best(scan_headings, prepared, runs)
    parse = best(headings._markdown_it_headings, prepared, runs)
    public = best(headings.parse_headings, texts, runs)
    size = sum(map(len, texts)) / len(texts) / 1024
    print(f"{label}: {len(texts)} documents, {size:.1f} KiB on average")
    print(f"  scan answers         {answered}/{len(texts)}")
    print(f"  scan alone           {scan:8.3f} ms/doc")
    print(f"  markdown-it parse    {parse:8.3f} ms/doc  ({parse / scan:.1f}x the scan)")
    print(f"  parse_headings now   {public:8.3f} ms/doc  ({parse / public:.1f}x faster)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one round")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    runs = 1 if args.smoke else args.runs
    docs = Docs(random.Random(SEED))
    report("bench_audit documents", [docs.text(doc) for doc in range(24)], runs)
    paths = sorted([ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("packets/**/*.md")])
    report("this repository's Markdown", [p.read_text(encoding="utf-8") for p in paths], runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
