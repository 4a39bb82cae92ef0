"""Signed records: capsule sign and the signature check, with real ssh-keygen
and keys generated in temp folders."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from governance.core.repository import open_repository
from governance.core.snapshot import Snapshot
from governance.errors import CapsuleError, MalformedInput
from governance.history.signatures import (
    BAD_SIGNATURE,
    NAMESPACE,
    SIGNED,
    SIGNER_EXPIRED,
    SIGNER_REVOKED,
    UNKNOWN_SIGNER,
    UNSIGNED,
    check_signature,
    load_signers,
    signers_from,
)
from governance.history.signers import parse_allowed_signers, parse_signature
from support.gitrepo import Repo, packet_yaml
from support.history import P2, record
from support.signing import Key, raw_sign

NOW = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture
def signed(cli, repo: Repo, keys: dict[str, Key]) -> Path:
    """P-1's record, signed by alice with capsule sign."""
    path = repo.path / record(cli, repo)
    result = cli(["sign", str(path), "--key", str(keys["alice"].private)])
    assert result.code == 0, result
    return path


def _check(record: Path, allowed: str, revoked: str = "", **kwargs):
    sig = Path(f"{record}.sig")
    signature = sig.read_bytes() if sig.exists() else None
    signers = signers_from("0" * 40, allowed.encode(), revoked.encode())
    return check_signature(record.read_bytes(), signature, signers, when=NOW, **kwargs)


