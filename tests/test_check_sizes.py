"""Issue 22 item 3: every path that collects a packet's errors (``capsule
check``, ``check --all``, the packets hook, MCP's ``check``) judges a read's
size from its object header before reading it, as build does.

The huge blob here is ``blob_claiming``'s: a real object header claiming
1 GiB over a body of a few bytes, so any read of it fails. A check that
reports ``over_budget`` for it, and nothing else, never read it (on main,
every one of these paths read and decoded the whole blob: 3.2 s and 548 MB
at 256 MiB). bench/bench_check_large.py measures real blobs of that size."""

from __future__ import annotations

import json
import os

import pytest
from test_mcp import call, ok

from capsule_hooks import packets
from governance.core.repository import open_repository
from governance.core.snapshot import Snapshot
from governance.guards.check import MAX_INDEXED_PACKET_BYTES, ReverseIndex
from support.gitrepo import Repo, blob_claiming, packet_yaml

HUGE = 1 << 30
BIG = "packets/BIG/packet.yml"


def stage_a_huge_read(repo: Repo, *, commit: bool) -> None:
    """Packet BIG, reading ``docs/huge.md`` whole: in the index a blob of 1 GiB
    by its header, in the working tree a sparse file of that size (so the
    working-tree comparison has to read the blob, if anything runs it)."""
    oid = blob_claiming(repo.path, HUGE)
    repo.git("update-index", "--add", "--cacheinfo", f"100644,{oid},docs/huge.md")
    repo.write(BIG, packet_yaml("BIG", ["docs/huge.md", "docs/notes.md"]))
    repo.write("packets/BIG/context.md", "# Context\n\nA huge read.\n")
    repo.git("add", "packets/BIG")
    if commit:
        repo.git("commit", "-q", "-m", "a packet with a huge whole-file read")
    # After the commit: git would hash a file of the working tree it has no
    # stat data for.
    with open(repo.path / "docs/huge.md", "wb") as handle:
        handle.truncate(HUGE)


def only_over_budget(failures: list[dict]) -> None:
    assert [(f["locator"], f["code"]) for f in failures] == [(BIG, "over_budget")], failures
    huge = [p for p in failures[0]["parts"] if p["part"] == "docs/huge.md"]
    assert [p["bytes"] for p in huge] == [HUGE]


@pytest.mark.parametrize("args", [[BIG], ["--all"]], ids=["check PACKET", "check --all"])
def test_issue22_check_judges_a_huge_read_from_its_header(cli, repo: Repo, args) -> None:
    stage_a_huge_read(repo, commit=True)
    result = cli(["check", "--json", *args], cwd=repo.path)
    assert result.code == 4, result
    (packet,) = [p for p in json.loads(result.out)["packets"] if p["path"] == BIG]
    only_over_budget(packet["failures"])


def test_issue22_check_staged_judges_a_huge_read_from_its_header(cli, repo: Repo) -> None:
    stage_a_huge_read(repo, commit=False)
    result = cli(["check", "--json", "--staged", BIG], cwd=repo.path)
    assert result.code == 4, result
    only_over_budget(json.loads(result.out)["packets"][0]["failures"])


def test_issue22_the_packets_hook_judges_a_huge_read_from_its_header(
    repo: Repo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stage_a_huge_read(repo, commit=False)
    monkeypatch.chdir(repo.path)
    capsys.readouterr()
    code = packets.main([])
    out = capsys.readouterr().out
    assert code == 4, out
    (line,) = out.splitlines()
    assert line.startswith(f"{BIG}: {BIG}: over_budget: ")
    assert "docs/huge.md 357,913,942 tok" in line


def test_issue22_mcp_check_judges_a_huge_read_from_its_header(repo: Repo) -> None:
    stage_a_huge_read(repo, commit=True)
    value = ok(call(repo, "check", {"packets": [BIG]}))
    assert value["exit_code"] == 4
    only_over_budget(value["packets"][0]["failures"])


def test_issue22_a_huge_read_does_not_hide_the_other_reads_failures(cli, repo: Repo) -> None:
    stage_a_huge_read(repo, commit=False)
    repo.write(BIG, packet_yaml("BIG", ["docs/huge.md", "docs/notes.md#nope", "docs/absent.md"]))
    repo.git("add", BIG)
    result = cli(["check", "--json", "--staged", BIG], cwd=repo.path)
    codes = [(f["locator"], f["code"]) for f in json.loads(result.out)["packets"][0]["failures"]]
    assert codes == [
        ("docs/notes.md#nope", "heading_missing"),
        ("docs/absent.md", "source_missing"),
        (BIG, "over_budget"),
    ]


def test_issue22_the_hooks_index_of_packets_reads_no_huge_packet(repo: Repo) -> None:
    # A packet.yml larger than any packet that could build is not parsed to
    # find what it reads: it counts as reading everything, and its check
    # (read_whole, from the header) says why it fails.
    reads = [f"docs/notes-{n}.md" for n in range(MAX_INDEXED_PACKET_BYTES // 16)]
    text = packet_yaml("HUGE", reads)
    assert len(text) > MAX_INDEXED_PACKET_BYTES
    repo.write("packets/HUGE/packet.yml", text)
    repo.write("packets/HUGE/context.md", "# Context\n")
    repo.commit("a packet too large to build")
    git = open_repository(repo.path)
    index = ReverseIndex(git, Snapshot.at(git, "HEAD", check_worktree=False).tree)
    assert index.unknown == {"packets/HUGE/packet.yml"}
    assert index.affected(["docs/unrelated.md"]) == ["packets/HUGE/packet.yml"]
    assert os.path.getsize(repo.path / "packets/HUGE/packet.yml") > MAX_INDEXED_PACKET_BYTES
