"""Qualified selectors: ``path#parent-slug/child-slug`` names a repeated heading
by the headings that enclose it, never by its position."""

from __future__ import annotations

import importlib.util
import itertools
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from governance.core import canonical
from governance.core.budget import fixpoint
from governance.core.headings import Heading, line_count, parse_headings
from governance.core.tree import Tree
from support.gitrepo import Repo, packet_yaml

PACKET = "packets/P-1/packet.yml"
ROOT = Path(__file__).resolve().parent.parent

KEP = """\
# KEP-1: Widgets

## Summary

Top summary.

## Goals

### Summary

Goals summary.

## Design Details

### Summary

Design summary.

#### Notes

Design notes.

### Graduation

#### Notes

Graduation notes.
"""


def with_reads(repo: Repo, reads: list[str], doc: str = KEP) -> None:
    repo.write("docs/kep.md", doc)
    repo.write(PACKET, packet_yaml("P-1", reads))
    repo.commit()


def build_json(cli, repo: Repo) -> tuple[int, dict]:
    result = cli(["build", PACKET], cwd=repo.path)
    if result.code == 0:
        return 0, json.loads(result.out)
    failed = cli(["build", PACKET, "--json"], cwd=repo.path)
    assert failed.code == result.code
    return result.code, json.loads(failed.out)["error"]


def test_parent_child_selects_the_nested_repeat(cli, repo: Repo) -> None:
    with_reads(repo, ["docs/kep.md#design-details/summary"])
    code, capsule = build_json(cli, repo)
    assert code == 0, capsule
    read = capsule["reads"][0]
    assert read["locator"] == "docs/kep.md#design-details/summary"
    assert read["heading"] == {"slug": "summary", "text": "Summary", "level": 3}
    assert read["lines"] == [15, 22]
    assert read["text"].startswith("### Summary\n\nDesign summary.\n\n#### Notes\n")


def test_any_depth_and_parents_need_not_be_adjacent(cli, repo: Repo) -> None:
    with_reads(
        repo,
        [
            "docs/kep.md#kep-1-widgets/graduation/notes",  # skips Design Details
            "docs/kep.md#kep-1-widgets/design-details/summary/notes",
        ],
    )
    code, capsule = build_json(cli, repo)
    assert code == 0, capsule
    assert [r["lines"] for r in capsule["reads"]] == [[25, 27], [19, 22]]


def test_parents_must_enclose_in_the_order_given(cli, repo: Repo) -> None:
    with_reads(repo, ["docs/kep.md#summary/design-details/notes"])
    code, error = build_json(cli, repo)
    assert (code, error["code"]) == (3, "heading_missing")


def test_a_qualification_naming_two_is_still_ambiguous(cli, repo: Repo) -> None:
    with_reads(repo, ["docs/kep.md#kep-1-widgets/notes"])
    code, error = build_json(cli, repo)
    assert (code, error["code"]) == (3, "heading_ambiguous")
    assert error["lines"] == [19, 25]
    assert error["candidates"] == [
        {"line": 19, "locator": "docs/kep.md#summary/notes"},
        {"line": 25, "locator": "docs/kep.md#graduation/notes"},
    ]


def test_ambiguous_slug_lists_each_candidate_with_its_shortest_selector(cli, repo: Repo) -> None:
    with_reads(repo, ["docs/kep.md#summary"])
    code, error = build_json(cli, repo)
    assert (code, error["code"]) == (3, "heading_ambiguous")
    assert error["candidates"] == [
        # The top one is enclosed only by the title, which encloses the other
        # two as well, but directly it encloses this one alone.
        {"line": 3, "locator": "docs/kep.md#kep-1-widgets>summary"},
        {"line": 9, "locator": "docs/kep.md#goals/summary"},
        {"line": 15, "locator": "docs/kep.md#design-details/summary"},
    ]
    assert "line 9 (docs/kep.md#goals/summary)" in error["message"]
    assert "line 3 (docs/kep.md#kep-1-widgets>summary)" in error["message"]


