"""The secret scan: no capsule carries a private key, a cloud key or a service
token. Every key here is made at test time (ssh-keygen, random characters):
none is committed to this repository."""

from __future__ import annotations

import json
import os
import secrets
import string
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from capsule_hooks import packets as packets_hook
from governance.agents.tools import Workspace
from governance.agents.tools import build as mcp_build
from governance.agents.tools import check as mcp_check
from governance.core.secretscan import detector
from governance.errors import SourceError
from support.gitrepo import Repo, Result, packet_yaml

ROOT = Path(__file__).resolve().parents[1]
PACKET = "packets/P-1/packet.yml"
WAIVERS = "policies/secret-waivers.yml"


def openssh_key(tmp_path: Path, kind: str = "ed25519", *extra: str) -> str:
    """A fresh private key as ssh-keygen writes it (OpenSSH, or PEM with -m PEM)."""
    target = tmp_path / f"key-{secrets.token_hex(4)}"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, *extra, "-N", "", "-C", "test", "-f", str(target)],
        check=True,
        capture_output=True,
    )
    return target.read_text()


def aws_key_id() -> str:
    """An access key id of AWS's shape from random characters."""
    return "AKIA" + "".join(secrets.choice(string.ascii_uppercase + "234567") for _ in range(16))


def github_token() -> str:
    return "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))


def blob_of(repo: Repo, path: str) -> str:
    return str(pygit2.hash((repo.path / path).read_bytes()))


def assert_never_shown(secret: str, *texts: str) -> None:
    """No byte run of ``secret`` that would identify it appears anywhere."""
    for line in secret.strip().splitlines():
        body = line.strip()
        if len(body) >= 12 and "PRIVATE KEY" not in body:
            for text in texts:
                assert body not in text, "a secret's bytes were printed"


def notes_with(repo: Repo, *lines: str) -> None:
    repo.write("docs/notes.md", "\n".join(["# Notes", "", *lines, ""]))
    repo.commit("notes")


def test_the_detector_is_installed_by_make_test() -> None:
    found = detector()
    assert found.available, found.unavailable
    assert found.status()["plugins"][0] == "PrivateKeyDetector"


def test_aws_key_is_refused_naming_locator_and_line_never_the_key(cli, repo: Repo) -> None:
    key = aws_key_id()
    notes_with(repo, "Some notes.", "", f"aws_access_key_id = {key}")
    human = cli(["build", PACKET], cwd=repo.path)
    assert human.code == 3
    assert "[source_secret]" in human.err
    assert "docs/notes.md: line 5 (AWS Access Key) of docs/notes.md" in human.err
    assert human.out == ""
    machine = cli(["build", PACKET, "--json"], cwd=repo.path)
    assert machine.code == 3
    error = json.loads(machine.out)["error"]
    assert error["code"] == "source_secret"
    assert error["locator"] == "docs/notes.md"
    assert error["lines"] == [5]
    assert error["blob"] == blob_of(repo, "docs/notes.md")
    for text in (human.out, human.err, machine.out, machine.err):
        assert key not in text
        assert key[4:] not in text


def test_private_key_in_the_context_is_refused(cli, repo: Repo, tmp_path: Path) -> None:
    key = openssh_key(tmp_path)
    repo.write("packets/P-1/context.md", "# Context\n\nThe deploy key:\n\n" + key)
    repo.commit("context")
    result = cli(["build", PACKET, "--json"], cwd=repo.path)
    assert result.code == 3
    error = json.loads(result.out)["error"]
    assert (error["code"], error["locator"], error["line"]) == (
        "source_secret",
        "packets/P-1/context.md",
        5,
    )
    assert error["findings"] == [{"line": 5, "kind": "Private Key"}]
    assert_never_shown(key, result.out, result.err)


def test_private_key_in_the_packet_is_refused(cli, repo: Repo, tmp_path: Path) -> None:
    key = openssh_key(tmp_path, "rsa", "-b", "2048", "-m", "PEM")
    assert "BEGIN RSA PRIVATE KEY" in key
    question = json.dumps(key.splitlines()[0])
    repo.write(
        PACKET,
        packet_yaml("P-1", ["docs/notes.md"], question=question),
    )
    repo.commit("packet")
    error = json.loads(cli(["build", PACKET, "--json"], cwd=repo.path).out)["error"]
    assert (error["code"], error["locator"]) == ("source_secret", PACKET)


