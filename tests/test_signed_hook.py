"""The capsule-records hook's signature rules, with real ssh-keygen signatures:
the allowed signers and the policy switch come from HEAD, never the index."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from capsule_hooks import records
from support.gitrepo import Repo, Result, packet_yaml
from support.history import P2, record
from support.signing import Key

POLICY_ON = "require_signatures: true\n"


@pytest.fixture
def hook(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    def run(repo: Repo) -> Result:
        monkeypatch.chdir(repo.path)
        capsys.readouterr()
        code = records.main([])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def trust(repo: Repo, signers: str, policy: str | None = POLICY_ON) -> str:
    repo.write("policies/allowed_signers", signers)
    if policy is not None:
        repo.write("policies/signing.yml", policy)
    return repo.commit("trust signers")


def signed_record(cli, repo: Repo, key: Key, packet: str = "packets/P-1/packet.yml") -> str:
    path = record(cli, repo, packet)
    assert cli(["sign", path, "--key", str(key.private)], cwd=repo.path).code == 0
    repo.git("add", "-A")
    return path


def test_a_record_signed_by_a_trusted_key_passes(cli, repo: Repo, keys, hook) -> None:
    trust(repo, keys["alice"].signer("alice@example.org"))
    signed_record(cli, repo, keys["alice"])
    result = hook(repo)
    assert result.code == 0, result


def test_an_unsigned_record_fails_when_the_policy_requires_signatures(
    cli, repo: Repo, keys, hook
) -> None:
    trust(repo, keys["alice"].signer("alice@example.org"))
    path = record(cli, repo)
    repo.git("add", "-A")
    result = hook(repo)
    assert result.code == 1
    assert f"{path}: {path}.sig: unsigned: no .sig beside the record; sign it" in result.out


def test_without_the_policy_an_unsigned_record_passes(cli, repo: Repo, keys, hook) -> None:
    trust(repo, keys["alice"].signer("alice@example.org"), policy=None)
    record(cli, repo)
    repo.git("add", "-A")
    assert hook(repo).code == 0


def test_the_policy_switched_on_only_in_the_index_does_not_apply_yet(cli, repo: Repo, hook) -> None:
    record(cli, repo)
    repo.write("policies/signing.yml", POLICY_ON)
    repo.git("add", "-A")
    assert hook(repo).code == 0


def test_the_policy_switched_off_in_the_index_still_applies(cli, repo: Repo, keys, hook) -> None:
    trust(repo, keys["alice"].signer("alice@example.org"))
    record(cli, repo)
    repo.write("policies/signing.yml", "require_signatures: false\n")
    repo.git("add", "-A")
    assert "unsigned" in hook(repo).out


def test_a_commit_adding_a_key_and_a_record_signed_by_it_fails(cli, repo: Repo, keys, hook) -> None:
    trust(repo, keys["alice"].signer("alice@example.org"))
    with (repo.path / "policies/allowed_signers").open("a") as handle:
        handle.write(keys["mallory"].signer("mallory@example.org"))
    path = signed_record(cli, repo, keys["mallory"])
    result = hook(repo)
    assert result.code == 1
    assert f"{path}: {path}.sig: unknown_signer: key SHA256:" in result.out
    assert "not in policies/allowed_signers at" in result.out


def test_another_records_signature_fails(cli, repo: Repo, keys, hook) -> None:
    trust(repo, keys["alice"].signer("alice@example.org"))
    repo.write(P2, packet_yaml("P-2", ["docs/notes.md"]))
    repo.write("packets/P-2/context.md", "# P-2\n")
    repo.commit("add P-2")
    first = signed_record(cli, repo, keys["alice"])
    second = record(cli, repo, P2)
    shutil.copy(repo.path / f"{first}.sig", repo.path / f"{second}.sig")
    repo.git("add", "-A")
    result = hook(repo)
    assert result.code == 1
    assert f"{second}: {second}.sig: bad_signature:" in result.out
    assert first not in result.out.replace(f"{second}", "")


def test_a_revoked_key_fails(cli, repo: Repo, keys, hook) -> None:
    repo.write("policies/revoked_signers", keys["alice"].line + "\n")
    trust(repo, keys["alice"].signer("alice@example.org"))
    signed_record(cli, repo, keys["alice"])
    assert "signer_revoked" in hook(repo).out


def test_an_expired_key_fails(cli, repo: Repo, keys, hook) -> None:
    trust(repo, keys["alice"].signer("alice@example.org", 'valid-before="20200101"'))
    signed_record(cli, repo, keys["alice"])
    assert "signer_expired" in hook(repo).out


def test_removing_the_signature_of_a_committed_record_fails(cli, repo: Repo, keys, hook) -> None:
    trust(repo, keys["alice"].signer("alice@example.org"))
    path = signed_record(cli, repo, keys["alice"])
    repo.commit("signed record")
    repo.git("rm", "-q", f"{path}.sig")
    result = hook(repo)
    assert result.code == 1
    assert f"{path}: {path}.sig: unsigned" in result.out


def test_a_sig_without_its_record_fails_under_any_policy(cli, repo: Repo, keys, hook) -> None:
    path = record(cli, repo)
    assert cli(["sign", path, "--key", str(keys["alice"].private)], cwd=repo.path).code == 0
    (repo.path / path).unlink()
    repo.git("add", "-A")
    result = hook(repo)
    assert result.code == 3
    assert f"{path}.sig: $: signature_without_record: {path}.sig signs {path}" in result.out


def test_a_malformed_signing_policy_is_reported(cli, repo: Repo, hook) -> None:
    repo.write("policies/signing.yml", "require_signatures: yes please\n")
    repo.commit("bad policy")
    record(cli, repo)
    repo.git("add", "-A")
    result = hook(repo)
    assert result.code == 2
    assert "signing_policy_malformed" in result.err


def test_the_unsigned_line_in_the_guards_page_is_the_one_printed(cli, repo: Repo, hook) -> None:
    # No keys: the commit ids stay reproducible, so docs/guards.md can show the line.
    repo.write("policies/signing.yml", POLICY_ON)
    repo.commit("require signatures")
    record(cli, repo)
    repo.git("add", "-A")
    result = hook(repo)
    (line,) = result.out.splitlines()
    assert line.split(": ")[2] == "unsigned"
    guards = Path(__file__).resolve().parents[1] / "docs" / "guards.md"
    assert line in guards.read_text(encoding="utf-8")


def test_without_ssh_keygen_the_hook_says_so(
    cli, repo: Repo, keys, hook, *, tmp_path, monkeypatch
) -> None:
    trust(repo, keys["alice"].signer("alice@example.org"))
    signed_record(cli, repo, keys["alice"])
    empty = tmp_path / "no-ssh"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = hook(repo)
    assert result.code == 2
    assert "error [ssh_keygen_missing]" in result.err