def test_ambiguous_error_lists_at_most_twenty_candidates_with_their_count(cli, repo: Repo) -> None:
    # A file of 5,000 equal headings: the --json error listed every candidate
    # (a million of them made 39 MB); it lists the first twenty and the count.
    with_reads(repo, ["docs/kep.md#a"], "# a\n" * 5000)
    code, error = build_json(cli, repo)
    assert (code, error["code"]) == (3, "heading_ambiguous")
    assert error["candidate_count"] == 5000
    assert [c["line"] for c in error["candidates"]] == list(range(1, 21))
    assert error["lines"] == list(range(1, 21))
    assert "names 5,000 headings" in error["message"]
    assert "and 4,980 more" in error["message"]
    assert len(error["message"]) < 4000


def test_missing_under_parent_lists_at_most_twenty_elsewhere(cli, repo: Repo) -> None:
    with_reads(repo, ["docs/kep.md#b/a"], "# a\n" * 300)
    code, error = build_json(cli, repo)
    assert (code, error["code"]) == (3, "heading_missing")
    assert (len(error["candidates"]), error["candidate_count"]) == (20, 300)
    assert "and 280 more" in error["message"]


def test_a_github_number_of_5000_digits_is_missing_not_a_traceback(cli, repo: Repo) -> None:
    # int() refuses strings of more than 4,300 digits: the position-number
    # check converted whatever followed the last '-' (ValueError, a traceback).
    with_reads(repo, ["docs/kep.md#summary-" + "1" * 5000])
    code, error = build_json(cli, repo)
    assert (code, error["code"]) == (3, "heading_missing")


def test_github_suffix_lists_the_qualified_selectors(cli, repo: Repo) -> None:
    # GitHub's anchor for the second Summary is summary-1: it moves when a
    # Summary is added above, so it is refused, pointing at what to write.
    with_reads(repo, ["docs/kep.md#summary-1"])
    code, error = build_json(cli, repo)
    assert (code, error["code"]) == (3, "heading_ambiguous")
    assert error["lines"] == [3, 9, 15]
    assert "position number" in error["message"]
    assert {"line": 15, "locator": "docs/kep.md#design-details/summary"} in error["candidates"]


def test_qualified_github_suffix_is_still_refused(cli, repo: Repo) -> None:
    with_reads(repo, ["docs/kep.md#design-details/summary-1"])
    code, error = build_json(cli, repo)
    assert (code, error["code"]) == (3, "heading_ambiguous")
    assert error["candidates"] == [{"line": 15, "locator": "docs/kep.md#design-details/summary"}]


def test_literal_numbered_heading_under_a_parent(cli, repo: Repo) -> None:
    doc = "# Doc\n\n## Steps\n\n### Step 1\n\ngo\n\n## Other\n\n### Step 1\n\nno\n"
    with_reads(repo, ["docs/kep.md#steps/step-1"], doc)
    code, capsule = build_json(cli, repo)
    assert code == 0, capsule
    assert capsule["reads"][0]["lines"] == [5, 8]


def test_twins_under_the_same_parent_are_named_by_their_ordinal(cli, repo: Repo) -> None:
    doc = "# Doc\n\n## Part\n\n### Notes\n\na\n\n### Notes\n\nb\n"
    with_reads(repo, ["docs/kep.md#part/notes"], doc)
    code, error = build_json(cli, repo)
    assert (code, error["code"]) == (3, "heading_ambiguous")
    assert error["candidates"] == [
        {"line": 5, "locator": "docs/kep.md#notes@1"},
        {"line": 9, "locator": "docs/kep.md#notes@2"},
    ]
    assert "use the selector of the one you mean" in error["message"]


def test_missing_under_parent_names_where_the_slug_is(cli, repo: Repo) -> None:
    with_reads(repo, ["docs/kep.md#goals/notes"])
    code, error = build_json(cli, repo)
    assert (code, error["code"]) == (3, "heading_missing")
    assert [c["locator"] for c in error["candidates"]] == [
        "docs/kep.md#summary/notes",
        "docs/kep.md#graduation/notes",
    ]


