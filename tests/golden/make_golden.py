"""Regenerate (or --check) the golden capsules in this folder.

Each golden capsule is built from a repository this script creates from fixed
files with pinned authors and dates, so the commit ids (and so the bytes) are
the same on every machine. Run it after a deliberate format change:

    .venv/bin/python tests/golden/make_golden.py          # rewrite
    .venv/bin/python tests/golden/make_golden.py --check  # exit 1 on a diff
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pygit2

from governance.core.builder import build_capsule
from governance.core.repository import open_repository
from governance.core.snapshot import Snapshot
from governance.history.pre_adr import predates_adr_limits

HERE = Path(__file__).resolve().parent

FILES: dict[str, bytes] = {
    "policies/capsule.yml": b"target_tokens: 4000\nhard_limit_tokens: 6000\n"
    b"reserve_tokens: 500\nmax_required_reads: 4\nestimator: utf8_bytes_div_3_ceil\n",
    "docs/roadmap.md": (
        "---\ntitle: Roadmap\n---\n\n# Roadmap\n\n## Phase 1: `capsule build`\n\nDone.\n\n"
        "Phase 2 \u2014 Replay & audit\n--------------------------\n\nÉtape suivante: 日本語.\n\n"
        "```markdown\n## Not a heading\n```\n\n### Details\n\nStill phase 2.\n\n"
        "## Phase 3\n\nLater.\n"
    ).encode(),
    "docs/crlf.md": b"# Windows\r\n\r\nLine one\r\n\r\n## Section\r\n\r\nbody\r\n",
    "packets/GOLD-1/packet.yml": (
        b"id: GOLD-1\ntitle: Golden packet\nobjective: Pin the canonical bytes of capsule/1.\n"
        b"scope:\n  - docs\n  - policies\ndependencies: []\ncontracts:\n  - canonical JSON\n"
        b"question: Is phase 2 ready to start?\nbudget:\n  target_tokens: 3000\n"
        b"required_reads:\n  - docs/roadmap.md#phase-2--replay--audit\n"
        b"  - docs/crlf.md#section\n"
        b"  - docs/crlf.md\n"
    ),
    "packets/GOLD-1/context.md": b"# Context\n\nWhy: the format must never drift.\n",
}
GOLDEN = {"packets/GOLD-1/packet.yml": HERE / "GOLD-1.capsule.json"}


def _git(repo: Path, *args: str) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Golden",
        "GIT_AUTHOR_EMAIL": "golden@example.invalid",
        "GIT_COMMITTER_NAME": "Golden",
        "GIT_COMMITTER_EMAIL": "golden@example.invalid",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def make_repository(root: Path) -> Path:
    repo = root / "golden-repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    for rel, data in FILES.items():
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "golden")
    return repo


def build_all(root: Path) -> dict[Path, bytes]:
    repo = open_repository(make_repository(root))
    # The policy's 500-token reserve loosens the ADR's: this golden is a record
    # from before capsule/1 enforced them (its commit is dated 2026-01-01), and
    # is built by the rule its replay keeps (governance/history/pre_adr.py).
    head = repo.revparse_single("HEAD")
    assert isinstance(head, pygit2.Commit)
    assert predates_adr_limits(head)
    snapshot = Snapshot.at(repo, "HEAD", check_worktree=False)
    return {
        golden: build_capsule(snapshot, packet, adr_limits=False).data
        for packet, golden in GOLDEN.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        built = build_all(Path(tmp))
    drift = 0
    for path, data in built.items():
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                print(f"{path.name}: differs from a fresh build", file=sys.stderr)
                drift = 1
        else:
            path.write_bytes(data)
            print(f"wrote {path.name} ({len(data)} bytes)")
    return drift


if __name__ == "__main__":
    raise SystemExit(main())
