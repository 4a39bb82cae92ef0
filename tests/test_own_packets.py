"""This repository governs its own work: every packet in packets/ must build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from governance.core.builder import build_capsule
from governance.core.repository import open_repository
from governance.core.snapshot import Snapshot

ROOT = Path(__file__).resolve().parent.parent
PACKETS = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("packets/*/packet.yml"))


def test_there_are_packets() -> None:
    assert PACKETS


@pytest.mark.parametrize("packet", PACKETS)
def test_own_packet_builds_at_head(packet: str) -> None:
    repo = open_repository(ROOT)
    head = str(repo.head.target)
    # At the commit, not the working tree: a test run must not depend on
    # whether the developer has uncommitted edits.
    built = build_capsule(Snapshot.at(repo, head), packet)
    assert built.document["commit"] == head
    assert built.estimated_tokens <= built.limits.target_tokens


def test_own_records_replay_identically(cli) -> None:
    # Every capsule record this repository has committed must still rebuild
    # byte for byte at its declared commit: the builder cannot drift silently.
    result = cli(["audit", "--json"], cwd=ROOT)
    report = json.loads(result.out)
    assert report["counts"]["records"] >= 1, report["counts"]
    assert result.code == 0, [r for r in report["results"] if r["result"] != "identical"]