def test_heading_read_reports_the_files_line(cli, repo: Repo) -> None:
    token = github_token()
    roadmap = (repo.path / "docs/roadmap.md").read_text()
    repo.write("docs/roadmap.md", roadmap.replace("First phase.", f"First phase.\n\n{token}"))
    repo.write(PACKET, packet_yaml("P-1", ["docs/roadmap.md#phase-1"]))
    repo.commit("token")
    result = cli(["build", PACKET, "--json"], cwd=repo.path)
    error = json.loads(result.out)["error"]
    lines = (repo.path / "docs/roadmap.md").read_text().splitlines()
    assert lines[error["line"] - 1] == token
    assert error["findings"] == [{"line": error["line"], "kind": "GitHub Token"}]
    assert error["locator"] == "docs/roadmap.md#phase-1"
    assert token not in result.out + result.err


def test_a_secret_outside_the_selected_section_is_not_carried_and_not_refused(
    cli, repo: Repo
) -> None:
    roadmap = (repo.path / "docs/roadmap.md").read_text()
    repo.write("docs/roadmap.md", roadmap.replace("Last.", f"Last. {aws_key_id()}"))
    repo.commit("key in phase 3")
    assert cli(["build", PACKET], cwd=repo.path).code == 0


def test_an_inline_allowlist_comment_waives_nothing(cli, repo: Repo) -> None:
    notes_with(repo, f"key = {aws_key_id()}  # pragma: allowlist secret")
    assert cli(["build", PACKET], cwd=repo.path).code == 3


def test_prose_hashes_and_ids_are_not_secrets(cli, repo: Repo) -> None:
    notes_with(
        repo,
        "sha256 " + secrets.token_hex(32) + " and commit " + secrets.token_hex(20),
        "An RSA key pair: keep the private key out of the repository.",
        "password = hunter2, token: abc, https://user:pass@example.invalid/",
        "TASK-" + secrets.token_hex(16),
    )
    assert cli(["build", PACKET], cwd=repo.path).code == 0


# --- waivers --------------------------------------------------------------------------


def waive(repo: Repo, blob: str, line: int, reason: str = "the RFC's example", **extra) -> None:
    entry = {"blob": blob, "line": line, "reason": reason, **extra}
    repo.write(WAIVERS, json.dumps({"waivers": [entry]}))
    repo.commit("waive")


def test_a_waiver_by_blob_and_line_lets_the_build_pass_and_says_so(cli, repo: Repo) -> None:
    key = aws_key_id()
    notes_with(repo, f"example = {key}")
    waive(repo, blob_of(repo, "docs/notes.md"), 3, "an example from the docs, revoked")
    result = cli(["build", PACKET, "-o", str(repo.path.parent / "c.json"), "--json"], cwd=repo.path)
    assert result.code == 0, result.err
    scan = json.loads(result.out)["secret_scan"]
    assert scan["scanned"] is True
    assert scan["waived"] == [
        {
            "part": "docs/notes.md",
            "path": "docs/notes.md",
            "blob": blob_of(repo, "docs/notes.md"),
            "line": 3,
            "kind": "AWS Access Key",
            "waiver": 1,
            "reason": "an example from the docs, revoked",
        }
    ]
    assert "line 3 (AWS Access Key) waived by policies/secret-waivers.yml waiver 1" in result.err
    assert key not in result.out + result.err


def test_a_waiver_of_another_line_or_path_waives_nothing(cli, repo: Repo) -> None:
    notes_with(repo, f"example = {aws_key_id()}")
    blob = blob_of(repo, "docs/notes.md")
    waive(repo, blob, 2)
    assert cli(["build", PACKET], cwd=repo.path).code == 3
    waive(repo, blob, 3, path="docs/other.md")
    assert cli(["build", PACKET], cwd=repo.path).code == 3
    waive(repo, blob, 3, path="docs/notes.md")
    assert cli(["build", PACKET], cwd=repo.path).code == 0


def test_a_changed_file_needs_its_waiver_again(cli, repo: Repo) -> None:
    notes_with(repo, f"example = {aws_key_id()}")
    waive(repo, blob_of(repo, "docs/notes.md"), 3)
    assert cli(["build", PACKET], cwd=repo.path).code == 0
    notes_with(repo, f"example = {aws_key_id()}", "more")
    assert cli(["build", PACKET], cwd=repo.path).code == 3


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("waivers: [", "YAML"),
        ("waivers:\n  - blob: abc\n    line: 1\n    reason: r\n", "blob"),
        ("waivers:\n  - blob: " + "a" * 40 + "\n    line: 0\n    reason: r\n", "line"),
        ("waivers:\n  - blob: " + "a" * 40 + "\n    line: 1\n", "reason"),
        ("waivers:\n  - blob: " + "a" * 40 + "\n    line: 1\n    reason: r\n    who: me\n", "who"),
        (
            "waivers:\n" + ("  - {blob: " + "a" * 40 + ", line: 3, reason: r}\n") * 2,
            "repeats waiver 1",
        ),
    ],
)
def test_a_malformed_waiver_file_stops_every_scanning_build(
    cli, repo: Repo, text: str, says: str
) -> None:
    repo.write(WAIVERS, text)
    repo.commit("bad waivers")
    result = cli(["build", PACKET, "--json"], cwd=repo.path)
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["code"] == "secret_waivers_malformed"
    assert says in error["message"]
    checked = cli(["check", PACKET], cwd=repo.path)
    assert checked.code == 2
    assert "secret_waivers_malformed" in checked.out