def test_sign_writes_an_ssh_signature_over_the_exact_bytes(signed: Path, keys) -> None:
    sig = Path(f"{signed}.sig")
    assert sig.read_bytes().startswith(b"-----BEGIN SSH SIGNATURE-----\n")
    allowed = keys["alice"].signer("alice@example.org")
    (sig.parent / "allowed").write_text(allowed)
    done = subprocess.run(
        [
            "ssh-keygen",
            "-Y",
            "verify",
            "-f",
            str(sig.parent / "allowed"),
            "-I",
            "alice@example.org",
            "-n",
            NAMESPACE,
            "-s",
            str(sig),
        ],
        input=signed.read_bytes(),
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (sig.parent / "allowed").unlink()


def test_good_signature_is_signed_by_its_principal(signed: Path, keys) -> None:
    result = _check(signed, keys["alice"].signer("alice@example.org"))
    assert result.status == SIGNED, result
    assert result.principal == "alice@example.org"
    assert result.key == parse_signature(Path(f"{signed}.sig").read_bytes()).fingerprint


def test_record_without_sig_is_unsigned(cli, repo: Repo, keys) -> None:
    path = repo.path / record(cli, repo)
    assert _check(path, keys["alice"].signer("alice@example.org")).status == UNSIGNED


def test_wrong_namespace_is_a_bad_signature(cli, repo: Repo, keys) -> None:
    path = repo.path / record(cli, repo)
    Path(f"{path}.sig").write_bytes(raw_sign(path.read_bytes(), keys["alice"], "git"))
    result = _check(path, keys["alice"].signer("alice@example.org"))
    assert result.status == BAD_SIGNATURE
    assert "namespace 'git'" in result.message


def test_another_records_signature_is_a_bad_signature(cli, repo: Repo, keys) -> None:
    repo.write(P2, packet_yaml("P-2", ["docs/notes.md"]))
    repo.write("packets/P-2/context.md", "# Context\n\nThe second packet.\n")
    repo.commit("add P-2")
    first = repo.path / record(cli, repo)
    second = repo.path / record(cli, repo, P2)
    assert cli(["sign", str(first), "--key", str(keys["alice"].private)]).code == 0
    shutil.copy(f"{first}.sig", f"{second}.sig")
    result = _check(second, keys["alice"].signer("alice@example.org"))
    assert result.status == BAD_SIGNATURE
    assert "does not match the record's bytes" in result.message


def test_tampered_record_is_a_bad_signature(signed: Path, keys) -> None:
    signed.write_bytes(signed.read_bytes().replace(b"Second phase", b"Second phasE"))
    assert _check(signed, keys["alice"].signer("alice@example.org")).status == BAD_SIGNATURE


def test_sig_that_is_not_a_signature_is_bad(signed: Path, keys) -> None:
    Path(f"{signed}.sig").write_bytes(
        b"-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n"
    )
    result = _check(signed, keys["alice"].signer("alice@example.org"))
    assert result.status == BAD_SIGNATURE
    assert "not an SSH signature" in result.message


def test_unknown_key_is_an_unknown_signer(signed: Path, keys) -> None:
    result = _check(signed, keys["bob"].signer("bob@example.org"))
    assert result.status == UNKNOWN_SIGNER
    assert result.principal is None


def test_key_listed_for_another_namespace_is_an_unknown_signer(signed: Path, keys) -> None:
    line = keys["alice"].signer("alice@example.org", 'namespaces="git"')
    assert _check(signed, line).status == UNKNOWN_SIGNER


def test_expired_key_is_signer_expired(signed: Path, keys) -> None:
    line = keys["alice"].signer("alice@example.org", 'valid-before="20260101Z"')
    result = _check(signed, line)
    assert result.status == SIGNER_EXPIRED
    assert "20260601000000Z" in result.message


def test_key_not_yet_valid_is_signer_expired(signed: Path, keys) -> None:
    line = keys["alice"].signer("alice@example.org", 'valid-after="20270101"')
    assert _check(signed, line).status == SIGNER_EXPIRED


def test_key_within_its_lifetime_is_signed(signed: Path, keys) -> None:
    line = keys["alice"].signer(
        "alice@example.org", 'valid-after="20260101",valid-before="20270101000000Z"'
    )
    assert _check(signed, line).status == SIGNED


def test_revoked_key_is_signer_revoked(signed: Path, keys) -> None:
    allowed = keys["alice"].signer("alice@example.org")
    result = _check(signed, allowed, revoked=keys["alice"].line + " alice's old laptop\n")
    assert result.status == SIGNER_REVOKED


def test_key_added_with_the_signature_is_not_trusted_for_it(signed: Path, keys) -> None:
    allowed = keys["alice"].signer("alice@example.org")
    result = _check(signed, allowed, listed_before=frozenset())
    assert result.status == UNKNOWN_SIGNER
    assert "cannot authorise its own key" in result.message
    listed = frozenset(parse_allowed_signers(allowed, path="x")[0].key for _ in [0])
    assert _check(signed, allowed, listed_before=listed).status == SIGNED


def test_signers_are_read_from_a_commit(cli, repo: Repo, signed: Path, keys) -> None:
    repo.write("policies/allowed_signers", keys["alice"].signer("alice@example.org"))
    commit = repo.commit("trust alice")
    repo.write("policies/allowed_signers", "")  # the working tree never counts
    signers = load_signers(Snapshot.at(open_repository(repo.path), commit))
    assert signers.revision == commit
    sig = Path(f"{signed}.sig").read_bytes()
    assert check_signature(signed.read_bytes(), sig, signers, when=NOW).status == SIGNED


def test_no_allowed_signers_file_trusts_no_one(repo: Repo, signed: Path) -> None:
    signers = load_signers(Snapshot.at(open_repository(repo.path), "HEAD"))
    assert signers.allowed == ()
    sig = Path(f"{signed}.sig").read_bytes()
    assert check_signature(signed.read_bytes(), sig, signers, when=NOW).status == UNKNOWN_SIGNER


@pytest.mark.parametrize(
    "line",
    [
        "alice@example.org ssh-ed25519 !!!notbase64",
        "alice@example.org",
        'alice@example.org frobnicate="1" ssh-ed25519 AAAA',
        'alice@example.org valid-before="yesterday" ssh-ed25519 AAAA',
        "alice@example.org cert-authority ssh-ed25519 AAAA",
    ],
)
def test_malformed_allowed_signers_line_is_refused(line: str) -> None:
    with pytest.raises(MalformedInput) as caught:
        parse_allowed_signers(f"# comment\n\n{line}\n", path="policies/allowed_signers")
    assert caught.value.code == "signers_malformed"
    assert "policies/allowed_signers:3" in caught.value.message


def test_allowed_signers_with_principal_list_and_options() -> None:
    text = 'a@x,b@y namespaces="git,git-capsule-record",valid-after="20260101" ssh-ed25519 AAAA c\n'
    (signer,) = parse_allowed_signers(text, path="p")
    assert signer.principal() == "a@x"
    assert signer.namespaces == ("git", "git-capsule-record")
    assert signer.valid_after == datetime(2026, 1, 1, tzinfo=UTC)
    assert signer.allows_namespace(NAMESPACE)


def test_sign_json_names_the_key_and_prints_nothing_secret(cli, repo: Repo, keys) -> None:
    path = repo.path / record(cli, repo)
    before = set(os.listdir(path.parent))
    result = cli(["sign", str(path), "--key", str(keys["alice"].private), "--json"])
    assert result.code == 0, result
    (item,) = json.loads(result.out)["signed"]
    assert item["signature"] == f"{path}.sig"
    assert item["key"].startswith("SHA256:")
    assert item["status"] == "written"
    assert set(os.listdir(path.parent)) - before == {f"{path.name}.sig"}
    secret = keys["alice"].private.read_text()
    body = "".join(secret.splitlines()[1:-1])
    assert body[:40] not in result.out + result.err


def test_sign_again_replaces_the_signature(cli, signed: Path, keys) -> None:
    result = cli(["sign", str(signed), "--key", str(keys["bob"].private)])
    assert result.code == 0
    assert "replaced" in result.out
    assert _check(signed, keys["bob"].signer("bob@example.org")).status == SIGNED


def test_sign_with_an_ssh_agent_identity(
    cli, repo: Repo, keys, tmp_path: Path, monkeypatch
) -> None:
    path = repo.path / record(cli, repo)
    socket = tmp_path / "agent.sock"
    agent = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(socket)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(200):
            if socket.exists():
                break
            subprocess.run(["sleep", "0.05"], check=True)
        env = {**os.environ, "SSH_AUTH_SOCK": str(socket)}
        subprocess.run(
            ["ssh-add", "-q", str(keys["alice"].private)], env=env, check=True, capture_output=True
        )
        public_only = tmp_path / "public-only"
        public_only.mkdir()
        shutil.copy(keys["alice"].public, public_only / "alice.pub")
        monkeypatch.setenv("SSH_AUTH_SOCK", str(socket))
        result = cli(["sign", str(path), "--key", str(public_only / "alice.pub")])
        assert result.code == 0, result
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait()
    assert _check(path, keys["alice"].signer("alice@example.org")).status == SIGNED


def test_public_key_without_agent_fails_to_sign(
    cli, repo: Repo, keys, tmp_path: Path, monkeypatch
) -> None:
    path = repo.path / record(cli, repo)
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    # ssh-keygen looks for the private key beside a .pub: keep it alone.
    public_only = tmp_path / "public-only"
    public_only.mkdir()
    shutil.copy(keys["alice"].public, public_only / "alice.pub")
    result = cli(["sign", str(path), "--key", str(public_only / "alice.pub"), "--json"])
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "sign_failed"
    assert not Path(f"{path}.sig").exists()


def test_sign_refuses_a_corrupt_record(cli, repo: Repo, keys) -> None:
    path = repo.path / record(cli, repo)
    path.write_bytes(path.read_bytes().replace(b'"schema":"capsule/1"', b'"schema":"capsule/1" '))
    result = cli(["sign", str(path), "--key", str(keys["alice"].private), "--json"])
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "non_canonical"
    assert not Path(f"{path}.sig").exists()


def test_sign_refuses_a_symbolic_link(cli, repo: Repo, keys) -> None:
    path = repo.path / record(cli, repo)
    link = repo.path / "link.json"
    link.symlink_to(path)
    result = cli(["sign", str(link), "--key", str(keys["alice"].private), "--json"])
    # Exit 3, as the records hook and audit give a record path that is no file.
    assert result.code == 3
    assert json.loads(result.out)["error"]["code"] == "record_not_file"


def test_sign_with_a_missing_key_file(cli, repo: Repo, tmp_path: Path) -> None:
    path = repo.path / record(cli, repo)
    result = cli(["sign", str(path), "--key", str(tmp_path / "nope"), "--json"])
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "key_unreadable"


def test_without_ssh_keygen_sign_and_check_say_so(
    cli, repo: Repo, keys, tmp_path: Path, monkeypatch
) -> None:
    path = repo.path / record(cli, repo)
    signature = raw_sign(path.read_bytes(), keys["alice"], NAMESPACE)
    empty = tmp_path / "no-ssh"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = cli(["sign", str(path), "--key", str(keys["alice"].private), "--json"])
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "ssh_keygen_missing"
    signers = signers_from("0" * 40, keys["alice"].signer("a@x").encode(), b"")
    with pytest.raises(CapsuleError) as caught:
        check_signature(path.read_bytes(), signature, signers, when=NOW)
    assert caught.value.code == "ssh_keygen_missing"
