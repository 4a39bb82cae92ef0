from __future__ import annotations

import json
from typing import Any

import pytest

from governance.core.builder import build_capsule, check_report
from governance.core.repository import open_repository
from governance.core.snapshot import Snapshot
from governance.errors import CapsuleError
from support.gitrepo import Repo, packet_yaml

PACKET = "packets/P-1/packet.yml"
P2 = "packets/P-2/packet.yml"


def check(cli, repo: Repo, *args: str):
    return cli(["check", *args], cwd=repo.path)


def report(cli, repo: Repo, *args: str) -> tuple[int, dict]:
    result = check(cli, repo, "--json", *args)
    return result.code, json.loads(result.out)


def failures(data: dict) -> list[tuple[str, str, str]]:
    return [
        (packet["path"], f["locator"], f["code"])
        for packet in data["packets"]
        for f in packet["failures"]
    ]


def add_packet(repo: Repo, packet_id: str, reads: list[str], **extra: str) -> None:
    repo.write(f"packets/{packet_id}/packet.yml", packet_yaml(packet_id, reads, **extra))
    repo.write(f"packets/{packet_id}/context.md", f"# {packet_id}\n")


# One table drives both the library function and the command: each case is a
# change to P-1 and every failure check must report, in order.
CASES = {
    "builds": ([], []),
    "every failing locator": (
        [
            ("packet", ["docs/roadmap.md#phase-9", "docs/notes.md", "docs/absent.md", "../x.md"]),
        ],
        [
            ("docs/roadmap.md#phase-9", "heading_missing"),
            ("docs/absent.md", "source_missing"),
            ("../x.md", "unsafe_path"),
        ],
    ),
    "missing context and a missing heading": (
        [("delete", "packets/P-1/context.md"), ("packet", ["docs/notes.md#nope"])],
        [("packets/P-1/context.md", "source_missing"), ("docs/notes.md#nope", "heading_missing")],
    ),
    "too many reads, and each read still checked": (
        [
            ("policy", "max_required_reads: 1\n"),
            ("packet", ["docs/notes.md", "docs/roadmap.md#phase-0"]),
        ],
        [(PACKET, "too_many_reads"), ("docs/roadmap.md#phase-0", "heading_missing")],
    ),
    "malformed packet stops there": (
        [("write", PACKET, "id: P-1\nsurprise: true\n")],
        [(PACKET, "packet_malformed")],
    ),
    "malformed policy stops there": (
        [("policy", "target_tokens: lots\n")],
        [("policies/capsule.yml", "policy_malformed")],
    ),
    # Listed in packet order, but build meets the budget's lower bound (the raw
    # size of docs/big.md) before it reads the heading that is gone.
    "over the budget floor, then a missing heading": (
        [
            ("write", "docs/big.md", "word " * 3000),
            (
                "write",
                PACKET,
                packet_yaml(
                    "P-1",
                    ["docs/big.md", "docs/roadmap.md#phase-9"],
                    budget="{target_tokens: 1000}",
                ),
            ),
        ],
        [("docs/roadmap.md#phase-9", "heading_missing"), (PACKET, "over_budget")],
    ),
}


def where(error: CapsuleError) -> str:
    # As the check reports it: the locator or file at fault, else the packet.
    return error.details.get("locator") or error.details.get("path") or PACKET


def apply(repo: Repo, changes: Any) -> None:
    for change in changes:
        kind, *rest = change
        if kind == "packet":
            repo.write(PACKET, packet_yaml("P-1", rest[0]))
        elif kind == "policy":
            repo.write("policies/capsule.yml", rest[0])
        elif kind == "write":
            repo.write(rest[0], rest[1])
        elif kind == "delete":
            (repo.path / rest[0]).unlink()
    repo.commit()


@pytest.mark.parametrize("case", CASES)
def test_check_packet_collects_every_failure(repo: Repo, case: str) -> None:
    changes, expected = CASES[case]
    apply(repo, changes)
    snapshot = Snapshot.at(open_repository(repo.path))
    found = [(where(e), e.code) for e in check_report(snapshot, PACKET).errors]
    assert found == expected


