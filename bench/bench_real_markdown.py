"""Benchmark the heading scan on real Markdown (issue 21, item 5).

Usage::

    .venv/bin/python bench/bench_real_markdown.py [--corpus CLONE] [--runs N]
        [--pythonpath DIR] [--smoke]

``--corpus`` is a clone of a repository of Markdown nobody here wrote
(rust-lang/rfcs, kubernetes/enhancements); without it, the RFCs vendored in
tests/data/rfcs, committed to a temp repository. Its tracked ``*.md`` files
at HEAD are the corpus. Each figure is a median of ``--runs`` rounds (5;
``--smoke``: 1), the processes of a round interleaved; ratios are taken in
the same run:

* the scan's acceptance: how many documents it answers without markdown-it;
* ``capsule outline --json`` of the document closest to 170 KB, against
  ``capsule --help`` (target: at most 1.5x);
* a heading read of a 4 MB document (the corpus's documents the measured scan
  answers, joined, repeated when the corpus is smaller, a unique last heading)
  against a whole read of it, in this process on a fresh snapshot (target: at
  most 2x);
* ``capsule suggest --json`` of a goal over the corpus, against ``git
  cat-file --batch`` of its blobs (target: at most 10x).

``--pythonpath DIR`` runs the ``governance`` of another checkout (to measure
before a change), in the processes and in this one. The 4 MB document depends
on which documents the running scan answers: ``--save-documents FILE`` writes
the paths it joined and ``--documents FILE`` joins those instead, so a run
before a change reads the same bytes as one after it. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# Beside this script: every measured process runs from a regular install of this tree.
import user_install
from corpus import corpus_repo, markdown_blobs

from support.gitrepo import Repo, git_env

ROOT = Path(__file__).resolve().parent.parent
BIG_BYTES = 4_000_000
TARGET = "Bench Target"


def run(argv: list[str], cwd: Path, env: dict[str, str], stdin: bytes | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        print(f"exit {done.returncode}: {' '.join(argv[-3:])}: {done.stdout[-300:]!r}")
    return seconds


def median(rounds: list[float]) -> float:
    return statistics.median(rounds)


def big_repo(where: Path, texts: list[str]) -> Path:
    repo = where / "big"
    joined: list[str] = []
    size = 0
    for text in itertools.cycle(texts):
        if size + len(text.encode("utf-8")) > BIG_BYTES:
            break
        joined.append(text)
        size += len(text.encode("utf-8")) + 2
    (repo / "docs").mkdir(parents=True)
    body = "\n\n".join(joined) + f"\n\n## {TARGET}\n\nThe section a read selects.\n"
    (repo / "docs" / "big.md").write_text(body, encoding="utf-8")
    Repo(repo, env=git_env(where / "home")).commit("a large document")
    return repo


def in_process(repo: Path, locator: str) -> Callable[[], object]:
    import pygit2  # noqa: PLC0415 (after --pythonpath took effect)

    from governance.core.excerpt import excerpt_of  # noqa: PLC0415
    from governance.core.locator import parse_locator  # noqa: PLC0415
    from governance.core.snapshot import Snapshot  # noqa: PLC0415

    git = pygit2.Repository(str(repo))
    selector = parse_locator(locator)

    def read() -> object:
        snapshot = Snapshot.at(git, "HEAD", check_worktree=False)
        return excerpt_of(snapshot, selector, snapshot.source(selector.path))

    return read


def answered(texts: list[str]) -> list[str]:
    """The texts the heading scan answers (without markdown-it)."""
    from governance.core.headings import _blank_front_matter  # noqa: PLC0415
    from governance.core.headings_scan import scan_headings  # noqa: PLC0415

    return [
        text
        for text in texts
        if scan_headings(_blank_front_matter(text.removeprefix("\ufeff"))) is not None
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="a clone of a repository of Markdown")
    parser.add_argument("--runs", type=int, default=5, help="rounds per figure")
    parser.add_argument("--pythonpath", help="run the governance of another checkout")
    parser.add_argument("--smoke", action="store_true", help="one round")
    parser.add_argument(
        "--documents",
        type=Path,
        help="the corpus paths the 4 MB document joins, one a line (default: those scanned)",
    )
    parser.add_argument(
        "--save-documents", type=Path, help="write the paths the 4 MB document joined, one a line"
    )
    options = parser.parse_args(argv)
    runs = 1 if options.smoke else options.runs
    if options.pythonpath:
        sys.path.insert(0, options.pythonpath)
    install = user_install.get()
    env = install.env()
    if options.pythonpath:
        env["PYTHONPATH"] = options.pythonpath
    capsule = [install.python, "-m", "governance"]
    print(user_install.NOTE)
    with tempfile.TemporaryDirectory() as where:
        repo = corpus_repo(Path(where), options.corpus)
        blobs = markdown_blobs(repo)
        texts, sizes = [], {}
        for _, path in blobs:
            data = (repo / path).read_bytes()
            sizes[path] = len(data)
            texts.append(data.decode("utf-8", "replace"))
        total = sum(sizes.values())
        scanned = answered(texts)
        accepted = len(scanned)
        paths = [path for _, path in blobs]
        if options.documents is not None:
            # The same bytes as another run (another checkout's scan answers
            # other documents): the paths it saved.
            named = options.documents.read_text(encoding="utf-8").split()
            unknown = sorted(set(named) - set(paths))
            if unknown:
                parser.error(f"--documents: not in the corpus: {', '.join(unknown[:5])}")
            joined = [texts[paths.index(path)] for path in named]
        else:
            answers = set(scanned)
            named = [path for path, text in zip(paths, texts, strict=True) if text in answers]
            joined = scanned
        if options.save_documents is not None:
            options.save_documents.write_text("".join(f"{path}\n" for path in named), "utf-8")
        print(f"corpus: {len(blobs)} documents, {total:,} bytes")
        print(f"scan accepts {accepted}/{len(blobs)} ({100 * accepted / len(blobs):.0f}%)")

        document = min(sizes, key=lambda path: abs(sizes[path] - 170_000))
        # The goal: the words of the document's first heading.
        title = next(
            (
                line
                for line in texts[[p for _, p in blobs].index(document)].splitlines()
                if line.startswith("# ")
            ),
            "# design",
        )
        goal = " ".join(w for w in title[2:].replace(":", " ").split() if w.isalpha()) or "design"
        batch = "".join(f"{blob}\n" for blob, _ in blobs).encode()
        rounds: dict[str, list[float]] = {k: [] for k in ("help", "outline", "suggest", "cat")}
        for _ in range(runs):
            rounds["help"].append(run([*capsule, "--help"], repo, env))
            rounds["outline"].append(run([*capsule, "outline", document, "--json"], repo, env))
            rounds["suggest"].append(run([*capsule, "suggest", goal, "--json"], repo, env))
            rounds["cat"].append(run(["git", "cat-file", "--batch"], repo, env, batch))
        help_s, outline_s = median(rounds["help"]), median(rounds["outline"])
        suggest_s, cat_s = median(rounds["suggest"]), median(rounds["cat"])
        print(
            f"outline of {document} ({sizes[document]:,} bytes): {1000 * outline_s:.0f} ms, "
            f"--help {1000 * help_s:.0f} ms: {outline_s / help_s:.2f}x (target <= 1.5x)"
        )
        print(
            f"suggest {goal!r}: {1000 * suggest_s:.0f} ms, cat-file --batch "
            f"{1000 * cat_s:.0f} ms: {suggest_s / cat_s:.1f}x (target <= 10x)"
        )

        big = big_repo(Path(where), joined or texts)
        heading_read = in_process(big, "docs/big.md#bench-target")
        whole_read = in_process(big, "docs/big.md")
        timed: dict[str, list[float]] = {"heading": [], "whole": []}
        heading_read(), whole_read()  # imports and first calls, not timed
        for _ in range(runs):
            for name, read in (("heading", heading_read), ("whole", whole_read)):
                start = time.perf_counter()
                read()
                timed[name].append(time.perf_counter() - start)
        heading_s, whole_s = median(timed["heading"]), median(timed["whole"])
        big_size = os.path.getsize(big / "docs" / "big.md")
        print(
            f"heading read of a {big_size:,}-byte document: {1000 * heading_s:.0f} ms, whole "
            f"read {1000 * whole_s:.0f} ms: {heading_s / whole_s:.2f}x (target <= 2x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
