"""``capsule cgp``: a query anchored on a packet says what became of the
packet's record at HEAD, as provenance entries on each of its frames: the
record and its ``capsule status`` against HEAD, and, when HEAD lists allowed
signers, its signature's status. Real provider subprocess, real ssh-keygen
keys; every envelope is validated against the vendored schema."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from governance.core.hashing import sha256_hex
from support.cgp_session import Provider
from support.gitrepo import Repo, Result, packet_yaml
from support.history import P2, record
from support.signing import Key

pytestmark = pytest.mark.slow  # a provider process and ssh-keygen per test: some 20 s

Cli = Callable[..., Result]
ANCHOR = "capsule://packets/P-1"


@contextmanager
def serving(repo: Repo) -> Iterator[Provider]:
    provider = Provider(repo.path)
    try:
        assert provider.handshake()["type"] == "handshake_ack"
        yield provider
    finally:
        provider.stop()


def frames(repo: Repo, *anchors: str, **query: Any) -> list[dict[str, Any]]:
    with serving(repo) as provider:
        reply = provider.query(anchors=list(anchors or [ANCHOR]), **query)
    assert reply["type"] == "frames", reply
    found: list[dict[str, Any]] = reply["result"]["frames"]
    assert found
    return found


def entries(frame: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [p for p in frame["provenance"] if p["type"] == kind]


def one(found: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """The entry of ``kind`` every frame carries, the same on each."""
    (entry,) = entries(found[0], kind)
    assert all(entries(frame, kind) == [entry] for frame in found)
    return entry


def _sign(cli: Cli, repo: Repo, path: str, key: Key) -> None:
    assert cli(["sign", path, "--key", str(key.private)], cwd=repo.path).code == 0


# --- signatures (issue 24, item 6) ---------------------------------------------------


def test_without_allowed_signers_no_signature_entry(cli: Cli, repo: Repo) -> None:
    record(cli, repo)
    repo.commit("record")
    found = frames(repo)
    assert all(not entries(frame, "signature") for frame in found)


def test_without_a_record_no_record_entries(trusted: Repo) -> None:
    for frame in frames(trusted):
        assert [p["type"] for p in frame["provenance"]] == ["file", "file"]


def test_a_signed_record_names_its_signer(cli: Cli, trusted: Repo, keys: dict[str, Key]) -> None:
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["alice"])
    head = trusted.commit("signed record")
    signature = one(frames(trusted), "signature")
    assert signature == {
        "type": "signature",
        "uri": f"capsule://commits/{head}/{path}.sig",
        "digest": "sha256:" + sha256_hex((trusted.path / f"{path}.sig").read_bytes()),
        "method": "ssh-signature:signed",
        "by": "alice@example.org",
    }


def test_an_unsigned_record(cli: Cli, trusted: Repo) -> None:
    path = record(cli, trusted)
    head = trusted.commit("unsigned record")
    signature = one(frames(trusted), "signature")
    assert signature == {
        "type": "signature",
        "uri": f"capsule://commits/{head}/{path}.sig",
        "method": "ssh-signature:unsigned",
    }


def test_another_records_signature_is_bad(cli: Cli, trusted: Repo, keys: dict[str, Key]) -> None:
    mine = record(cli, trusted)
    other = record(cli, trusted, P2)
    _sign(cli, trusted, other, keys["alice"])
    (trusted.path / f"{mine}.sig").write_bytes((trusted.path / f"{other}.sig").read_bytes())
    trusted.commit("P-1's record carries P-2's signature")
    assert one(frames(trusted), "signature")["method"] == "ssh-signature:bad_signature"
    assert "by" not in one(frames(trusted), "signature")
    p2 = frames(trusted, "capsule://packets/P-2")
    assert one(p2, "signature")["method"] == "ssh-signature:signed"


def test_an_unknown_signer(cli: Cli, trusted: Repo, keys: dict[str, Key]) -> None:
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["mallory"])
    trusted.commit("signed by a key nobody lists")
    assert one(frames(trusted), "signature")["method"] == "ssh-signature:unknown_signer"


def test_the_newest_record_is_the_one_judged(cli: Cli, trusted: Repo, keys: dict[str, Key]) -> None:
    record(cli, trusted)
    trusted.commit("an unsigned record")
    trusted.write("docs/notes.md", "# Notes\n\nLater notes.\n")
    trusted.commit("notes")
    newest = record(cli, trusted)
    _sign(cli, trusted, newest, keys["alice"])
    trusted.commit("the newest record, signed")
    signature = one(frames(trusted), "signature")
    assert signature["uri"].endswith(f"/{newest}.sig")
    assert signature["method"] == "ssh-signature:signed"


def test_malformed_signers_are_named_and_frames_still_served(cli: Cli, trusted: Repo) -> None:
    record(cli, trusted)
    trusted.write("policies/allowed_signers", "alice@example.org cert-authority ssh-ed25519 AAAA\n")
    trusted.commit("a cert-authority line")
    assert one(frames(trusted), "signature")["method"] == "ssh-signature:error:signers_malformed"


# --- the record's status against HEAD (issue 24, item 3) ------------------------------


def test_a_current_record_is_unchanged(cli: Cli, repo: Repo) -> None:
    path = record(cli, repo)
    head = repo.commit("record")
    entry = one(frames(repo), "record")
    assert entry == {
        "type": "record",
        "uri": f"capsule://commits/{head}/{path}",
        "digest": "sha256:" + sha256_hex((repo.path / path).read_bytes()),
        "method": "capsule-status:unchanged",
        "by": "git-capsule",
    }
    # Without allowed signers, the record entry alone, after the two file entries.
    assert [p["type"] for p in frames(repo)[0]["provenance"]] == ["file", "file", "record"]


def test_a_record_gone_stale_says_so(cli: Cli, repo: Repo) -> None:
    record(cli, repo)
    repo.commit("record")
    repo.write("docs/notes.md", "# Notes\n\nRewritten since.\n")
    repo.commit("notes rewritten")
    assert one(frames(repo), "record")["method"] == "capsule-status:stale"


def test_a_record_whose_section_moved_is_intact(cli: Cli, repo: Repo) -> None:
    record(cli, repo)
    repo.commit("record")
    text = (repo.path / "docs/roadmap.md").read_text(encoding="utf-8")
    repo.write(
        "docs/roadmap.md", "# Roadmap\n\nA new first paragraph.\n" + text[len("# Roadmap\n") :]
    )
    repo.commit("roadmap grows above phase 2")
    assert one(frames(repo), "record")["method"] == "capsule-status:intact"


def test_a_record_whose_source_is_gone_is_missing(cli: Cli, repo: Repo) -> None:
    record(cli, repo)
    repo.commit("record")
    repo.write("docs/roadmap.md", "# Roadmap\n\nNo phases any more.\n")
    repo.write(
        "packets/P-1/packet.yml", packet_yaml("P-1", ["docs/notes.md"])
    )  # the packet still builds at HEAD; the record's section does not exist
    repo.commit("phases dropped")
    assert one(frames(repo), "record")["method"] == "capsule-status:missing"


def test_the_status_is_capsule_statuss(cli: Cli, repo: Repo) -> None:
    record(cli, repo)
    repo.commit("record")
    repo.write("docs/notes.md", "# Notes\n\nRewritten since.\n")
    repo.commit("notes rewritten")
    shown = cli(["status", "--json"], cwd=repo.path)
    (row,) = json.loads(shown.out)["records"]
    entry = one(frames(repo), "record")
    assert entry["method"] == f"capsule-status:{row['status']}"
    assert entry["digest"] == f"sha256:{row['sha256']}"
    assert entry["uri"].endswith(row["path"])


def test_as_of_frames_still_judge_the_record_against_head(cli: Cli, repo: Repo) -> None:
    record(cli, repo)
    recorded = repo.commit("record", when="2026-01-01T00:00:00Z")
    repo.write("docs/notes.md", "# Notes\n\nRewritten since.\n")
    head = repo.commit("notes rewritten", when="2026-02-01T00:00:00Z")
    found = frames(repo, as_of="2026-01-15T00:00:00Z")
    assert all(f["id"].startswith(f"capsule:P-1@{recorded}/") for f in found)
    entry = one(found, "record")
    assert entry["uri"].startswith(f"capsule://commits/{head}/")
    assert entry["method"] == "capsule-status:stale"


def test_a_record_that_cannot_be_read_is_an_error_status(cli: Cli, repo: Repo) -> None:
    path = record(cli, repo)
    (repo.path / path).write_text("{}\n", encoding="utf-8")
    repo.commit("a record that is no capsule")
    entry = one(frames(repo), "record")
    assert entry["method"].startswith("capsule-status:error:")
    assert "digest" not in entry


# --- a query anchored on a record ------------------------------------------------------


def test_a_record_anchor_judges_that_record(cli: Cli, repo: Repo) -> None:
    old = record(cli, repo)
    repo.commit("record")
    repo.write("docs/notes.md", "# Notes\n\nRewritten since.\n")
    repo.commit("notes rewritten")
    newest = record(cli, repo)
    head = repo.commit("a newer record")
    anchor = f"capsule://packets/P-1/capsules/{Path(old).name}"
    found = frames(repo, anchor)
    assert all(frame["uri"] == anchor for frame in found)
    assert all(frame["id"].startswith(f"capsule:P-1@{head}/") for frame in found)
    entry = one(found, "record")
    assert entry["uri"] == f"capsule://commits/{head}/{old}"
    assert entry["method"] == "capsule-status:stale"
    # The packet anchor judges the newest record instead.
    assert one(frames(repo), "record")["uri"].endswith(newest)
    assert one(frames(repo), "record")["method"] == "capsule-status:unchanged"


def test_a_record_anchor_that_names_no_record_is_an_error(repo: Repo) -> None:
    with serving(repo) as provider:
        reply = provider.query(anchors=["capsule://packets/P-1/capsules/0123456789ab.json"])
        assert reply["type"] == "error"
        assert reply["code"] == "capsule:source_missing"
        assert "0123456789ab.json" in reply["message"]
        # A name no record can have is no anchor of ours: a goal query instead.
        goal = provider.query(anchors=["capsule://packets/P-1/capsules/notes.txt"])
        assert goal["type"] == "frames"
