"""capsule_verify and capsule_replay say whether the record a capsule is was
signed, by whom, or not, when the repository lists allowed signers: real
ssh-keygen keys and signatures, through the MCP SDK's own client."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from test_mcp import call, error, ok

from support.gitrepo import Repo, Result
from support.history import P2, forge_target, record
from support.signing import Key

Cli = Callable[..., Result]


def _sign(cli: Cli, repo: Repo, path: str, key: Key) -> None:
    assert cli(["sign", path, "--key", str(key.private)], cwd=repo.path).code == 0


def _both(repo: Repo, path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The signature capsule_verify and capsule_replay report for a record file."""
    verified = ok(call(repo, "verify", {"path": path}))
    replayed = ok(call(repo, "replay", {"path": path}))
    return verified["signature"], replayed["signature"]


def test_no_allowed_signers_no_signature_status(cli: Cli, repo: Repo) -> None:
    path = record(cli, repo)
    repo.commit("record")
    verified, replayed = _both(repo, path)
    assert verified is None
    assert replayed is None


def test_a_signed_record_names_its_signer(cli: Cli, trusted: Repo, keys: dict[str, Key]) -> None:
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["alice"])
    commit = trusted.commit("signed record")
    for signature in _both(trusted, path):
        assert signature["status"] == "signed"
        assert signature["principal"] == "alice@example.org"
        assert signature["record"] == path
        assert signature["signature_introduced"] == commit
        assert signature["trusted"] == commit
        assert signature["key"].startswith("SHA256:")
    # The text a model reads says so too.
    result = call(trusted, "verify", {"path": path})
    assert "signature: signed by alice@example.org" in result.content[0].text
    result = call(trusted, "replay", {"path": path})
    assert "signature: signed by alice@example.org" in result.content[0].text


def test_the_same_bytes_given_as_text_are_the_signed_record(
    cli: Cli, trusted: Repo, keys: dict[str, Key]
) -> None:
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["alice"])
    trusted.commit("signed record")
    text = (trusted.path / path).read_text(encoding="utf-8")
    assert ok(call(trusted, "verify", {"capsule": text}))["signature"]["status"] == "signed"
    assert ok(call(trusted, "replay", {"capsule": text}))["signature"]["status"] == "signed"


def test_an_unsigned_record(cli: Cli, trusted: Repo) -> None:
    path = record(cli, trusted)
    trusted.commit("unsigned record")
    for signature in _both(trusted, path):
        assert signature["status"] == "unsigned"
        assert signature["principal"] is None
    assert "signature: unsigned" in call(trusted, "verify", {"path": path}).content[0].text


def test_a_capsule_never_recorded_is_unsigned(trusted: Repo) -> None:
    capsule = ok(call(trusted, "build", {"packet": "P-1"}))["capsule_json"]
    signature = ok(call(trusted, "verify", {"capsule": capsule}))["signature"]
    assert signature["status"] == "unsigned"
    assert "no record" in signature["message"]


def test_another_records_signature_is_bad(cli: Cli, trusted: Repo, keys: dict[str, Key]) -> None:
    mine = record(cli, trusted)
    other = record(cli, trusted, P2)
    _sign(cli, trusted, other, keys["alice"])
    (trusted.path / f"{mine}.sig").write_bytes((trusted.path / f"{other}.sig").read_bytes())
    trusted.commit("records, one carrying the other's signature")
    for signature in _both(trusted, mine):
        assert signature["status"] == "bad_signature"
        assert signature["principal"] is None


def test_bytes_other_than_the_signed_record_are_not_signed(
    cli: Cli, trusted: Repo, keys: dict[str, Key]
) -> None:
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["alice"])
    trusted.commit("signed record")
    forged = forge_target((trusted.path / path).read_bytes()).decode()
    # verify refuses such a capsule at its own commit; replay names the fields.
    error(call(trusted, "verify", {"capsule": forged}), "capsule_corrupt")
    replayed = ok(call(trusted, "replay", {"capsule": forged}))
    assert replayed["identical"] is False
    assert replayed["signature"]["status"] == "bad_signature"
    assert replayed["signature"]["record"] == path
    assert "not the record" in replayed["signature"]["message"]


def test_an_unknown_signer_is_not_signed(cli: Cli, trusted: Repo, keys: dict[str, Key]) -> None:
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["mallory"])
    trusted.commit("record signed by a key nobody trusts")
    for signature in _both(trusted, path):
        assert signature["status"] == "unknown_signer"


def test_a_key_added_with_what_it_signs_is_not_trusted(
    cli: Cli, trusted: Repo, keys: dict[str, Key]
) -> None:
    with (trusted.path / "policies/allowed_signers").open("a") as handle:
        handle.write(keys["mallory"].signer("mallory@example.org"))
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["mallory"])
    trusted.commit("trust mallory and add mallory's record")
    for signature in _both(trusted, path):
        assert signature["status"] == "unknown_signer"


def test_malformed_signers_are_a_status_not_a_failed_verify(cli: Cli, trusted: Repo) -> None:
    path = record(cli, trusted)
    trusted.write("policies/allowed_signers", "alice@example.org cert-authority ssh-ed25519 AAAA\n")
    trusted.commit("a cert-authority line")
    value = ok(call(trusted, "verify", {"path": path}))
    assert value["parts"]
    assert value["signature"]["status"] == "error"
    assert value["signature"]["code"] == "signers_malformed"


def test_the_structured_content_is_json_the_output_schema_declares(
    cli: Cli, trusted: Repo, keys: dict[str, Key]
) -> None:
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["alice"])
    trusted.commit("signed record")
    # The SDK's client checks structured content against the declared output
    # schema; a round trip through JSON shows nothing but JSON is in it.
    verified, replayed = _both(trusted, path)
    assert json.loads(json.dumps(verified)) == verified
    assert set(verified) == {
        "record",
        "status",
        "code",
        "message",
        "principal",
        "key",
        "signature_introduced",
        "trusted",
    }
    assert replayed == verified
