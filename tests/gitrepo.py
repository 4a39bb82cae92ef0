"""Real git repositories in temp folders, with reproducible commit ids."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

POLICY = """\
target_tokens: 12000
hard_limit_tokens: 16000
reserve_tokens: 1500
max_required_reads: 8
estimator: utf8_bytes_div_3_ceil
"""

ROADMAP = """\
# Roadmap

Intro text.

## Phase 1

First phase.

## Phase 2

Second phase, with é and 日本.

### Details

Nested details stay in phase 2.

## Phase 3

Last.
"""


def packet_yaml(packet_id: str, reads: Sequence[str], **extra: str) -> str:
    lines = [
        f"id: {packet_id}",
        f"title: Work item {packet_id}",
        "objective: Carry the work forward.",
        "scope: docs",
        "dependencies: []",
        "contracts: []",
    ]
    lines += [f"{key}: {value}" for key, value in extra.items()]
    lines.append("required_reads:" + ("" if reads else " []"))
    # JSON strings are valid YAML double-quoted scalars, escapes included.
    lines += [f"  - {json.dumps(read)}" for read in reads]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


class Repo:
    """A real git repository in a temp folder, with reproducible commit ids."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tick = 0
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, check: bool = True) -> str:
        self._tick += 1
        env = {
            **os.environ,
            "GIT_AUTHOR_DATE": f"2026-01-01T00:00:{self._tick % 60:02d}Z",
            "GIT_COMMITTER_DATE": f"2026-01-01T00:00:{self._tick % 60:02d}Z",
        }
        done = subprocess.run(
            ["git", *args], cwd=self.path, env=env, check=check, capture_output=True, text=True
        )
        return done.stdout.strip()

    def write(self, rel: str, content: str | bytes) -> Path:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_bytes(content.encode("utf-8"))
        return target

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")
