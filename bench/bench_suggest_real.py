"""Retrieval quality and speed of ``capsule suggest`` on a real corpus nobody
here wrote (issue 21 item 4): rust-lang/rfcs.

Usage::

    .venv/bin/python bench/bench_suggest_real.py [--corpus CLONE] [--goals N] [--smoke]
        [--pythonpath DIR]

The corpus is a clone of rust-lang/rfcs given with ``--corpus``, or by
default the 50 RFCs vendored under ``tests/data/rfcs``; it is copied into a
temporary repository with a default policy committed. Each RFC
(``text/NNNN-name.md``) gives two goals: its title (the words of its file
name, the way the RFC index names it) and the first sentence of its Summary.
``--goals N`` takes N RFCs spread evenly over the sorted list (default: every
RFC of the vendored sample, 20 of a clone).

For each goal ``capsule suggest GOAL --json`` runs as its own process, from a
regular install of this tree, and ``git cat-file --batch`` of the corpus's
Markdown blobs right after it. Printed:

* key hit rate: a read is the goal's RFC's Summary, Motivation or Guide-level
  section (or the whole RFC, which holds them), and the mean rank of the
  first such read;
* file hit rate: any read comes from the goal's RFC;
* the baseline beside it: files ranked by how many distinct goal terms they
  contain (ties by path), the right RFC first, or among the first 5;
* the share of the target budget the suggested capsule uses;
* suggest's median time against cat-file's, and the median ratio.

Nothing is asserted but that every run succeeds. ``--smoke``: three RFCs of
the vendored sample.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# Beside this script: every measured process runs from a regular install of this tree.
import user_install
from corpus import corpus_repo, markdown_blobs

KEY_SECTIONS = ("summary", "motivation", "guide-level", "guide level")
RFC_NAME = re.compile(r"^text/(\d+)-([^/]+)\.md$")
# The baseline's terms: runs of letters and digits, casefolded, without the
# commonest function words; deliberately simpler than suggest's.
WORD = re.compile(r"[^\W_]+")
_BASELINE_STOP = "a an and are as at be by for from how in is it of on or that the this to with"
BASELINE_STOP = frozenset(_BASELINE_STOP.split(" "))
MAX_GOAL_WORDS = 30


@dataclass(frozen=True)
class Goal:
    path: str
    kind: str  # "title" or "sentence"
    text: str


def first_sentence(text: str) -> str | None:
    """The first sentence of the RFC's Summary section, as plain words."""
    lines = text.replace("\r\n", "\n").split("\n")
    start = next(
        (i for i, line in enumerate(lines) if re.match(r"^#+\s*summary\b", line, re.I)), None
    )
    if start is None:
        return None
    paragraph: list[str] = []
    for line in lines[start + 1 :]:
        stripped = line.strip()
        if stripped.startswith("#"):
            break
        if not stripped or re.match(r"^\[[^\]]*\]:", stripped) or stripped.startswith("<!--"):
            if paragraph:
                break
            continue
        paragraph.append(stripped)
    joined = " ".join(paragraph)
    sentence = re.split(r"(?<=[.!?])\s", joined, maxsplit=1)[0]
    words = re.sub(r"[`*_\[\]()<>]", " ", sentence).split()
    return " ".join(words[:MAX_GOAL_WORDS]) or None


def goals_of(repo: Path, blobs: list[tuple[str, str]], count: int | None) -> list[Goal]:
    rfcs = sorted(path for _, path in blobs if RFC_NAME.match(path))
    if count is not None and count < len(rfcs):
        rfcs = [rfcs[i * len(rfcs) // count] for i in range(count)]
    goals = []
    for path in rfcs:
        match = RFC_NAME.match(path)
        assert match is not None
        goals.append(Goal(path, "title", match.group(2).replace("-", " ").replace("_", " ")))
        sentence = first_sentence((repo / path).read_text(encoding="utf-8", errors="replace"))
        if sentence:
            goals.append(Goal(path, "sentence", sentence))
    return goals


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.casefold()) if len(w) > 1 and w not in BASELINE_STOP}


def baseline_rank(goal: str, files: dict[str, set[str]], path: str) -> int:
    """The rank (1-based) of ``path`` when files are ordered by distinct goal terms."""
    terms = words(goal)
    ranked = sorted(files, key=lambda p: (-len(terms & files[p]), p))
    return ranked.index(path) + 1


def is_key(read: dict[str, object], path: str) -> bool:
    if read["path"] != path:
        return False
    heading = read["heading"]
    return heading is None or str(heading).strip().casefold().startswith(KEY_SECTIONS)


