"""A source with more headings than the policy's ``max_heading_count`` is
refused before it is parsed, by every path that parses one: build, check,
verify, outline, suggest and CGP (issue 22, item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.agents.cgp_goal import goal_verdict
from governance.agents.tools import Workspace, outline
from governance.core import headings as core_headings
from governance.core import policy
from governance.core.snapshot import Snapshot
from governance.errors import SourceError
from support.gitrepo import POLICY, Repo, error_of, packet_yaml

PACKET = "packets/P-1/packet.yml"


def headings(count: int) -> str:
    return "# Top\n\nText.\n\n" + "".join(f"## S{n}\n\nMore.\n\n" for n in range(1, count))


def with_count(limit: int) -> str:
    return POLICY + f"max_heading_count: {limit}\n"


def test_heading_read_of_a_source_over_the_heading_count_is_refused(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", with_count(10))
    repo.write("docs/many.md", headings(11))
    repo.write(PACKET, packet_yaml("P-1", ["docs/many.md#top"]))
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (3, "source_too_many_headings")
    assert (error["headings"], error["limit"]) == (11, 10)
    assert "max_heading_count" in error["message"]


def test_heading_read_at_the_heading_count_builds(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", with_count(10))
    repo.write("docs/many.md", headings(10))
    repo.write(PACKET, packet_yaml("P-1", ["docs/many.md#s9"]))
    repo.commit()
    result = cli(["build", PACKET], cwd=repo.path)
    assert result.code == 0, result.err


def test_whole_file_and_line_reads_are_not_bound_by_the_heading_count(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", with_count(2))
    repo.write("docs/many.md", headings(20))
    repo.write(PACKET, packet_yaml("P-1", ["docs/many.md", "docs/many.md#L1-L3"]))
    repo.commit()
    result = cli(["build", PACKET], cwd=repo.path)
    assert result.code == 0, result.err


def test_policy_without_the_key_gets_the_default_heading_count(cli, repo: Repo) -> None:
    default = policy.DEFAULT_MAX_HEADING_COUNT
    repo.write("docs/at.md", "# a\n" * default)
    repo.write("docs/over.md", "# a\n" * (default + 1))
    repo.write(PACKET, packet_yaml("P-1", ["docs/at.md#a"]))
    repo.write("packets/P-2/packet.yml", packet_yaml("P-2", ["docs/over.md#a"]))
    repo.write("packets/P-2/context.md", "# C\n")
    repo.commit()
    # Within the count, the read is parsed (and is ambiguous: 10,000 equal headings).
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (3, "heading_ambiguous")
    assert error["candidate_count"] == default
    assert len(error["candidates"]) == 20
    code, error = error_of(cli, repo, ["build", "packets/P-2/packet.yml"])
    assert (code, error["code"]) == (3, "source_too_many_headings")
    assert error["limit"] == default


def test_check_reports_source_too_many_headings(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", with_count(3))
    repo.write("docs/many.md", headings(4))
    repo.write(PACKET, packet_yaml("P-1", ["docs/many.md#top", "docs/notes.md"]))
    repo.commit()
    result = cli(["check", PACKET], cwd=repo.path)
    assert result.code == 3
    assert "docs/many.md#top: source_too_many_headings" in result.out


def test_verify_reports_a_source_grown_over_the_heading_count(
    cli, repo: Repo, tmp_path: Path
) -> None:
    repo.write("policies/capsule.yml", with_count(5))
    repo.write("docs/many.md", headings(5))
    repo.write(PACKET, packet_yaml("P-1", ["docs/many.md#top"]))
    repo.commit()
    built = cli(["build", PACKET], cwd=repo.path)
    assert built.code == 0, built.err
    capsule = tmp_path / "c.json"
    capsule.write_text(built.out)
    repo.write("docs/many.md", headings(6))
    repo.commit()
    result = cli(["verify", str(capsule), "--json"], cwd=repo.path)
    parts = {p["locator"]: p for p in json.loads(result.out)["parts"]}
    assert parts["docs/many.md#top"]["status"] == "missing"
    assert parts["docs/many.md#top"]["code"] == "source_too_many_headings"
    assert result.code == 1


def test_outline_of_a_source_over_the_heading_count_is_refused(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", with_count(3))
    repo.write("docs/many.md", headings(4))
    repo.commit()
    code, error = error_of(cli, repo, ["outline", "docs/many.md"])
    assert (code, error["code"]) == (3, "source_too_many_headings")
    assert (error["headings"], error["limit"]) == (4, 3)
    # Within the count, a file is outlined as usual.
    assert cli(["outline", "docs/notes.md", "--json"], cwd=repo.path).code == 0


def test_suggest_skips_and_counts_a_source_over_the_heading_count(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", with_count(40))
    repo.write("docs/many.md", headings(41).replace("More.", "Widgets galore."))
    repo.write("docs/few.md", "# Widgets\n\nWidgets galore.\n")
    repo.commit()
    result = cli(["suggest", "widgets galore", "--json"], cwd=repo.path)
    assert result.code == 0, result.err
    found = json.loads(result.out)
    assert found["corpus"]["skipped"]["too_many_headings"] == 1
    assert all(read["path"] != "docs/many.md" for read in found["reads"])
    assert any(read["path"] == "docs/few.md" for read in found["reads"])
    text = cli(["suggest", "widgets galore"], cwd=repo.path)
    assert "1 too_many_headings" in text.err


def test_mcp_outline_answers_the_coded_refusal(repo: Repo) -> None:
    repo.write("policies/capsule.yml", with_count(3))
    repo.write("docs/many.md", headings(4))
    repo.commit()
    with pytest.raises(SourceError) as refused:
        outline(Workspace.open(str(repo.path)), "docs/many.md")
    assert refused.value.code == "source_too_many_headings"


def test_heading_lines_counts_every_kind_of_heading_line() -> None:
    text = (
        "\ufeff# one\n"
        "para\n===\n"
        "> ## quoted\n"
        "- ### in a list\n"
        "1. > #### deeper\n"
        "Title\r---\r"
        "####### seven is no heading\n"
        "#nospace\n"
        "    # code, counted anyway\n"
    )
    assert core_headings.heading_lines(text.encode("utf-8")) == 7


_LINES = st.sampled_from(
    [
        "# a",
        "## b c",
        "###",
        "> # q",
        ">#x",
        "- # l",
        "1) ## m",
        "  * > ### n",
        "Title",
        "===",
        "---",
        "  - - -",
        "- ---",
        "- ===",
        "-",
        "- ",
        "> - ===",
        "1. ---",
        "  ===",
        ">===",
        "> ---",
        "text",
        "",
        "```",
        "~~~",
        "    # code",
        "\t# tab",
        "<!-- c -->",
        "| a | b |",
        "|---|---|",
        "[x]: /y",
        "- item",
        "> quote",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINES, max_size=30), st.sampled_from(["\n", "\r\n", "\r"]))
def test_heading_lines_bounds_the_parse_from_above(lines: list[str], end: str) -> None:
    # The count judged before the parse is never below the headings the parse finds.
    text = end.join(lines)
    found = core_headings._parse_fully(text)
    assert core_headings.heading_lines(text.encode("utf-8")) >= len(found)


def test_cgp_goal_verify_of_a_source_over_the_heading_count_is_unknown(repo: Repo) -> None:
    # A goal frame's id is the client's: verifying it selects its locator
    # again, bounded as a build's heading read (before: parsed in full).
    repo.write("policies/capsule.yml", with_count(3))
    repo.write("docs/many.md", headings(4))
    repo.commit()
    git = pygit2.Repository(str(repo.path))
    identity = {
        "provider_id": "git-capsule",
        "frame_id": f"capsule-suggest:{repo.head()}/docs/many.md#top",
        "content_digest": "sha256:" + "0" * 64,
    }
    verdict = goal_verdict(git, Snapshot.at(git, "HEAD"), identity)
    assert verdict["status"] == "unknown"
