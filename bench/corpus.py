"""A real Markdown corpus for the benches that read one (bench_real_markdown,
bench_suggest_real): a clone given on the command line, or the vendored
sample of rust-lang/rfcs (tests/data/rfcs, its licence in tests/data/README.md),
committed under a default policy, and the blobs a process would read."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from support.gitrepo import Repo, git_env

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "data" / "rfcs"


def corpus_repo(where: Path, corpus: Path | None) -> Path:
    """A repository of the corpus with a committed default policy (what
    suggest and build read): a local clone of ``corpus``, or the sample."""
    repo = where / "corpus"
    if corpus is not None:
        subprocess.run(["git", "clone", "-q", str(corpus), str(repo)], check=True)
    else:
        shutil.copytree(SAMPLE, repo)
    (repo / "policies").mkdir(exist_ok=True)
    (repo / "policies" / "capsule.yml").write_text("# Benchmark policy: the defaults.\n")
    Repo(repo, env=git_env(where / "home")).commit("the corpus, under a policy")
    return repo


def markdown_blobs(repo: Path) -> list[tuple[str, str]]:
    """(blob id, path) of every tracked regular *.md file at HEAD: what
    ``git cat-file --batch`` is given as the floor."""
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "-z", "HEAD"], cwd=repo, capture_output=True, check=True
    ).stdout.decode("utf-8")
    found = []
    for entry in filter(None, listed.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, kind, blob = meta.split()
        if kind == "blob" and mode == "100644" and path.lower().endswith(".md"):
            found.append((blob, path))
    return found
