"""Hostile text never reaches a terminal raw: one named test per surface.

Each test commits (or passes) a path and a locator carrying ESC, BEL, CR and
U+202E (right-to-left override), runs the command or hook as a user would, and
asserts that none of those characters reaches stdout or stderr, while the
escaped form does (the line still says what is wrong, and where).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from capsule_hooks import packets, records
from governance.core.hashing import sha256_hex
from support.gitrepo import Repo, Result, packet_yaml

# Clear the screen, go red, ring the bell, return to column 0, reverse the line.
HOSTILE = "\x1b[2J\x1b[31mRED\a\r\u202e"
RAW = ("\x1b", "\a", "\r", "\u202e")
ESCAPED = "\\x1b[2J\\x1b[31mRED\\x07\\x0d\\u202e"
PACKET = "packets/P-1/packet.yml"


def assert_clean(result: Result) -> None:
    for stream in (result.out, result.err):
        for char in RAW:
            assert char not in stream, f"{char!r} reached the terminal raw: {stream!r}"


@pytest.fixture
def hook(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Result]:
    def run(main: Callable[[Sequence[str]], int], repo: Repo, *paths: str) -> Result:
        monkeypatch.chdir(repo.path)
        capsys.readouterr()
        code = main(list(paths))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def hostile_reads(repo: Repo) -> None:
    """P-1 reads a file whose name carries the hostile text (refused:
    unsafe_path) and a heading whose slug does (heading_missing)."""
    repo.write(
        PACKET,
        packet_yaml("P-1", [f"docs/{HOSTILE}.md", f"docs/roadmap.md#{HOSTILE}"]),
    )


def hostile_record(cli, repo: Repo) -> str:
    """A genuine record of P-1, copied to a path whose name carries the
    hostile text (record_misplaced), and committed."""
    assert cli(["build", PACKET, "--record"], cwd=repo.path).code == 0
    record = next((repo.path / "packets/P-1/capsules").iterdir())
    path = f"packets/P-1/capsules/{HOSTILE}.json"
    shutil.copyfile(record, repo.path / path)
    return path


def test_check_lines_show_a_hostile_locator_escaped(cli, repo: Repo) -> None:
    hostile_reads(repo)
    repo.commit("hostile reads")
    result = cli(["check", PACKET], cwd=repo.path)
    assert result.code == 3
    assert_clean(result)
    assert f"docs/{ESCAPED}.md: unsafe_path" in result.out
    assert f"docs/roadmap.md#{ESCAPED}: heading_missing" in result.out


def test_packets_hook_shows_a_hostile_locator_escaped(hook, repo: Repo) -> None:
    hostile_reads(repo)
    repo.git("add", "-A")
    result = hook(packets.main, repo)
    assert result.code == 3
    assert_clean(result)
    assert f"docs/{ESCAPED}.md: unsafe_path" in result.out
    assert f"docs/roadmap.md#{ESCAPED}: heading_missing" in result.out


def test_records_hook_shows_a_hostile_record_path_escaped(cli, hook, repo: Repo) -> None:
    hostile_record(cli, repo)
    repo.git("add", "-A")
    result = hook(records.main, repo)
    # The index holds it, but no source path may carry a control character.
    assert result.code == 3
    assert_clean(result)
    assert f"packets/P-1/capsules/{ESCAPED}.json: $: unsafe_path" in result.out


def test_hooks_show_a_hostile_path_argument_escaped(hook, repo: Repo) -> None:
    # A path given on the command line, outside the repository: an error line.
    result = hook(packets.main, repo, f"/{HOSTILE}")
    assert result.code == 2
    assert_clean(result)
    assert result.err.startswith("capsule-packets: error [path_outside_repository]: ")
    assert ESCAPED in result.err


def test_audit_table_shows_a_hostile_record_path_escaped(cli, repo: Repo) -> None:
    path = hostile_record(cli, repo)
    repo.commit("a misplaced copy")
    result = cli(["audit"], cwd=repo.path)
    assert result.code == 1
    assert_clean(result)
    row = next(line for line in result.out.splitlines() if ESCAPED in line)
    assert row.startswith("error ")
    assert "record_misplaced" in row
    # --json stays exact: the path is the committed name, byte for byte.
    document = json.loads(cli(["audit", "--json"], cwd=repo.path).out)
    assert path in [entry["path"] for entry in document["results"]]


def test_verify_shows_a_hostile_locator_and_path_escaped(cli, repo: Repo, tmp_path: Path) -> None:
    # U+202E is allowed in a path (it is no control character), so a capsule
    # can read such a file; when it goes, verify names the locator.
    reversed_name = "docs/evil\u202etxt.md"
    repo.write(reversed_name, "# Evil\n")
    repo.write(PACKET, packet_yaml("P-1", [reversed_name]))
    repo.commit("a reversed name")
    target = tmp_path / "capsule.json"
    assert cli(["build", PACKET, "-o", str(target)], cwd=repo.path).code == 0
    (repo.path / reversed_name).unlink()
    repo.commit("gone")
    result = cli(["verify", str(target)], cwd=repo.path)
    assert result.code == 1
    assert_clean(result)
    lines = result.out.splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith("missing"))
    assert lines[at].split()[1:] == ["docs/evil\\u202etxt.md"]
    assert lines[at + 1].split()[0] == "source_missing:"
    # A capsule path carrying all of it, which does not exist: the error line.
    result = cli(["verify", str(tmp_path / f"{HOSTILE}.json")], cwd=repo.path)
    assert result.code == 2
    assert_clean(result)
    assert f"{ESCAPED}.json: cannot read capsule" in result.err


def test_replay_shows_a_hostile_capsule_path_escaped(cli, repo: Repo, tmp_path: Path) -> None:
    built = tmp_path / "capsule.json"
    assert cli(["build", PACKET, "-o", str(built)], cwd=repo.path).code == 0
    hostile = tmp_path / f"{HOSTILE}.json"
    shutil.copyfile(built, hostile)
    result = cli(["replay", str(hostile)], cwd=repo.path)
    assert result.code == 0
    assert_clean(result)
    assert result.out.startswith("identical  ")
    assert f"{ESCAPED}.json" in result.out


def test_continuation_shows_hostile_results_escaped(cli, repo: Repo, tmp_path: Path) -> None:
    capsule = tmp_path / "capsule.json"
    assert cli(["build", PACKET, "-o", str(capsule)], cwd=repo.path).code == 0
    paths = []
    for slot in "ab":
        result = {
            "schema": "continuation-result/1",
            "agent": {"id": f"agent-{slot}{HOSTILE}"},
            "prior_context": False,
            "capsule_sha256": sha256_hex(capsule.read_bytes()),
            "decision": "continue",
            "rationale": "Phase 2 is described in full.",
            "next_action": f"Start phase 2{HOSTILE}",
            "citations": [PACKET, f"docs/roadmap.md#{HOSTILE}"],
        }
        path = tmp_path / f"{slot}{HOSTILE}.json"
        path.write_text(json.dumps(result))
        paths.append(str(path))
    result = cli(["continuation", "verify", str(capsule), *paths], cwd=repo.path)
    assert result.code == 1  # the hostile citation is not a part of the capsule
    assert_clean(result)
    assert f"agent-a{ESCAPED}" in result.out
    assert f"next action: Start phase 2{ESCAPED}" in result.out
    # The verdict quotes a citation with repr(), which escapes it already.
    assert "cites 'docs/roadmap.md#\\x1b[2J\\x1b[31mRED\\x07\\r\\u202e'" in result.out