def test_empty_segments_are_invalid_locators(cli, repo: Repo) -> None:
    for bad in ("docs/kep.md#design-details//summary", "docs/kep.md#summary/", "docs/kep.md#/x"):
        with_reads(repo, [bad])
        code, error = build_json(cli, repo)
        assert (code, error["code"]) == (3, "invalid_locator"), bad


def test_verify_accepts_a_capsule_with_a_qualified_read(cli, repo: Repo, tmp_path: Path) -> None:
    with_reads(repo, ["docs/kep.md#graduation/notes"])
    target = tmp_path / "c.json"
    assert cli(["build", PACKET, "-o", str(target)], cwd=repo.path).code == 0
    result = cli(["verify", str(target), "--json"], cwd=repo.path)
    assert result.code == 0, result.out
    assert {p["code"] for p in json.loads(result.out)["parts"]} == {"verified_unchanged"}
    replayed = cli(["replay", str(target), "--json"], cwd=repo.path)
    assert replayed.code == 0, replayed.out


def test_qualified_selector_in_check_and_the_index(cli, repo: Repo) -> None:
    with_reads(repo, ["docs/kep.md#goals/summary"])
    repo.write("docs/kep.md", KEP.replace("## Goals\n", "## Aims\n"))
    repo.git("add", "-A")
    result = cli(["check", "--staged", "--all"], cwd=repo.path)
    assert result.code == 3
    assert "docs/kep.md#goals/summary: heading_missing" in result.out


def test_committed_records_and_golden_capsule_unchanged(cli) -> None:
    # Existing locators mean what they meant: this repository's own records
    # replay byte for byte, and the golden capsule regenerates identically.
    records = sorted(ROOT.glob("packets/*/capsules/*.json"))
    assert records
    for record in records:
        result = cli(["replay", str(record), "--json"], cwd=ROOT)
        assert result.code == 0, result.out
        assert json.loads(result.out)["identical"] is True

    spec = importlib.util.spec_from_file_location(
        "make_golden", ROOT / "tests" / "golden" / "make_golden.py"
    )
    assert spec is not None
    assert spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert generator.main(["--check"]) == 0


# --- the tree itself: every qualified selector names its heading ----------------

_TITLES = ("Notes", "Summary", "Notes 1", "Design", "Step")


@st.composite
def documents(draw: st.DrawFn) -> str:
    count = draw(st.integers(min_value=1, max_value=14))
    lines = []
    for _ in range(count):
        level = draw(st.integers(min_value=1, max_value=4))
        lines.append(f"{'#' * level} {draw(st.sampled_from(_TITLES))}\n\nbody\n")
    return "\n".join(lines)


def _all_selectors(tree: Tree, index: int) -> list[tuple[str, ...]]:
    chain = [tree.headings[a].slug for a in tree.ancestors(index)]
    own = tree.headings[index].slug
    return [
        (*(chain[i] for i in reversed(picked)), own)
        for size in range(len(chain) + 1)
        for picked in itertools.combinations(range(len(chain)), size)
    ]


@settings(max_examples=300, deadline=None)
@given(documents())
def test_qualified_is_the_shortest_selector_that_names_it(doc: str) -> None:
    headings: list[Heading] = parse_headings(doc)
    tree = Tree(headings, line_count(doc.encode()))
    for index in range(len(headings)):
        found = tree.qualified(index)
        naming = [s for s in _all_selectors(tree, index) if tree.match(s).named == index]
        if found is None:
            assert naming == []
        else:
            assert tree.match(found).named == index
            assert len(found) == min(len(s) for s in naming)


def test_reader_refuses_a_qualified_locator_that_disagrees_with_its_heading(
    cli, repo: Repo, tmp_path: Path
) -> None:
    with_reads(repo, ["docs/kep.md#design-details/summary"])
    target = tmp_path / "c.json"
    assert cli(["build", PACKET, "-o", str(target)], cwd=repo.path).code == 0
    document = json.loads(target.read_bytes())
    document["reads"][0]["locator"] = "docs/kep.md#summary/design-details"
    target.write_bytes(fixpoint(document, canonical.dumps))
    result = cli(["verify", str(target), "--json"], cwd=repo.path)
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert (error["code"], error["field"]) == ("capsule_corrupt", "reads[0].heading")