@pytest.mark.parametrize("case", CASES)
def test_check_command_reports_every_failure(cli, repo: Repo, case: str) -> None:
    changes, expected = CASES[case]
    apply(repo, changes)
    code, data = report(cli, repo, PACKET)
    assert failures(data) == [(PACKET, locator, c) for locator, c in expected]
    assert data["ok"] is (not expected)
    assert code == data["exit_code"]


@pytest.mark.parametrize("case", CASES)
def test_build_still_fails_on_the_first(cli, repo: Repo, case: str) -> None:
    changes, expected = CASES[case]
    apply(repo, changes)
    snapshot = Snapshot.at(open_repository(repo.path))
    checked = check(cli, repo, PACKET).code
    if not expected:
        assert build_capsule(snapshot, PACKET).packet.id == "P-1"
        assert checked == 0
        return
    with pytest.raises(CapsuleError) as info:
        build_capsule(snapshot, PACKET)
    error = info.value
    assert (where(error), error.code) in expected
    # check exits with the code build exits with: that of the failure build meets first.
    assert checked == error.exit_code
    assert cli(["build", PACKET], cwd=repo.path).code == checked


def test_pass_prints_nothing_on_stdout(cli, repo: Repo) -> None:
    result = check(cli, repo, PACKET)
    assert result.code == 0
    assert result.out == ""
    assert f"checked at HEAD ({repo.head()[:12]}): 1 packet would build" in result.err


def test_failure_lines_name_path_locator_code_and_what_to_do(cli, repo: Repo) -> None:
    apply(repo, [("packet", ["docs/roadmap.md#phase-9", "docs/absent.md"])])
    result = check(cli, repo, PACKET)
    assert result.code == 3
    assert result.out.splitlines() == [
        "packets/P-1/packet.yml: docs/roadmap.md#phase-9: heading_missing: no heading with "
        "slug 'phase-9' in docs/roadmap.md; nearest: docs/roadmap.md#phase-1 (line 5), "
        "docs/roadmap.md#phase-2 (line 9), docs/roadmap.md#phase-3 (line 17); `capsule outline "
        "docs/roadmap.md` lists every heading and its selector; restore the heading, or update "
        "the locator in the packet",
        "packets/P-1/packet.yml: docs/absent.md: source_missing: docs/absent.md does not "
        f"exist at commit {repo.head()[:12]}; restore the file, or update the locator in "
        "the packet",
    ]
    assert "2 failures in 1 of 1 packet" in result.err


def test_over_budget_is_exit_4_and_names_the_largest_parts(cli, repo: Repo) -> None:
    repo.write("docs/big.md", "word " * 3000)
    repo.write(PACKET, packet_yaml("P-1", ["docs/big.md"], budget="{target_tokens: 1000}"))
    repo.commit()
    result = check(cli, repo, PACKET)
    assert result.code == 4
    [line] = result.out.splitlines()
    assert line.startswith(f"{PACKET}: {PACKET}: over_budget: over budget: at least ")
    assert "(largest: docs/big.md 5,000 tok, " in line
    assert line.endswith("narrow the largest reads to heading sections, or split the packet")


def test_final_budget_is_not_judged_while_a_source_fails(cli, repo: Repo) -> None:
    # The raw bytes fit a 300-token target; the capsule's envelope does not.
    repo.write(PACKET, packet_yaml("P-1", ["docs/notes.md"], budget="{target_tokens: 300}"))
    repo.commit()
    assert failures(report(cli, repo, PACKET)[1]) == [(PACKET, PACKET, "over_budget")]
    # The exact size needs every part: with one missing, only that is reported.
    repo.write(PACKET, packet_yaml("P-1", ["docs/absent.md"], budget="{target_tokens: 300}"))
    repo.commit()
    code, data = report(cli, repo, PACKET)
    assert failures(data) == [(PACKET, "docs/absent.md", "source_missing")]
    assert code == 3


def test_a_failing_lower_bound_is_reported_beside_source_failures(cli, repo: Repo) -> None:
    repo.write(PACKET, packet_yaml("P-1", ["docs/absent.md"], budget="{target_tokens: 10}"))
    repo.commit()
    code, data = report(cli, repo, PACKET)
    assert failures(data) == [
        (PACKET, "docs/absent.md", "source_missing"),
        (PACKET, PACKET, "over_budget"),
    ]
    assert code == 3


