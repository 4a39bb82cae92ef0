"""``capsule suggest`` scores a section with its context and fills the packet
(issue 21 item 3): the words of the enclosing headings and of the document's
title count for every section under them, a document whose title the goal
names is read first, and once coverage is met the next-best sections fill
toward the target budget, never past it nor past ``--max-reads``."""

from __future__ import annotations

import json
from pathlib import Path

from support.gitrepo import POLICY, Repo

FILLER = "Unrelated prose about gardens, rivers and the weather of the coast.\n"


def run(cli, repo: Repo, *argv: str) -> dict:
    result = cli(["suggest", *argv, "--json"], cwd=repo.path)
    assert result.code == 0, result.out + result.err
    return json.loads(result.out)


def invariant(result: dict) -> None:
    omissions = result["omissions"]
    assert omissions["selected"] == len(result["reads"])
    assert omissions["candidates"] == omissions["selected"] + sum(omissions["reasons"].values())


def test_a_section_is_scored_with_its_enclosing_headings_and_title(cli, tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("policies/capsule.yml", POLICY)
    big = FILLER * 700  # too large for the budget: the title's section cannot be read
    repo.write(
        "docs/burrows.md",
        "# Wombat burrows and tunnels\n\n## Summary\n\nThey dig tunnels at night.\n\n"
        f"## Notes\n\n{big}",
    )
    repo.write("docs/other.md", f"# Other\n\n## Elsewhere\n\n{big}")
    repo.commit("docs")
    result = run(cli, repo, "wombat burrows", "--max-reads", "1")
    # The Summary holds neither word; its document's title holds both (and
    # more: the goal does not name the title).
    assert [read["locator"] for read in result["reads"]] == ["docs/burrows.md#summary"]
    assert result["reads"][0]["facets"] == ["wombat", "burrows"]
    assert result["coverage"]["complete"] is True


def test_a_document_the_goal_names_by_title_is_read_first(cli, tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("policies/capsule.yml", POLICY)
    # No single title heading: the file name is the title (an RFC's way).
    repo.write(
        "text/0042-quokka-habitat.md",
        "# Summary\n\nWhere a small marsupial lives, and why.\n\n"
        "# Motivation\n\nIslands change.\n\n" + FILLER * 400,
    )
    # A short section dense in both words would win on BM25 alone.
    repo.write("text/0007-misc.md", "# Misc\n\n## Quokka\n\nQuokka habitat, quokka habitat.\n")
    repo.commit("docs")
    result = run(cli, repo, "quokka habitat")
    assert result["reads"][0]["path"] == "text/0042-quokka-habitat.md"
    assert result["reads"][0]["heading"] == "Summary"
    invariant(result)


def test_once_coverage_is_met_it_fills_toward_the_target(cli, tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("policies/capsule.yml", POLICY)
    for n in range(8):
        repo.write(f"docs/n{n}.md", f"# Note {n}\n\nThe wombat of file {n}.\n\n{FILLER}")
    repo.commit("wombats")
    result = run(cli, repo, "wombat", "--max-reads", "5")
    # Two reads cover the facet twice; three more fill toward the target.
    assert len(result["reads"]) == 5
    # The other three files (each a section and the same lines whole) were
    # not needed once the read limit was reached.
    assert result["omissions"]["reasons"]["redundant_coverage"] == 6
    assert result["omissions"]["reasons"]["read_limit"] == 0
    assert result["capsule"]["estimated_tokens"] <= result["capsule"]["target_tokens"]
    invariant(result)


def test_filling_never_passes_the_target(cli, tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("policies/capsule.yml", POLICY)
    for n in range(8):
        repo.write(f"docs/n{n}.md", f"# Note {n}\n\nThe wombat of file {n}.\n\n" + FILLER * 120)
    repo.commit("wombats")
    result = run(cli, repo, "wombat", "--budget", "8000")
    capsule = result["capsule"]
    assert capsule["target_tokens"] == 8000
    assert capsule["estimated_tokens"] <= 8000
    # Each read is about 2,800 tokens: two fit, a third would pass the target.
    assert len(result["reads"]) == 2
    assert result["omissions"]["reasons"]["budget"] >= 1
    invariant(result)
