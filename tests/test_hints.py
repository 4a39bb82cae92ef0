"""What a failure or a warning tells the author to do: nearest slugs for a
missing heading, overlapping reads, and what to narrow when over budget."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from test_qualified import KEP

from governance.core.builder import build_capsule
from governance.core.overlap import MOST
from governance.core.repository import open_repository
from governance.core.snapshot import Snapshot
from support.gitrepo import Repo, error_of, packet_yaml

PACKET = "packets/P-1/packet.yml"


def set_reads(repo: Repo, reads: list[str], **extra: str) -> str:
    repo.write("docs/kep.md", KEP)
    repo.write(PACKET, packet_yaml("P-1", reads, **extra))
    return repo.commit()


# --- a missing slug: the nearest ones, and capsule outline --------------------


def test_missing_slug_lists_the_three_nearest(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/roadmap.md#phase-9"])
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (3, "heading_missing")
    # Equally near: ties go by line.
    assert error["nearest"] == [
        {"line": 5, "locator": "docs/roadmap.md#phase-1"},
        {"line": 9, "locator": "docs/roadmap.md#phase-2"},
        {"line": 17, "locator": "docs/roadmap.md#phase-3"},
    ]
    assert "`capsule outline docs/roadmap.md` lists every heading" in error["message"]


def test_nearest_is_ordered_by_similarity(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/kep.md#desing-details"])
    _, error = error_of(cli, repo, ["build", PACKET])
    assert error["nearest"][0] == {"line": 13, "locator": "docs/kep.md#design-details"}
    assert "nearest: docs/kep.md#design-details (line 13)" in error["message"]


def test_nearest_offers_qualified_selectors_for_repeated_slugs(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/kep.md#sumary"])
    _, error = error_of(cli, repo, ["build", PACKET])
    assert error["nearest"] == [
        {"line": 3, "locator": "docs/kep.md#kep-1-widgets>summary"},
        {"line": 9, "locator": "docs/kep.md#goals/summary"},
        {"line": 15, "locator": "docs/kep.md#design-details/summary"},
    ]


def test_nothing_alike_offers_no_nearest(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/kep.md#zzzzzzzzzzzz"])
    _, error = error_of(cli, repo, ["build", PACKET])
    assert "nearest" not in error
    assert "capsule outline docs/kep.md" in error["message"]


# --- overlapping reads: a warning, never a change ------------------------------


def test_section_and_its_subsection_warn_and_build_the_same_bytes(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/roadmap.md#phase-2", "docs/roadmap.md#details", "docs/notes.md"])
    result = cli(["build", PACKET], cwd=repo.path)
    assert result.code == 0
    # stdout is the capsule, exactly what the builder makes: the warning is
    # on stderr only.
    built = build_capsule(Snapshot.at(open_repository(repo.path), repo.head()), PACKET)
    assert result.out.encode() == built.data
    assert (
        "capsule: warning [reads_overlap]: packets/P-1/packet.yml: docs/roadmap.md#phase-2 "
        "(lines 9-16) and docs/roadmap.md#details (lines 13-16) overlap: lines 13-16 of "
        "docs/roadmap.md are in the capsule twice"
    ) in result.err


def test_overlap_in_the_json_summary(cli, repo: Repo, tmp_path: Path) -> None:
    set_reads(repo, ["docs/roadmap.md", "docs/roadmap.md#phase-3"])
    result = cli(["build", PACKET, "-o", str(tmp_path / "c.json"), "--json"], cwd=repo.path)
    assert result.code == 0
    (warning,) = json.loads(result.out)["warnings"]
    assert warning["code"] == "reads_overlap"
    assert warning["locators"] == ["docs/roadmap.md", "docs/roadmap.md#phase-3"]
    assert warning["lines"] == [[1, 19], [17, 19]]


def test_one_heading_named_twice_warns(cli, repo: Repo) -> None:
    # The same locator twice is a malformed packet; the same heading by two
    # selectors is the same read twice.
    set_reads(
        repo,
        ["docs/kep.md#design-details/summary", "docs/kep.md#kep-1-widgets/design-details/summary"],
    )
    result = cli(["build", PACKET], cwd=repo.path)
    assert result.code == 0
    assert (
        "docs/kep.md#design-details/summary and docs/kep.md#kep-1-widgets/design-details/summary "
        "select the same lines (15-22) of docs/kep.md: they are in the capsule twice"
    ) in result.err
    assert result.err.count("reads_overlap") == 1


def test_neighbours_and_other_files_do_not_warn(cli, repo: Repo, tmp_path: Path) -> None:
    set_reads(repo, ["docs/roadmap.md#phase-1", "docs/roadmap.md#phase-2", "docs/notes.md"])
    result = cli(["build", PACKET, "-o", str(tmp_path / "c.json"), "--json"], cwd=repo.path)
    assert result.code == 0
    assert json.loads(result.out)["warnings"] == []
    assert "warning" not in result.err


def test_a_qualified_and_a_bare_selector_of_one_heading_overlap(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/kep.md#design-details", "docs/kep.md#graduation/notes"])
    result = cli(["build", PACKET], cwd=repo.path)
    assert result.code == 0
    assert "docs/kep.md#design-details (lines 13-27) and docs/kep.md#graduation/notes" in (
        result.err
    )


def test_check_reports_overlaps_without_failing(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/roadmap.md#phase-2", "docs/roadmap.md#details"])
    result = cli(["check", PACKET], cwd=repo.path)
    assert result.code == 0
    assert result.out == ""
    assert (
        "packets/P-1/packet.yml: docs/roadmap.md#phase-2: reads_overlap: docs/roadmap.md#phase-2 "
        "(lines 9-16) and docs/roadmap.md#details (lines 13-16) overlap"
    ) in result.err
    assert "1 packet would build, 1 warning" in result.err
    report = json.loads(cli(["check", PACKET, "--json"], cwd=repo.path).out)
    assert report["ok"] is True
    assert [w["locators"] for w in report["packets"][0]["warnings"]] == [
        ["docs/roadmap.md#phase-2", "docs/roadmap.md#details"]
    ]


def test_check_staged_reports_overlaps_too(cli, repo: Repo) -> None:
    repo.write(PACKET, packet_yaml("P-1", ["docs/roadmap.md", "docs/roadmap.md#details"]))
    repo.git("add", "-A")
    result = cli(["check", "--staged", "--all"], cwd=repo.path)
    assert result.code == 0
    assert "docs/roadmap.md#details (lines 13-16) overlap" in result.err


def test_a_record_with_nested_reads_keeps_replaying(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/roadmap.md#phase-2", "docs/roadmap.md#details"])
    assert cli(["build", PACKET, "--record"], cwd=repo.path).code == 0
    repo.commit("record")
    (record,) = (repo.path / "packets/P-1/capsules").iterdir()
    replay = cli(["replay", str(record), "--json"], cwd=repo.path)
    assert (replay.code, json.loads(replay.out)["identical"]) == (0, True)
    assert cli(["audit"], cwd=repo.path).code == 0


def test_overlaps_reported_are_bounded(cli, repo: Repo, tmp_path: Path) -> None:

    # One heading under five others has 32 selectors: 32 reads of the same
    # lines make 496 pairs, and the report stops at MOST.
    repo.write("docs/deep.md", "# A\n## B\n### C\n#### D\n##### E\n###### F\nbody\n")
    chain = ["a", "b", "c", "d", "e"]
    reads = [
        "docs/deep.md#" + "/".join([*picked, "f"])
        for size in range(6)
        for picked in itertools.combinations(chain, size)
    ]
    # 32 reads are more than any policy may allow (the ADR's 8): check still
    # selects every read and reports their overlaps beside too_many_reads.
    set_reads(repo, reads)
    result = cli(["check", PACKET, "--json"], cwd=repo.path)
    (packet,) = json.loads(result.out)["packets"]
    assert [f["code"] for f in packet["failures"]] == ["too_many_reads"]
    assert len(packet["warnings"]) == MOST


# --- over budget: what to narrow ------------------------------------------------

BIG = (
    "# Big\n\n## Design\n\n"
    + "### API\n\n" + "api words here\n" * 300
    + "### Storage\n\n" + "storage words\n" * 120
    + "### Small\n\nlittle\n"
    + "## Other\n\nshort\n"
)  # fmt: skip


def test_over_budget_names_the_read_and_its_largest_subsections(cli, repo: Repo) -> None:
    repo.write("docs/big.md", BIG)
    set_reads(repo, ["docs/notes.md", "docs/big.md#design"], budget="{target_tokens: 1500}")
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (4, "over_budget")
    assert error["excess_tokens"] == error["estimated_tokens"] - 1500
    (narrow,) = error["narrow"]
    assert narrow["part"] == "docs/big.md#design"
    assert [s["locator"] for s in narrow["sections"]] == [
        "docs/big.md#api",
        "docs/big.md#storage",
        "docs/big.md#small",
    ]
    api = narrow["sections"][0]
    assert api["bytes"] == len("### API\n\n" + "api words here\n" * 300)
    assert api["estimated_tokens"] == -(-api["bytes"] // 3)
    assert f"to fit, cut at least {error['excess_tokens']:,} estimated tokens" in error["message"]
    assert "narrow docs/big.md#design (" in error["message"]
    assert "largest subsections of docs/big.md#design:" in error["message"]


def test_over_budget_check_line_says_how_much_to_cut(cli, repo: Repo) -> None:
    repo.write("docs/big.md", BIG)
    set_reads(repo, ["docs/big.md#design"], budget="{target_tokens: 1500}")
    result = cli(["check", PACKET], cwd=repo.path)
    assert result.code == 4
    assert "to fit, cut at least" in result.out
    assert "narrow docs/big.md#design" in result.out


def test_over_budget_whole_file_is_named_before_it_is_read(cli, repo: Repo) -> None:
    repo.write("docs/big.md", BIG)
    set_reads(repo, ["docs/big.md", "docs/notes.md"], budget="{target_tokens: 1500}")
    code, error = error_of(cli, repo, ["build", PACKET])
    assert code == 4
    assert error["message"].startswith("over budget: at least")
    assert [n["part"] for n in error["narrow"]] == ["docs/big.md"]
    assert error["narrow"][0]["sections"] == []


def test_over_budget_mentions_overlapping_reads(cli, repo: Repo) -> None:
    repo.write("docs/big.md", BIG)
    set_reads(repo, ["docs/big.md#design", "docs/big.md#api"], budget="{target_tokens: 2500}")
    code, error = error_of(cli, repo, ["build", PACKET])
    assert code == 4
    assert "and docs/big.md#design (lines" in error["message"]
    assert "overlap" in error["message"]