def timed(
    argv: list[str], cwd: Path, env: dict[str, str], stdin: bytes | None = None
) -> tuple[float, int, bytes]:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, check=False)
    seconds = time.perf_counter() - start
    return seconds, done.returncode, done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="a clone of rust-lang/rfcs")
    parser.add_argument("--goals", type=int, help="how many RFCs give goals")
    parser.add_argument("--pythonpath", help="run the governance of another checkout")
    parser.add_argument("--smoke", action="store_true", help="three RFCs of the sample")
    parser.add_argument("--verbose", action="store_true", help="print every goal's reads")
    options = parser.parse_args(argv)
    count = options.goals
    if options.smoke:
        options.corpus, count = None, 3
    elif count is None and options.corpus is not None:
        count = 20
    install = user_install.get()
    env = install.env()
    if options.pythonpath:
        env["PYTHONPATH"] = options.pythonpath
    capsule = [install.python, "-m", "governance", "suggest"]
    print(user_install.NOTE)
    with tempfile.TemporaryDirectory() as where:
        repo = corpus_repo(Path(where), options.corpus)
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        blobs = markdown_blobs(repo)
        texts = {path: (repo / path).read_text("utf-8", errors="replace") for _, path in blobs}
        files = {path: words(text) for path, text in texts.items()}
        total = sum(len((repo / path).read_bytes()) for path in texts)
        goals = goals_of(repo, blobs, count)
        print(f"corpus: {len(blobs)} Markdown files, {total:,} bytes (commit {head})")
        print(f"goals: {len(goals)} from {len({g.path for g in goals})} RFCs")
        batch = "".join(f"{blob}\n" for blob, _ in blobs).encode()

        rows: dict[str, list[dict[str, float]]] = {"title": [], "sentence": []}
        refused: Counter[str] = Counter()
        suggest_s: list[float] = []
        cat_s: list[float] = []
        for goal in goals:
            seconds, status, out = timed([*capsule, goal.text, "--json"], repo, env)
            cat, cat_status, _ = timed(["git", "cat-file", "--batch"], repo, env, batch)
            if cat_status != 0:
                raise SystemExit(f"git cat-file --batch exited {cat_status}")
            suggest_s.append(seconds)
            cat_s.append(cat)
            result = json.loads(out) if out.startswith(b"{") else {}
            if status != 0:
                # A coded refusal (exit 2: a goal of stop words only) or a crash:
                # counted, and a miss.
                error = result.get("error", {})
                refused[f"exit {status} {error.get('code', '')}".strip()] += 1
                print(f"refused ({status}): {goal.kind} {goal.path}: {goal.text!r}")
                result = {"reads": [], "capsule": {}}
            reads = result["reads"]
            ranks = [i + 1 for i, read in enumerate(reads) if is_key(read, goal.path)]
            capsule_size = result["capsule"]
            share = (
                capsule_size["estimated_tokens"] / capsule_size["target_tokens"]
                if "target_tokens" in capsule_size
                else 0.0
            )
            base = baseline_rank(goal.text, files, goal.path)
            rows[goal.kind].append(
                {
                    "key": 1.0 if ranks else 0.0,
                    "rank": float(ranks[0]) if ranks else 0.0,
                    "file": 1.0 if any(r["path"] == goal.path for r in reads) else 0.0,
                    "base1": 1.0 if base == 1 else 0.0,
                    "base5": 1.0 if base <= 5 else 0.0,
                    "share": share,
                    "reads": float(len(reads)),
                }
            )
            if options.verbose:
                print(f"{goal.kind:>8} {goal.path}: {goal.text!r}")
                for read in reads:
                    mark = "*" if is_key(read, goal.path) else " "
                    print(f"         {mark} {read['locator']} ({read['bytes']:,} B)")

        print(
            f"{'goals':>9} {'n':>4} {'key hit':>8} {'1st rank':>8} {'file hit':>8} "
            f"{'base@1':>7} {'base@5':>7} {'reads':>6} {'budget':>7}"
        )
        for kind, found in (*rows.items(), ("all", rows["title"] + rows["sentence"])):
            if not found:
                continue
            n = len(found)
            hits = [r for r in found if r["key"]]
            rank = statistics.mean(r["rank"] for r in hits) if hits else 0.0

            def rate(name: str, found: list[dict[str, float]] = found) -> float:
                return 100 * sum(r[name] for r in found) / len(found)

            print(
                f"{kind:>9} {n:>4} {rate('key'):>7.0f}% {rank:>8.2f} {rate('file'):>7.0f}% "
                f"{rate('base1'):>6.0f}% {rate('base5'):>6.0f}% "
                f"{statistics.mean(r['reads'] for r in found):>6.1f} "
                f"{100 * statistics.mean(r['share'] for r in found):>6.0f}%"
            )
        print(f"refused: {sum(refused.values())} {dict(sorted(refused.items()))}")
        ratios = [s / c for s, c in zip(suggest_s, cat_s, strict=True)]
        print(
            f"time: suggest median {1000 * statistics.median(suggest_s):.0f} ms, "
            f"cat-file --batch median {1000 * statistics.median(cat_s):.0f} ms, "
            f"median ratio {statistics.median(ratios):.1f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
