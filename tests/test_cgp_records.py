"""``capsule cgp``: a query anchored on a packet says what became of the
packet's record at HEAD, as provenance entries on each of its frames: the
record and its ``capsule status`` against HEAD, and, when HEAD lists allowed
signers, its signature's status. Real provider subprocess, real ssh-keygen
keys; every envelope is validated against the vendored schema."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from governance.core.hashing import sha256_hex
from support.cgp_session import Provider
from support.gitrepo import Repo, Result
from support.history import P2, record
from support.signing import Key

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
