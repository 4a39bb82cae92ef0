"""capsule audit --require-signatures on real histories, real ssh-keygen keys
and signatures: the allowed signers come from a trusted revision, and a key is
never trusted for the commit that adds it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from support.gitrepo import Repo
from support.history import P2, record
from support.signing import Key


def _sign(cli, repo: Repo, path: str, key: Key) -> None:
    assert cli(["sign", path, "--key", str(key.private)], cwd=repo.path).code == 0


def _audit(cli, repo: Repo, *args: str) -> tuple[int, dict[str, Any]]:
    result = cli(["audit", "--json", "--require-signatures", *args], cwd=repo.path)
    return result.code, json.loads(result.out)


def _statuses(document: dict[str, Any]) -> dict[str, str]:
    return {row["path"]: row["status"] for row in document["signatures"]["results"]}


def test_signed_and_unsigned_records(cli, trusted: Repo, keys) -> None:
    signed = record(cli, trusted)
    unsigned = record(cli, trusted, P2)
    _sign(cli, trusted, signed, keys["alice"])
    commit = trusted.commit("records, one signed")
    code, document = _audit(cli, trusted)
    assert code == 1
    assert document["ok"] is False
    rows = {row["path"]: row for row in document["signatures"]["results"]}
    assert rows[signed]["status"] == "signed"
    assert rows[signed]["principal"] == "alice@example.org"
    assert rows[signed]["signature_introduced"] == commit
    assert rows[unsigned]["status"] == "unsigned"
    assert document["signatures"]["trusted"] == commit
    assert document["signatures"]["counts"] == {"signed": 1, "unsigned": 1}


def test_every_record_signed_passes_and_prints_a_table(cli, trusted: Repo, keys) -> None:
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["alice"])
    trusted.commit("signed record")
    result = cli(["audit", "--require-signatures"], cwd=trusted.path)
    assert result.code == 0, result
    assert "SIGNATURE  PATH" in result.out
    assert "by alice@example.org" in result.out
    assert "1 signed" in result.err


def test_a_commit_adding_a_key_and_a_record_signed_by_it(cli, trusted: Repo, keys) -> None:
    with (trusted.path / "policies/allowed_signers").open("a") as handle:
        handle.write(keys["mallory"].signer("mallory@example.org"))
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["mallory"])
    trusted.commit("trust mallory and add mallory's record")
    code, document = _audit(cli, trusted)
    assert code == 1
    (row,) = document["signatures"]["results"]
    assert row["status"] == "unknown_signer"
    assert "cannot authorise its own key" in row["message"]


def test_a_key_added_in_an_earlier_commit_counts(cli, trusted: Repo, keys) -> None:
    with (trusted.path / "policies/allowed_signers").open("a") as handle:
        handle.write(keys["mallory"].signer("mallory@example.org"))
    trusted.commit("trust mallory")
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["mallory"])
    trusted.commit("mallory's record")
    assert _statuses(_audit(cli, trusted)[1]) == {path: "signed"}


def test_a_range_trusts_its_base_not_its_own_commits(cli, trusted: Repo, keys) -> None:
    base = trusted.head()
    with (trusted.path / "policies/allowed_signers").open("a") as handle:
        handle.write(keys["mallory"].signer("mallory@example.org"))
    trusted.commit("a pull request trusts mallory")
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["mallory"])
    trusted.commit("and adds mallory's record")
    code, document = _audit(cli, trusted, f"{base}..HEAD")
    assert code == 1
    assert document["signatures"]["trusted"] == base
    assert _statuses(document) == {path: "unknown_signer"}
    # Once the key is on the trusted branch, the same record counts.
    code, document = _audit(cli, trusted, f"{base}..HEAD", "--signers-at", "HEAD")
    assert _statuses(document) == {path: "signed"}


def test_an_expired_key_at_the_signatures_commit(cli, repo: Repo, keys) -> None:
    # The fixture's commits are dated 2026-01-01.
    line = keys["alice"].signer("alice@example.org", 'valid-before="20251231"')
    repo.write("policies/allowed_signers", line)
    repo.commit("trust alice until 2025")
    path = record(cli, repo)
    _sign(cli, repo, path, keys["alice"])
    repo.commit("record")
    assert _statuses(_audit(cli, repo)[1]) == {path: "signer_expired"}


def test_a_key_revoked_at_the_trusted_revision(cli, trusted: Repo, keys) -> None:
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["alice"])
    trusted.commit("record")
    trusted.write("policies/revoked_signers", keys["alice"].line + "\n")
    trusted.commit("revoke alice")
    assert _statuses(_audit(cli, trusted)[1]) == {path: "signer_revoked"}


def test_a_record_edited_after_signing_is_a_bad_signature(cli, trusted: Repo, keys) -> None:
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["alice"])
    target = trusted.path / path
    target.write_bytes(target.read_bytes().replace(b"Second phase", b"Second phasE"))
    trusted.commit("record, edited after signing")
    code, document = _audit(cli, trusted)
    assert code == 1
    assert _statuses(document) == {path: "bad_signature"}


def test_a_sig_without_its_record(cli, trusted: Repo, keys) -> None:
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["alice"])
    trusted.commit("record")
    (trusted.path / path).unlink()
    trusted.commit("record removed, signature left behind")
    code, document = _audit(cli, trusted)
    assert code == 1
    assert _statuses(document) == {f"{path}.sig": "signature_without_record"}


def test_without_ssh_keygen_audit_says_so(cli, trusted: Repo, tmp_path: Path, monkeypatch) -> None:
    empty = tmp_path / "no-ssh"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = cli(["audit", "--json", "--require-signatures"], cwd=trusted.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "ssh_keygen_missing"


def test_signers_at_needs_require_signatures(cli, trusted: Repo) -> None:
    result = cli(["audit", "--json", "--signers-at", "HEAD"], cwd=trusted.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "usage"


def test_without_the_flag_audit_is_unchanged(cli, trusted: Repo) -> None:
    record(cli, trusted)
    trusted.commit("unsigned record")
    result = cli(["audit", "--json"], cwd=trusted.path)
    assert result.code == 0
    assert "signatures" not in json.loads(result.out)


def test_signatures_are_found_beside_records_at_other_paths(cli, trusted: Repo, keys) -> None:
    path = record(cli, trusted)
    _sign(cli, trusted, path, keys["alice"])
    copy = "evidence/copy.json"
    trusted.write(copy, (trusted.path / path).read_bytes())
    trusted.write(f"{copy}.sig", (trusted.path / f"{path}.sig").read_bytes())
    trusted.commit("a copy of the record and its signature")
    code, document = _audit(cli, trusted, "--paths", "evidence/*.json")
    assert code == 1  # the copy is not evidence where it is (record_misplaced)
    assert [row["code"] for row in document["results"]] == ["record_misplaced"]
    assert _statuses(document) == {copy: "signed"}


# --- issue 22 item 7: a record cannot be signed before it was built -----------------


def _commit_dated(repo: Repo, message: str, when: str) -> str:
    """A commit whose author and committer dates are ``when`` (the committer
    sets them: GIT_COMMITTER_DATE)."""
    repo.git("add", "-A")
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo.path, env=env, check=True)
    return repo.head()


def test_issue22_a_backdated_signature_is_refused(cli, repo: Repo, keys) -> None:
    # A key valid before 2020 only; the record is built at a commit of 2026.
    line = keys["alice"].signer("alice@example.org", 'valid-before="20200101"')
    repo.write("policies/allowed_signers", line)
    built_at = repo.commit("trust alice until 2020")
    path = record(cli, repo)
    _sign(cli, repo, path, keys["alice"])
    _commit_dated(repo, "the signature, dated 2019", "2019-06-01T00:00:00Z")
    code, document = _audit(cli, repo)
    assert code == 1, document
    (row,) = document["signatures"]["results"]
    assert row["status"] == "signature_backdated"
    assert "2019-06-01" in row["message"]
    assert built_at[:12] in row["message"]
    text = cli(["audit", "--require-signatures"], cwd=repo.path)
    assert text.code == 1
    assert any(line.startswith("signature_backdated") for line in text.out.splitlines())


def test_issue22_a_signature_dated_with_its_records_commit_counts(cli, repo: Repo, keys) -> None:
    repo.write("policies/allowed_signers", keys["alice"].signer("alice@example.org"))
    repo.commit("trust alice")
    repo.write("docs/notes.md", "# Notes\n\nBuilt at a commit of 2025.\n")
    built_at = _commit_dated(repo, "a commit of 2025", "2025-06-01T00:00:00Z")
    path = record(cli, repo)
    _sign(cli, repo, path, keys["alice"])
    # The same second as the record's commit: not before it.
    _commit_dated(repo, "signed at once", "2025-06-01T00:00:00Z")
    code, document = _audit(cli, repo)
    assert code == 0, document
    assert _statuses(document) == {path: "signed"}
    assert built_at