def test_all_checks_every_packet_and_exit_follows_build_order(cli, repo: Repo) -> None:
    add_packet(repo, "P-2", ["docs/big.md"], budget="{target_tokens: 100}")
    add_packet(repo, "P-3", ["docs/notes.md"])
    repo.write("docs/big.md", "x" * 3000)
    repo.write(PACKET, packet_yaml("P-1", ["docs/notes.md#gone"]))
    repo.commit()
    code, data = report(cli, repo, "--all")
    assert [p["path"] for p in data["packets"]] == [PACKET, P2, "packets/P-3/packet.yml"]
    assert [p["ok"] for p in data["packets"]] == [False, False, True]
    # The exit code is build's for the first failing packet, as building them
    # one by one and stopping at the first failure would give.
    assert code == 3 == cli(["build", PACKET], cwd=repo.path).code
    repo.write("packets/P-3/packet.yml", "id: [")
    repo.commit()
    assert report(cli, repo, "--all")[0] == 3
    repo.write(PACKET, packet_yaml("P-1", ["docs/notes.md"]))
    repo.commit()
    assert report(cli, repo, "--all")[0] == 4 == cli(["build", P2], cwd=repo.path).code
    assert report(cli, repo, "packets/P-3/packet.yml", P2)[0] == 2


def test_all_with_no_packets(cli, repo: Repo) -> None:
    repo.git("rm", "-q", "-r", "packets")
    repo.commit()
    result = check(cli, repo, "--all")
    assert result.code == 0
    assert "no packets to check" in result.err


def test_named_packets_from_a_subfolder(cli, repo: Repo) -> None:
    add_packet(repo, "P-2", ["docs/absent.md"])
    repo.commit()
    result = cli(["check", "--json", "../packets/P-2/packet.yml", "../" + PACKET],
                 cwd=repo.path / "docs")  # fmt: skip
    data = json.loads(result.out)
    assert [p["path"] for p in data["packets"]] == [P2, PACKET]
    assert result.code == 3


def test_a_packet_that_does_not_exist(cli, repo: Repo) -> None:
    code, data = report(cli, repo, "packets/P-9/packet.yml")
    assert failures(data) == [("packets/P-9/packet.yml", "packets/P-9/packet.yml",
                               "source_missing")]  # fmt: skip
    assert code == 3


def test_at_head_a_dirty_source_fails_as_for_build(cli, repo: Repo) -> None:
    repo.write("docs/notes.md", "edited, not committed\n")
    code, data = report(cli, repo, PACKET)
    assert failures(data) == [(PACKET, "docs/notes.md", "source_dirty")]
    assert code == 3


def test_a_yaml_error_keeps_its_line_and_column(cli, repo: Repo) -> None:
    repo.write(PACKET, "id: P-1\nrequired_reads: [unclosed\n")
    repo.commit()
    result = check(cli, repo, PACKET)
    assert result.code == 2
    assert result.out.splitlines() == [
        f"{PACKET}: {PACKET}: packet_malformed: not valid YAML: while parsing a flow sequence "
        "at line 2, column 17: expected ',' or ']', but got '<stream end>' at line 3, column 1; "
        "fix the packet"
    ]


def test_a_broken_policy_is_reported_once(cli, repo: Repo) -> None:
    add_packet(repo, "P-2", ["docs/notes.md"])
    repo.write("policies/capsule.yml", "target_tokens: [\n")
    repo.commit()
    result = check(cli, repo, "--all")
    assert result.code == 2
    [line] = result.out.splitlines()
    assert line.startswith(
        "policies/capsule.yml: policies/capsule.yml: policy_malformed: not valid YAML: "
    )
    assert line.endswith(" at line 2, column 1 (fails 2 packets); fix the policy")
    assert "1 failure in 2 of 2 packets" in result.err
    # --json still lists it under each packet.
    assert failures(report(cli, repo, "--all")[1]) == [
        (PACKET, "policies/capsule.yml", "policy_malformed"),
        (P2, "policies/capsule.yml", "policy_malformed"),
    ]