def test_a_waiver_file_that_is_a_link_is_malformed(cli, repo: Repo) -> None:
    repo.write("policies/real.yml", "waivers: []\n")
    os.symlink("real.yml", repo.path / WAIVERS)
    repo.commit("link")
    error = json.loads(cli(["build", PACKET, "--json"], cwd=repo.path).out)["error"]
    assert error["code"] == "secret_waivers_malformed"


def test_an_uncommitted_waiver_waives_nothing(cli, repo: Repo) -> None:
    notes_with(repo, f"example = {aws_key_id()}")
    repo.write(WAIVERS, "waivers: []\n")
    repo.commit("empty waivers")
    blob = blob_of(repo, "docs/notes.md")
    repo.write(WAIVERS, json.dumps({"waivers": [{"blob": blob, "line": 3, "reason": "r"}]}))
    error = json.loads(cli(["build", PACKET, "--json"], cwd=repo.path).out)["error"]
    assert (error["code"], error["locator"]) == ("source_dirty", WAIVERS)


def test_replay_does_not_read_the_waivers(cli, repo: Repo) -> None:
    record = cli(["build", PACKET, "--record", "--json"], cwd=repo.path)
    path = json.loads(record.out)["record"]
    repo.commit("record")
    repo.write(WAIVERS, "waivers: [")
    repo.commit("broken waivers after the record")
    assert cli(["replay", path], cwd=repo.path).code == 0
    assert cli(["build", PACKET], cwd=repo.path).code == 2


# --- check, hooks, MCP ----------------------------------------------------------------


def test_check_lists_the_secret_among_every_failure(cli, repo: Repo) -> None:
    notes_with(repo, f"example = {aws_key_id()}")
    repo.write(PACKET, packet_yaml("P-1", ["docs/notes.md", "docs/roadmap.md#nope"]))
    repo.commit("two failures")
    result = cli(["check", PACKET, "--json"], cwd=repo.path)
    assert result.code == 3
    document = json.loads(result.out)
    codes = [f["code"] for f in document["packets"][0]["failures"]]
    assert codes == ["source_secret", "heading_missing"]
    assert document["secret_scan"]["scanned"] is True
    human = cli(["check", PACKET], cwd=repo.path)
    assert "packets/P-1/packet.yml: docs/notes.md: source_secret: line 3" in human.out


def test_the_packets_hook_refuses_a_staged_secret(capsys, monkeypatch, repo: Repo) -> None:
    key = aws_key_id()
    repo.write("docs/notes.md", f"# Notes\n\n{key}\n")
    repo.git("add", "docs/notes.md")
    monkeypatch.chdir(repo.path)
    capsys.readouterr()
    code = packets_hook.main([])
    captured = capsys.readouterr()
    assert code == 3
    assert "docs/notes.md: source_secret: line 3 (AWS Access Key)" in captured.out
    assert key not in captured.out + captured.err


def test_a_staged_waiver_file_affects_every_packet(capsys, monkeypatch, repo: Repo) -> None:
    repo.write(WAIVERS, "waivers: [")
    repo.git("add", WAIVERS)
    monkeypatch.chdir(repo.path)
    capsys.readouterr()
    code = packets_hook.main([])
    captured = capsys.readouterr()
    assert code == 2
    assert f"{PACKET}: {WAIVERS}: secret_waivers_malformed" in captured.out


def test_mcp_build_and_check_refuse_and_report(repo: Repo) -> None:
    ws = Workspace.open(str(repo.path))
    assert mcp_build(ws, "P-1")["secret_scan"]["scanned"] is True
    notes_with(repo, f"example = {aws_key_id()}")
    ws = Workspace.open(str(repo.path))
    with pytest.raises(SourceError) as raised:
        mcp_build(ws, "P-1")
    assert raised.value.code == "source_secret"
    checked = mcp_check(ws, ["P-1"])
    assert checked["packets"][0]["failures"][0]["code"] == "source_secret"
    assert checked["secret_scan"]["scanned"] is True


# --- audit ----------------------------------------------------------------------------


