"""Histories with capsule records, for the replay and audit tests."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from governance.core import canonical
from governance.core.budget import fixpoint
from governance.core.hashing import sha256_hex
from support.gitrepo import POLICY, Repo, Result, packet_yaml

P1 = "packets/P-1/packet.yml"
P2 = "packets/P-2/packet.yml"

Cli = Callable[..., Result]


def record(cli: Cli, repo: Repo, packet: str = P1, *args: str) -> str:
    """``capsule build PACKET --record``; the record's repository path."""
    result = cli(["build", packet, "--record", "--json", *args], cwd=repo.path)
    assert result.code == 0, result
    return str(json.loads(result.out)["record"])


def forge(data: bytes, edit: Callable[[dict[str, Any]], None]) -> bytes:
    """A hand edit that keeps the capsule canonical and internally consistent
    (budget numbers refreshed), so only a replay can tell."""
    document = json.loads(data)
    edit(document)
    return fixpoint(document, canonical.dumps)


def forge_target(data: bytes, target: int = 15000) -> bytes:
    """A record claiming another policy target than its commit's policy gives."""

    def edit(d: dict[str, Any]) -> None:
        d["policy"]["target_tokens"] = d["budget"]["target_tokens"] = target

    return forge(data, edit)


def forge_whole_read(data: bytes, index: int, text: str) -> bytes:
    """A whole-file excerpt replaced, with every hash, blob id and line count that
    covers it rewritten to match: consistent in itself, false to its commit."""

    def edit(d: dict[str, Any]) -> None:
        read = d["reads"][index]
        assert read["heading"] is None
        raw = text.encode()
        read["text"] = text
        read["selected_sha256"] = read["source_sha256"] = sha256_hex(raw)
        read["blob"] = str(pygit2.hash(raw))
        read["lines"] = [1, len(raw.splitlines())]

    return forge(data, edit)


def record_on_a_deleted_branch(cli: Cli, repo: Repo) -> tuple[str, str]:
    """A record committed on main whose declared commit only ever lived on a
    branch that was then deleted (as after a squash merge)."""
    repo.git("checkout", "-q", "-b", "side")
    repo.write("docs/notes.md", "# Notes\n\nOn the side branch.\n")
    side = repo.commit("side work")
    data = (repo.path / record(cli, repo)).read_bytes()
    repo.git("checkout", "-q", "-f", "main")
    repo.git("clean", "-q", "-fd")
    repo.git("branch", "-q", "-D", "side")
    path = f"packets/P-1/capsules/{side[:12]}.json"
    repo.write(path, data)
    repo.commit("squash-merged: only the record came across")
    return path, side


def audit(cli: Cli, repo: Repo | Path, *args: str) -> tuple[int, dict[str, Any]]:
    where = repo.path if isinstance(repo, Repo) else repo
    result = cli(["audit", "--json", *args], cwd=where)
    return result.code, json.loads(result.out)


def git(where: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=where, check=True, capture_output=True, text=True)
    return done.stdout.strip()


@dataclass(frozen=True)
class History:
    repo: Repo
    c1: str  # P-2 added: both packets share docs/notes.md and docs/roadmap.md
    c3: str  # policy changed (target_tokens 11000)
    c4: str  # docs/notes.md edited
    records: tuple[str, ...]  # P-1@c1, P-2@c1, P-1@c3, P-1@c4, P-2@c4


def make_history(cli: Cli, repo: Repo) -> History:
    """The ``repo`` fixture, grown into a history whose records span a policy
    change and later source edits."""
    repo.write(P2, packet_yaml("P-2", ["docs/roadmap.md#phase-1", "docs/notes.md"]))
    repo.write("packets/P-2/context.md", "# Context\n\nThe second packet.\n")
    c1 = repo.commit("add P-2")
    records = [record(cli, repo, P1), record(cli, repo, P2)]
    repo.commit("records at c1")
    repo.write(
        "policies/capsule.yml", POLICY.replace("target_tokens: 12000", "target_tokens: 11000")
    )
    c3 = repo.commit("policy: lower the target")
    records.append(record(cli, repo, P1))
    repo.commit("record P-1 under the new policy")
    repo.write("docs/notes.md", "# Notes\n\nSome notes, edited later.\n")
    c4 = repo.commit("edit notes")
    records += [record(cli, repo, P1), record(cli, repo, P2)]
    repo.commit("records at c4")
    repo.write("docs/roadmap.md", "# Roadmap\n\nRewritten after every record.\n")
    repo.commit("rewrite the roadmap")
    return History(repo, c1, c3, c4, tuple(records))
