"""Every heading has a selector: ``a>b`` (directly under), ``>a`` (under no
heading) and, among identical siblings alone, ``a@2``; outline proposes one
for each heading and a build selects exactly the lines outline reports."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.authoring.outline import outline
from governance.core.excerpt import excerpt_of
from governance.core.headings import Heading
from governance.core.locator import Step, parse_locator
from governance.core.slug import github_anchors, github_slug
from governance.core.snapshot import Snapshot
from governance.core.structure import match_steps, propose
from governance.core.tree import Tree
from governance.errors import SourceError
from support.gitrepo import Repo, packet_yaml

PACKET = "packets/P-1/packet.yml"

TWINS = """\
# Guide

## Notes

First notes.

## Notes

### Details

Second notes.

## Appendix

### Notes

Appendix notes.

# Guide
"""


# --- the forms, from the locator alone -------------------------------------


def test_structural_forms_parse_to_steps() -> None:
    found = parse_locator("d.md#>guide>notes@2/details")
    assert found.slug == "details"
    assert found.parents == ("guide", "notes")
    assert found.steps == (
        Step("guide", None, child=True),
        Step("notes", 2, child=True),
        Step("details", None, child=False),
    )
    assert parse_locator("d.md#@1").steps == (Step("", 1, child=False),)


@pytest.mark.parametrize("old", ["d.md#notes", "d.md#guide/notes", "d.md#a/b/c", "d.md#notes-1"])
def test_the_old_forms_keep_their_meaning(old: str) -> None:
    found = parse_locator(old)
    assert found.steps == ()
    assert "/".join(found.slugs) == old.partition("#")[2]


@pytest.mark.parametrize(
    "bad",
    ["d.md#>", "d.md#a>", "d.md#a>>b", "d.md#a/>b", "d.md#notes@", "d.md#notes@0",
     "d.md#notes@02", "d.md#notes@1@2", "d.md#notes@x", "d.md#a@1234567890", "d.md#>/a"],
)  # fmt: skip
def test_malformed_structural_forms_are_invalid(bad: str) -> None:
    with pytest.raises(SourceError) as caught:
        parse_locator(bad)
    assert caught.value.code == "invalid_locator"


def test_github_anchors_are_github_sluggers_over_a_document() -> None:
    fixtures = json.loads(
        (Path(__file__).parent / "data" / "github-slugger-fixtures.json").read_text("utf-8")
    )
    produced = github_anchors(github_slug(entry["input"]) for entry in fixtures)
    assert produced == [entry["expected"] for entry in fixtures]
    assert github_anchors(["notes-1", "notes", "notes"]) == ["notes-1", "notes", "notes-2"]


# --- the proposal, against the matcher and against every alternative ---------

_TEXTS = st.sampled_from(["Notes", "Notes", "Notes 1", "Summary", "Details", "!!!", "Guide"])


@st.composite
def documents(draw: st.DrawFn) -> str:
    rows = draw(st.lists(st.tuples(st.integers(1, 6), _TEXTS), min_size=1, max_size=16))
    return "".join(f"{'#' * level} {text}\n\nbody {n}\n\n" for n, (level, text) in enumerate(rows))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path_factory.mktemp("store")), bare=True)


def _committed(store: pygit2.Repository, text: str) -> Snapshot:
    docs = store.TreeBuilder()
    docs.insert("doc.md", store.create_blob(text.encode()), pygit2.enums.FileMode.BLOB)
    root = store.TreeBuilder()
    root.insert("docs", docs.write(), pygit2.enums.FileMode.TREE)
    who = pygit2.Signature("t", "t@example.org", 0, 0)
    commit = store.create_commit(None, who, who, "doc", root.write(), [])
    return Snapshot.at(store, str(commit))


@settings(max_examples=300)
@given(documents())
def test_every_heading_has_a_selector_that_builds_its_lines(store, text: str) -> None:
    snapshot = _committed(store, text)
    found = outline(snapshot, "docs/doc.md")
    source = snapshot.source("docs/doc.md")
    for entry in found.entries:
        excerpt = excerpt_of(snapshot, parse_locator(entry.locator), source)
        assert (excerpt.first_line, excerpt.last_line) == (entry.first_line, entry.last_line)
        assert excerpt.heading is not None
        assert excerpt.heading.slug == entry.slug


def _tree(levels_and_slugs: list[tuple[int, str]]) -> Tree:
    headings = [Heading(n + 1, n + 1, lv, s, s) for n, (lv, s) in enumerate(levels_and_slugs)]
    return Tree(headings, len(headings))


def _independent_selectors(tree: Tree, index: int) -> list[tuple[Step, ...]]:
    # Every selector without an ordinal over the heading's own enclosing
    # slugs, each mark where the structure allows it.
    chain = [tree.headings[a].slug for a in tree.ancestors(index)]
    own = tree.headings[index].slug
    found = []
    for size in range(len(chain) + 1):
        for picked in itertools.combinations(range(len(chain)), size):
            slugs = [chain[j] for j in reversed(picked)] + [own]
            for marks in itertools.product((False, True), repeat=len(slugs)):
                found.append(tuple(Step(s, None, m) for s, m in zip(slugs, marks, strict=True)))
    return [steps for steps in found if all(step.slug for step in steps)]


_SLUGS = st.sampled_from(["a", "b", "notes", "notes-1", ""])


@settings(max_examples=400)
@given(st.lists(st.tuples(st.integers(1, 4), _SLUGS), min_size=1, max_size=12))
def test_an_ordinal_only_where_no_selector_without_one_names_the_heading(rows) -> None:
    tree = _tree(rows)
    for index in range(len(rows)):
        steps = propose(tree, index)
        assert match_steps(tree, steps).named == index
        if any(step.ordinal is not None for step in steps):
            alternatives = _independent_selectors(tree, index)
            assert all(match_steps(tree, alt).named != index for alt in alternatives)


# --- outline and build on a real repository ----------------------------------


def _build(cli, repo: Repo, reads: list[str]) -> tuple[int, dict]:
    repo.write(PACKET, packet_yaml("P-1", reads))
    repo.commit()
    result = cli(["build", PACKET, "--json"], cwd=repo.path)
    return result.code, json.loads(result.out)


def test_outline_names_twins_title_and_direct_children(cli, repo: Repo) -> None:
    repo.write("docs/guide.md", TWINS)
    repo.commit()
    result = cli(["outline", "docs/guide.md", "--json"], cwd=repo.path)
    assert result.code == 0, result.err
    assert [h["locator"] for h in json.loads(result.out)["headings"]] == [
        "docs/guide.md#guide@1",
        "docs/guide.md#guide>notes@1",
        "docs/guide.md#notes@2",
        "docs/guide.md#details",
        "docs/guide.md#appendix",
        "docs/guide.md#appendix/notes",
        "docs/guide.md#guide@2",
    ]


def test_each_proposed_selector_builds(cli, repo: Repo) -> None:
    repo.write("docs/guide.md", TWINS)
    repo.commit()
    headings = json.loads(cli(["outline", "docs/guide.md", "--json"], cwd=repo.path).out)[
        "headings"
    ]
    code, capsule = _build(cli, repo, [h["locator"] for h in headings[:6]])
    assert code == 0, capsule
    assert [r["lines"] for r in capsule["reads"]] == [h["lines"] for h in headings[:6]]


def test_a_github_numbered_anchor_is_refused_with_its_replacement(cli, repo: Repo) -> None:
    repo.write("docs/guide.md", TWINS)
    repo.commit()
    code, failed = _build(cli, repo, ["docs/guide.md#notes-1"])
    assert code == 3
    error = failed["error"]
    assert error["code"] == "heading_ambiguous"
    assert error["replacement"] == "docs/guide.md#notes@2"
    assert (
        "GitHub's anchor #notes-1 is the heading at line 7: write docs/guide.md#notes@2"
        in error["message"]
    )


def test_an_anchor_numbered_past_a_literal_one_is_missing_with_its_replacement(
    cli, repo: Repo
) -> None:
    # GitHub: `Notes 1` takes notes-1, so the second Notes is notes-2.
    repo.write("docs/odd.md", "# Notes 1\n\n# Notes\n\n# Notes\n")
    repo.commit()
    code, failed = _build(cli, repo, ["docs/odd.md#notes-2"])
    assert code == 3
    error = failed["error"]
    assert error["code"] == "heading_missing"
    assert error["replacement"] == "docs/odd.md#notes@2"
    assert "GitHub's anchor #notes-2 is the heading at line 5" in error["message"]
    assert "nearest" not in error


def test_outline_resolves_a_github_anchor(cli, repo: Repo) -> None:
    repo.write("docs/guide.md", TWINS)
    repo.commit()
    result = cli(["outline", "--resolve", "docs/guide.md#notes-2"], cwd=repo.path)
    assert result.code == 0, result.err
    assert result.out == "docs/guide.md#appendix/notes\n"
    assert "GitHub's anchor docs/guide.md#notes-2 is ### Notes, lines 15-18" in result.err
    answer = json.loads(
        cli(["outline", "--resolve", "docs/guide.md#guide-1", "--json"], cwd=repo.path).out
    )
    assert (answer["read_as"], answer["locator"], answer["lines"]) == (
        "github_anchor",
        "docs/guide.md#guide@2",
        [19, 19],
    )


def test_outline_resolves_a_selector_as_a_build_reads_it(cli, repo: Repo) -> None:
    repo.write("docs/guide.md", TWINS)
    repo.commit()
    result = cli(["outline", "--resolve", "docs/guide.md#guide/details", "--json"], cwd=repo.path)
    assert result.code == 0, result.err
    answer = json.loads(result.out)
    assert (answer["read_as"], answer["locator"]) == ("selector", "docs/guide.md#details")
    missing = cli(["outline", "--resolve", "docs/guide.md#nothing", "--json"], cwd=repo.path)
    assert missing.code == 3
    assert json.loads(missing.out)["error"]["code"] == "heading_missing"


@pytest.mark.parametrize(
    "argv", [["outline"], ["outline", "docs/guide.md", "--resolve", "docs/guide.md#notes"]]
)
def test_outline_takes_a_path_or_resolve(cli, repo: Repo, argv: list[str]) -> None:
    repo.write("docs/guide.md", TWINS)
    repo.commit()
    result = cli(argv, cwd=repo.path)
    assert result.code == 2
    assert "give PATH, or --resolve PATH#ANCHOR" in result.err


def test_a_line_range_is_no_heading_to_resolve(cli, repo: Repo) -> None:
    repo.write("docs/guide.md", TWINS)
    repo.commit()
    result = cli(["outline", "--resolve", "docs/guide.md#L3"], cwd=repo.path)
    assert result.code == 3
    assert "invalid_locator" in result.err


def test_an_empty_slug_heading_is_named_by_its_ordinal(cli, repo: Repo) -> None:
    repo.write("docs/marks.md", "# !!!\n\none\n\n# ???\n\ntwo\n")
    repo.commit()
    found = json.loads(cli(["outline", "docs/marks.md", "--json"], cwd=repo.path).out)
    assert [h["locator"] for h in found["headings"]] == ["docs/marks.md#@1", "docs/marks.md#@2"]
    code, capsule = _build(cli, repo, ["docs/marks.md#@2"])
    assert code == 0, capsule
    assert capsule["reads"][0]["text"] == "# ???\n\ntwo\n"


def test_a_direct_child_is_not_a_grandchild(cli, repo: Repo) -> None:
    repo.write("docs/guide.md", TWINS)
    repo.commit()
    code, failed = _build(cli, repo, ["docs/guide.md#guide>details"])
    assert code == 3
    assert failed["error"]["code"] == "heading_missing"


def test_readme_example_outline_has_no_unnamed_heading() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert "no unique selector" not in readme