def test_audit_reports_a_record_the_scan_would_refuse_today(cli, repo: Repo) -> None:
    key = aws_key_id()
    notes_with(repo, f"example = {key}")
    blob = blob_of(repo, "docs/notes.md")
    waive(repo, blob, 3)
    path = json.loads(cli(["build", PACKET, "--record", "--json"], cwd=repo.path).out)["record"]
    repo.commit("record")
    assert cli(["audit"], cwd=repo.path).code == 0
    repo.write(WAIVERS, "waivers: []\n")
    repo.commit("the waiver withdrawn")
    # Replay rebuilds the record as history has it: no scan.
    assert cli(["replay", path], cwd=repo.path).code == 0
    result = cli(["audit", "--json"], cwd=repo.path)
    assert result.code == 1
    document = json.loads(result.out)
    (row,) = document["results"]
    assert (row["result"], row["code"]) == ("error", "record_secret")
    assert row["secrets"] == [
        {"part": "docs/notes.md", "path": "docs/notes.md", "blob": blob, "line": 3,
         "kind": "AWS Access Key"}
    ]  # fmt: skip
    assert document["secret_scan"]["scanned"] is True
    human = cli(["audit"], cwd=repo.path)
    assert "record_secret" in human.out
    assert key not in result.out + result.err + human.out + human.err
    # Known, and revoked: the record's blob waived by the audit's own waivers,
    # once the record is gone from the tip.
    (repo.path / path).unlink()
    repo.write(
        "policies/audit-waivers.yml",
        json.dumps({"waivers": [{"blob": row["blob"], "reason": "key revoked"}]}),
    )
    repo.commit("record removed, its blob waived")
    waived = json.loads(cli(["audit", "--json"], cwd=repo.path).out)
    assert [r["result"] for r in waived["results"]] == ["waived"]


def test_audit_numbers_a_repeated_part_by_its_own_files_lines(cli, repo: Repo) -> None:
    # Two records read the same section text from two blobs, the second a
    # file with two lines more above it: audit scans the text once and must
    # still name each record's own blob and line.
    key = aws_key_id()
    repo.write(PACKET, packet_yaml("P-1", ["docs/notes.md#keys"]))
    lines = []
    for above in ([], ["More notes.", ""]):
        repo.write("docs/notes.md", "\n".join(["# Notes", "", *above, "## Keys", "", key, ""]))
        repo.commit("notes")
        blob, line = blob_of(repo, "docs/notes.md"), 5 + len(above)
        waive(repo, blob, line)
        assert cli(["build", PACKET, "--record"], cwd=repo.path).code == 0
        repo.commit("record")
        lines.append((blob, line))
    repo.write(WAIVERS, "waivers: []\n")
    repo.commit("the waivers withdrawn")
    result = cli(["audit", "--json", "--jobs", "1"], cwd=repo.path)
    assert result.code == 1
    rows = json.loads(result.out)["results"]
    assert [row["code"] for row in rows] == ["record_secret", "record_secret"]
    found = sorted((s["blob"], s["line"]) for row in rows for s in row["secrets"])
    assert found == sorted(lines)
    assert key not in result.out + result.err


# --- without the extra -----------------------------------------------------------------


def hidden(repo: Repo, *argv: str) -> Result:
    """``capsule ARGV`` in a real subprocess where detect-secrets cannot be
    imported (a None in sys.modules makes every import of it fail)."""
    code = (
        "import sys; sys.modules['detect_secrets'] = None; "
        "from governance.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return Result(done.returncode, done.stdout, done.stderr)


def test_without_the_extra_build_says_nothing_was_scanned(repo: Repo) -> None:
    notes_with(repo, f"example = {aws_key_id()}")
    result = hidden(repo, "build", PACKET, "--json", "-o", str(repo.path.parent / "c.json"))
    assert result.code == 0, result.err
    scan = json.loads(result.out)["secret_scan"]
    assert scan["scanned"] is False
    assert "pip install 'git-capsule[secrets]'" in scan["unavailable"]
    assert "capsule: warning [secret_scan_unavailable]: packets/P-1/packet.yml was not" in (
        result.err
    )
    checked = hidden(repo, "check", "--all", "--json")
    assert checked.code == 0
    assert json.loads(checked.out)["secret_scan"]["scanned"] is False
    assert "[secret_scan_unavailable]" in checked.err


def test_a_line_range_read_reports_the_files_line(cli, repo: Repo) -> None:
    notes_with(repo, "Some notes.", "", f"token = {github_token()}", "after")
    repo.write(PACKET, packet_yaml("P-1", ["docs/notes.md#L4-L6"]))
    repo.commit("line range")
    error = json.loads(cli(["build", PACKET, "--json"], cwd=repo.path).out)["error"]
    assert (error["code"], error["locator"], error["lines"]) == (
        "source_secret",
        "docs/notes.md#L4-L6",
        [5],
    )
    repo.write(PACKET, packet_yaml("P-1", ["docs/notes.md#L1-L4"]))
    repo.commit("the lines before it")
    assert cli(["build", PACKET], cwd=repo.path).code == 0