@pytest.mark.parametrize(
    ("missing", "advice"),
    [
        ("policies/capsule.yml", "restore the policy, or commit one"),
        ("packets/P-1/context.md", "restore the packet's context.md, or write one"),
        ("docs/notes.md", "restore the file, or update the locator in the packet"),
    ],
)
def test_the_advice_for_a_missing_file_fits_the_file(cli, repo: Repo, missing, advice) -> None:
    repo.git("rm", "-q", missing)
    repo.commit()
    [line] = check(cli, repo, PACKET).out.splitlines()
    assert line.startswith(f"{PACKET}: {missing}: source_missing: ")
    assert line.endswith(f"; {advice}")


def test_the_advice_for_a_packet_that_does_not_exist(cli, repo: Repo) -> None:
    [line] = check(cli, repo, "packets/P-9/packet.yml").out.splitlines()
    assert line.endswith("; check the packet's path")


# --- --staged ----------------------------------------------------------------


def test_staged_reads_the_index_not_the_working_tree(cli, repo: Repo) -> None:
    roadmap = repo.path / "docs/roadmap.md"
    original = roadmap.read_text()
    roadmap.write_text(original.replace("## Phase 2", "## Phase Two"))
    # Unstaged: the index still has the heading.
    assert check(cli, repo, "--staged", PACKET).code == 0
    repo.git("add", "docs/roadmap.md")
    roadmap.write_text(original)  # the working tree looks fine again
    code, data = report(cli, repo, "--staged", PACKET)
    assert failures(data) == [(PACKET, "docs/roadmap.md#phase-2", "heading_missing")]
    assert data["at"] is None
    assert data["staged"] is True
    assert code == 3


def test_staged_deletion_says_in_the_index(cli, repo: Repo) -> None:
    repo.git("rm", "-q", "docs/notes.md")
    result = check(cli, repo, "--staged", PACKET)
    assert result.code == 3
    assert "docs/notes.md does not exist in the index" in result.out
    assert "checked in the index: 1 failure in 1 of 1 packet" in result.err


def test_staged_new_packet_before_the_first_commit(cli, tmp_path) -> None:
    fresh = Repo(tmp_path / "fresh")
    fresh.write("policies/capsule.yml", "")
    fresh.write("docs/a.md", "# A\n")
    add_packet(fresh, "P-1", ["docs/a.md#a"])
    fresh.git("add", "-A")
    assert cli(["check", "--staged", "--all"], cwd=fresh.path).code == 0


def test_staged_with_unresolved_conflicts(cli, repo: Repo) -> None:
    repo.git("checkout", "-q", "-b", "other")
    repo.write("docs/notes.md", "# Notes\n\nother side\n")
    repo.commit()
    repo.git("checkout", "-q", "main")
    repo.write("docs/notes.md", "# Notes\n\nthis side\n")
    repo.commit()
    repo.git("merge", "-q", "other", check=False)
    result = check(cli, repo, "--json", "--staged", PACKET)
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["code"] == "index_conflicted"
    assert error["paths"] == ["docs/notes.md"]


# --- usage -------------------------------------------------------------------


@pytest.mark.parametrize("args", [[], ["--all", PACKET], ["--staged"]])
def test_usage(cli, repo: Repo, args: list[str]) -> None:
    result = check(cli, repo, "--json", *args)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "usage"


def test_help_describes_exit_codes(cli, repo: Repo, capsys) -> None:
    with pytest.raises(SystemExit):
        cli(["check", "--help"])
    out = capsys.readouterr().out
    assert "--staged" in out
    assert "4  over budget" in out


def test_an_escaped_lone_surrogate_is_malformed_not_a_crash(cli, repo: Repo) -> None:
    # YAML's \u escapes are not combined into pairs: PyYAML yields two lone
    # surrogates, which no file name (and no capsule) can hold.
    repo.write(PACKET, packet_yaml("P-1", ["docs/\U0001f600.md"]))  # written as "\ud83d\ude00"
    assert "\\ud83d\\ude00" in (repo.path / PACKET).read_text()
    repo.commit()
    code, data = report(cli, repo, PACKET)
    assert failures(data) == [(PACKET, PACKET, "packet_malformed")]
    assert "lone surrogate" in data["packets"][0]["failures"][0]["message"]
    assert code == 2
    assert cli(["build", PACKET], cwd=repo.path).code == 2
