"""Retrieval quality of ``capsule suggest`` (issue 10): for each goal of
``bench/suggest_goals.json``, the sections written down as its answer, and
whether the suggestion contains them.

Usage::

    .venv/bin/python bench/bench_suggest_quality.py [--smoke] [--distractors N] [--keep DIR]

Builds a git repository from this repository's own ``docs/*.md`` and
``README.md`` at the goal file's ``docs_commit`` (HEAD's when that commit is
not in this clone: a shallow one) plus N generated distractor files, whose
prose is drawn from the same docs' word frequencies (so every goal term occurs
in them, at a realistic rate). Then it runs the suggestion for every goal and
prints, per goal, the reads proposed, whether an expected section is among
them (exact locator), or overlapping one (a read in the same file whose lines
overlap an expected section), and the rank of the first exact hit; then the
hit rates and the mean rank of the first hit. Printed only; nothing is
asserted but that every suggestion succeeds. ``--smoke`` is the smallest
setting (3 goals, 5 distractors).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# The tests' shared helpers (tests/support): the policy text and the git
# environment exist once.
sys.path.insert(0, str(ROOT / "tests"))

from governance.authoring.corpus import scan  # noqa: E402
from governance.authoring.suggest import Options, suggest  # noqa: E402
from governance.authoring.template import Draft  # noqa: E402
from governance.core.repository import open_repository  # noqa: E402
from governance.core.snapshot import Snapshot  # noqa: E402
from support.gitrepo import POLICY, clean_environ, git_env  # noqa: E402

SEED = 20261002


def git(*args: str, cwd: Path, home: Path | None = None) -> str:
    # This repository's own git keeps the user's environment; the generated one
    # is isolated (no user configuration, a pinned identity and date).
    env = clean_environ()
    if home is not None:
        env = {**git_env(home), "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
               "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}  # fmt: skip
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def sources(commit: str) -> tuple[str, dict[str, str]]:
    """README.md and docs/*.md of this repository at ``commit`` (or HEAD)."""
    try:
        git("cat-file", "-e", f"{commit}^{{commit}}", cwd=ROOT)
    except subprocess.CalledProcessError:
        commit = "HEAD"
    names = git("ls-tree", "--name-only", commit, "docs/", cwd=ROOT).split()
    paths = ["README.md"] + [n for n in names if n.endswith(".md")]
    return commit, {p: git("show", f"{commit}:{p}", cwd=ROOT) for p in paths}


def distractor(rng: random.Random, words: list[str], weights: list[int], index: int) -> str:
    parts = [f"# Note {index}\n\n"]
    for section in range(rng.randint(3, 8)):
        title = " ".join(rng.choices(words, weights, k=rng.randint(1, 3)))
        parts.append(f"## {title.capitalize()} {section}\n\n")
        for _ in range(rng.randint(1, 3)):
            parts.append(" ".join(rng.choices(words, weights, k=rng.randint(30, 90))) + ".\n\n")
    return "".join(parts)


def make_repo(where: Path, docs: dict[str, str], n_distractors: int) -> Path:
    repo = where / "quality"
    repo.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=repo, home=where)
    (repo / "policies").mkdir()
    (repo / "policies/capsule.yml").write_text(POLICY)
    for path, text in docs.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    counts = Counter(re.findall(r"[A-Za-z][a-z]+", " ".join(docs.values()).lower()))
    words = sorted(counts)
    weights = [counts[w] for w in words]
    rng = random.Random(SEED)
    (repo / "notes").mkdir()
    for index in range(n_distractors):
        (repo / f"notes/note{index:04d}.md").write_text(distractor(rng, words, weights, index))
    git("add", "-A", cwd=repo, home=where)
    git("commit", "-qm", "corpus", cwd=repo, home=where)
    return repo


def overlaps(read: dict, expected: str, lines: dict[str, tuple[int, int]]) -> bool:
    path = expected.partition("#")[0]
    if read["path"] != path or expected not in lines:
        return False
    first, last = lines[expected]
    return read["lines"][0] <= last and first <= read["lines"][1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="smallest setting")
    parser.add_argument("--distractors", type=int, default=300, help="generated files")
    parser.add_argument("--keep", type=Path, help="generate the repository here and keep it")
    args = parser.parse_args(argv)
    data = json.loads((ROOT / "bench/suggest_goals.json").read_text())
    goals = data["goals"][:3] if args.smoke else data["goals"]
    n_distractors = 5 if args.smoke else args.distractors
    commit, docs = sources(data["docs_commit"])
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep if args.keep is not None else Path(tmp)
        repo = make_repo(where, docs, n_distractors)
        snapshot = Snapshot.at(open_repository(repo), "HEAD", check_worktree=False)
        # Where each expected section is (for the overlap column): every
        # candidate's lines, from a suggestion that keeps nothing out.
        lines = {d.locator: (d.first_line, d.last_line) for d in scan(snapshot, None, []).docs}
        print(f"corpus: {len(docs)} files of this repository's docs at {commit}, "
              f"{n_distractors} distractors")  # fmt: skip
        print(f"{'#':>2} {'reads':>5} {'hit':>4} {'rank':>4} {'near':>4}  goal")
        hits = near = 0
        ranks = []
        for number, item in enumerate(goals, 1):
            draft = Draft.make(item["goal"], snapshot.commit_id)
            result = suggest(snapshot, draft, Options())
            locators = [read["locator"] for read in result["reads"]]
            missing = [e for e in item["expected"] if e not in lines]
            rank = next((i for i, loc in enumerate(locators, 1) if loc in item["expected"]), None)
            close = any(
                overlaps(read, e, lines) for read in result["reads"] for e in item["expected"]
            )
            hits += rank is not None
            near += close
            if rank is not None:
                ranks.append(rank)
            label = item["goal"] if len(item["goal"]) <= 60 else item["goal"][:57] + "..."
            if "packet" in item:
                label = f"{item['packet']}: {label}"
            print(f"{number:>2} {len(locators):>5} {'yes' if rank else 'no':>4} "
                  f"{rank or '-':>4} {'yes' if close else 'no':>4}  {label}")  # fmt: skip
            for missing_locator in missing:
                print(f"   expected section not in the corpus: {missing_locator}")
            if rank is None:
                print(f"   expected {item['expected']}; got {locators}")
        n = len(goals)
        mean_rank = sum(ranks) / len(ranks) if ranks else float("nan")
        print(f"hit rate (an expected section proposed): {hits}/{n} = {hits / n:.0%}")
        print(f"near-hit rate (a read overlapping one): {near}/{n} = {near / n:.0%}")
        print(f"mean rank of the first hit: {mean_rank:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
