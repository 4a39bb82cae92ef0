"""``capsule suggest``: deterministic evidence for a goal, on real repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from governance.authoring import select
from governance.authoring.corpus import Bounds
from governance.authoring.suggest import Options, suggest
from governance.authoring.template import Draft
from governance.commands.suggest import cap_warnings, report
from governance.core.repository import open_repository
from governance.core.snapshot import Snapshot
from governance.errors import REGISTRY, CapsuleError
from support.gitrepo import POLICY, Repo, isolated

REPLAY = """\
# Replay

Replay rebuilds a capsule record at its declared commit and compares bytes.

## What replay reads

Replay reads git objects only: no checkout, no filter, no hook.

## Exit codes

Zero when identical, one when the record differs.
"""

AUDIT = """\
# Audit

Audit walks history and replays every record once per distinct blob.

## Sharding

Audit shards across CI jobs so each record replays exactly once.
"""

BUDGET = """\
# Budget

The token budget is checked before anything is written: the estimator
divides the bytes by three.
"""


def make_repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "repo")
    r.write("policies/capsule.yml", POLICY)
    r.write("docs/replay.md", REPLAY)
    r.write("docs/audit.md", AUDIT)
    r.write("docs/budget.md", BUDGET)
    r.commit("docs")
    return r


def run(cli, repo: Repo, *argv: str) -> dict:
    result = cli(["suggest", *argv, "--json"], cwd=repo.path)
    assert result.code == 0, result.out + result.err
    return json.loads(result.out)


def invariant(result: dict) -> None:
    omissions = result["omissions"]
    assert omissions["selected"] == len(result["reads"])
    assert set(omissions["reasons"]) == set(select.REASONS)
    assert omissions["candidates"] == omissions["selected"] + sum(omissions["reasons"].values())


def test_suggest_names_the_sections_of_the_goal(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = run(cli, repo, "How does audit shards the replay of every record across CI jobs?")
    locators = [read["locator"] for read in result["reads"]]
    # The goal names the documents titled "Audit" and "Replay": their best first.
    assert locators[0] == "docs/audit.md#sharding" or locators[0] == "docs/audit.md"
    assert result["commit"] == repo.head()
    assert result["goal"].startswith("How does audit")
    first = result["reads"][0]
    assert set(first) >= {"locator", "path", "lines", "bytes", "estimated_tokens", "facets"}
    assert first["estimated_tokens"] == -(-first["bytes"] // 3)
    assert result["coverage"]["complete"] is True
    invariant(result)


def test_reads_carry_their_exact_lines_and_bytes(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = run(cli, repo, "git objects checkout filter hook", "--paths", "docs/replay.md")
    by_locator = {read["locator"]: read for read in result["reads"]}
    read = by_locator["docs/replay.md#what-replay-reads"]
    assert read["lines"] == [5, 8]
    lines = (repo.path / "docs/replay.md").read_bytes().splitlines(keepends=True)
    assert read["bytes"] == len(b"".join(lines[4:8]))


def test_same_bytes_from_any_folder_and_process(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    goal = "Compare audit and replay: which one reads git objects only?"
    first = cli(["suggest", goal, "--json"], cwd=repo.path).out
    (repo.path / "docs").mkdir(exist_ok=True)
    second = cli(["suggest", goal, "--json"], cwd=repo.path / "docs").out
    env = {**os.environ, "LC_ALL": "C", "TZ": "Pacific/Kiritimati", "PYTHONHASHSEED": "123"}
    third = subprocess.run(
        [sys.executable, "-m", "governance", "suggest", goal, "--json"],
        cwd=repo.path,
        env=env,
        capture_output=True,
        check=True,
    ).stdout
    assert first == second
    assert first.encode("utf-8") == third


def test_compare_goal_gets_both_sides(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = run(cli, repo, "compare audit and budget")
    names = [facet["facet"] for facet in result["facets"]]
    assert names[:2] == ["audit", "budget"]
    assert {facet["kind"] for facet in result["facets"][:2]} == {"side"}
    paths = {read["path"] for read in result["reads"]}
    assert {"docs/audit.md", "docs/budget.md"} <= paths


def test_nested_sections_are_never_both_proposed(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = run(cli, repo, "replay record declared commit git objects exit codes", "--paths",
                 "docs/replay.md")  # fmt: skip
    reads = result["reads"]
    for a in reads:
        for b in reads:
            if a is not b and a["path"] == b["path"]:
                assert a["lines"][1] < b["lines"][0] or b["lines"][1] < a["lines"][0]
    assert result["omissions"]["reasons"]["overlap"] >= 1
    invariant(result)


def test_identical_text_is_a_duplicate(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.write("docs/copy.md", "# Other\n\n" + AUDIT.replace("# Audit\n", "## Audit\n"))
    repo.write("docs/again.md", "# Again\n\n" + AUDIT.replace("# Audit\n", "## Audit\n"))
    repo.commit("copies")
    result = run(cli, repo, "sharding", "--paths", "docs/copy.md", "docs/again.md")
    assert result["omissions"]["reasons"]["duplicate"] >= 1
    invariant(result)


def test_read_limit_and_its_gap(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = run(cli, repo, "sharding estimator", "--max-reads", "1")
    assert len(result["reads"]) == 1
    assert result["coverage"]["complete"] is False
    gaps = {u["facet"]: u["gap"] for u in result["coverage"]["unresolved"]}
    assert list(gaps.values()) == ["read_limit"]
    assert result["omissions"]["reasons"]["read_limit"] >= 1
    invariant(result)


def test_share_cap_keeps_one_file_from_taking_every_read(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.write(
        "docs/many.md",
        "# Many\n\n"
        + "".join(
            f"## Topic {n}\n\nalpha{n} appears here, in a section with words enough to read.\n\n"
            for n in range(6)
        )
        + "padding\n" * 3000,  # too large to be a candidate whole
    )
    repo.commit("many")
    goal = " ".join(f"alpha{n}" for n in range(6))
    result = run(cli, repo, goal, "--max-reads", "4")
    assert result["limits"] == {"max_reads": 4, "per_file": 2}
    per_path = [read["path"] for read in result["reads"]]
    assert per_path.count("docs/many.md") == 2
    assert result["omissions"]["reasons"]["share_cap"] >= 1
    invariant(result)


def test_facet_not_found(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = run(cli, repo, "sharding zeppelin")
    assert result["coverage"]["unresolved"] == [{"facet": "zeppelin", "gap": "facet_not_found"}]
    assert result["coverage"]["facets"]["sharding"] == ["docs/audit.md#sharding"] or result[
        "coverage"
    ]["facets"]["sharding"] == ["docs/audit.md"]


def test_nothing_matches(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = run(cli, repo, "zeppelin")
    assert result["reads"] == []
    assert result["omissions"]["candidates"] == 0
    invariant(result)


def test_a_goal_of_stop_words_only_is_exit_2(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = cli(["suggest", "what is it about?", "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "goal_empty"
    long = cli(["suggest", "word " * 500, "--json"], cwd=repo.path)
    assert long.code == 2
    assert json.loads(long.out)["error"]["code"] == "goal_too_long"


def test_quoted_phrase_needs_its_words_in_a_row(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = run(cli, repo, '"git objects"')
    assert [read["path"] for read in result["reads"]] == ["docs/replay.md"]
    result = run(cli, repo, '"objects git"')
    assert result["reads"] == []
    assert result["coverage"]["unresolved"][0]["gap"] == "facet_not_found"


def test_repeated_slugs_are_proposed_qualified(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    pad = "padding\n" * 3000  # too large to be a candidate whole
    repo.write(
        "docs/twice.md",
        "# Twice\n\n## Design\n\n### Notes\n\nwombat here.\n\n"
        "## Later\n\n### Notes\n\nnumbat there.\n\n" + pad,
    )
    repo.commit("twice")
    result = run(cli, repo, "wombat numbat")
    assert [read["locator"] for read in result["reads"]] == [
        "docs/twice.md#design/notes",
        "docs/twice.md#later/notes",
    ]
    assert result["reads"][0]["lines"] == [5, 8]


def test_headings_only_an_ordinal_names_are_skipped_and_counted(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.write(
        "docs/twins.md",
        "# Twins\n\n## Notes\n\nwombat here.\n\n## Notes\n\nwombat again.\n" + "x\n" * 9000,
    )
    repo.commit("twins")
    result = run(cli, repo, "wombat")
    assert result["corpus"]["skipped"]["heading_positional"] == 2
    assert all("#notes" not in read["locator"] for read in result["reads"])


def test_unsafe_sources_are_skipped_and_counted(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.write("docs/latin1.md", "# Caf\xe9\n\nsharding\n".encode("latin-1"))
    os.symlink("audit.md", repo.path / "docs/link.md")
    repo.commit("odd")
    result = run(cli, repo, "sharding")
    skipped = result["corpus"]["skipped"]
    assert skipped["source_not_utf8"] == 1
    assert skipped["source_symlink"] == 1
    assert all(read["path"] not in ("docs/latin1.md", "docs/link.md") for read in result["reads"])


def test_bounds_cap_what_is_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    snapshot = Snapshot.at(open_repository(repo.path), "HEAD", check_worktree=False)
    draft = Draft.make("sharding", snapshot.commit_id)
    small = Options(bounds=Bounds(file_bytes=200))
    result = suggest(snapshot, draft, small)
    assert result["corpus"]["skipped"]["file_too_large"] >= 1
    capped = suggest(snapshot, draft, Options(bounds=Bounds(files=1)))
    assert capped["corpus"]["files"] == 1
    assert capped["corpus"]["skipped"]["file_cap"] == 2
    total = suggest(snapshot, draft, Options(bounds=Bounds(total_bytes=300)))
    assert total["corpus"]["skipped"]["byte_cap"] >= 1
    walk = suggest(snapshot, draft, Options(bounds=Bounds(tree_entries=2)))
    assert walk["corpus"]["skipped"]["tree_entry_cap"] == 1


def test_older_commit_and_paths(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    old = repo.head()
    repo.write("docs/late.md", "# Late\n\nwombat\n")
    repo.commit("late")
    assert run(cli, repo, "wombat")["reads"][0]["path"] == "docs/late.md"
    assert run(cli, repo, "wombat", "--at", old[:8])["reads"] == []
    assert run(cli, repo, "wombat", "--paths", "docs/a*.md")["reads"] == []


def test_human_output_is_yaml_and_printable(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.write("docs/evil.md", "# Wombat \x1b[31mred\u202e\n\nwombat\n")
    repo.commit("evil")
    result = cli(["suggest", "wombat"], cwd=repo.path)
    assert result.code == 0, result.err
    assert result.out.startswith("required_reads:\n  - ")
    assert "\x1b" not in result.out + result.err
    assert "\u202e" not in result.out + result.err
    assert "coverage: complete" in result.err
    assert "omissions:" in result.err


def test_each_facet_is_covered_twice_then_reads_fill(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    for name in ("one", "two", "three"):
        repo.write(f"docs/{name}.md", f"# {name.title()}\n\nThe wombat of file {name}.\n")
    repo.commit("wombats")
    result = run(cli, repo, "wombat")
    # Equal scores (same length), so by path; docs/three.md is longer, so scores
    # lower: two reads cover the facet twice, the third fills toward the target.
    assert result["coverage"]["facets"]["wombat"] == [
        "docs/one.md#one",
        "docs/two.md#two",
        "docs/three.md#three",
    ]
    assert result["omissions"]["reasons"]["redundant_coverage"] == 0
    invariant(result)


def test_a_term_in_the_sections_own_heading_weighs_more(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    body = "Other words here, and once the quokka.\n"
    repo.write("docs/a.md", f"# Notes\n\n{body}\n## Misc\n\n{body}\n" + "pad\n" * 5000)
    repo.write("docs/b.md", f"# Quokka\n\n{body}\n## More\n\n{body}\n" + "pad\n" * 5000)
    repo.commit("quokka")
    result = run(cli, repo, "quokka", "--max-reads", "1")
    assert [read["locator"] for read in result["reads"]] == ["docs/b.md#quokka"]


def test_a_facet_only_an_overlapping_section_has_is_an_overlap_gap(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.write(
        "docs/nest.md",
        "# Top\n\nalpaca once.\n\n" + "pad words here\n" * 1500 + "\n## Child\n\n" + "llama " * 40,
    )
    repo.commit("nest")
    result = run(cli, repo, "llama alpaca")
    assert [read["locator"] for read in result["reads"]] == ["docs/nest.md#child"]
    assert result["coverage"]["unresolved"] == [{"facet": "alpaca", "gap": "overlap"}]
    assert result["omissions"]["reasons"]["overlap"] == 1
    invariant(result)


def test_a_bad_pathspec_is_exit_2(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = cli(["suggest", "audit", "--paths", "/abs/*.md", "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "invalid_pathspec"


def test_without_a_committed_policy_it_fails_as_build_would(cli, tmp_path: Path) -> None:
    repo = Repo(tmp_path / "bare-policy")
    repo.write("docs/a.md", "# A\n\naudit\n")
    repo.commit("no policy")
    result = cli(["suggest", "audit", "--json"], cwd=repo.path)
    assert result.code == 3
    assert json.loads(result.out)["error"]["code"] == "source_missing"


def test_hostile_repository_text_is_escaped_on_the_terminal(cli, tmp_path: Path) -> None:
    # The goal's own control characters are dropped when it is parsed into
    # facets, so they never reach the output: the text that does is the
    # repository's. A path may hold a bidi override and a C1 CSI (only C0
    # controls and DEL make a path unsafe), and suggest prints the path: as
    # an escaped YAML scalar that loads back to exactly that path.
    repo = make_repo(tmp_path)
    hostile = "docs/\u202ewombat\x9b31m.md"
    repo.write(hostile, "# Wombat\n\nThe wombat burrows under the replay.\n")
    repo.commit("hostile name")
    result = cli(["suggest", "wombat burrows"], cwd=repo.path)
    assert result.code == 0, result.err
    for raw in ("\u202e", "\x9b"):
        assert raw not in result.out
        assert raw not in result.err
    assert yaml.safe_load(result.out) == {"required_reads": [hostile + "#wombat"]}


def test_packets_are_not_evidence_unless_a_glob_asks(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.write("packets/P-9/context.md", "# Context\n\nThe wombat packet.\n")
    repo.commit("packet")
    assert run(cli, repo, "wombat")["reads"] == []
    asked = run(cli, repo, "wombat", "--paths", "packets/*/context.md")
    assert [read["path"] for read in asked["reads"]] == ["packets/P-9/context.md"]


def test_a_single_letter_or_digit_is_no_facet(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    assert [f["facet"] for f in run(cli, repo, "an x 8 sharding")["facets"]] == ["sharding"]


def test_corroboration_worth_little_comes_after_coverage(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    strong = "# Strong\n\n" + "numbat quoll " * 30 + "\n"
    weak = "# Weak\n\nnumbat and quoll, once, among many other words.\n" + "filler text\n" * 300
    repo.write("docs/strong.md", strong)
    repo.write("docs/weak.md", weak)
    repo.commit("two")
    result = run(cli, repo, "numbat quoll")
    # Covered by the first read alone; the weak one only fills, after it.
    assert [read["path"] for read in result["reads"]] == ["docs/strong.md", "docs/weak.md"]
    assert result["coverage"]["complete"] is True
    one = run(cli, repo, "numbat quoll", "--max-reads", "1")
    assert [read["path"] for read in one["reads"]] == ["docs/strong.md"]
    invariant(result)


@pytest.mark.parametrize(
    ("goal", "code", "facets"),
    [("X vs Y", 2, None), ("skew of N-1", 0, ["skew"]), ("Is A better than B?", 0, ["better"])],
)
def test_goals_that_crashed_are_answered(cli, tmp_path: Path, goal, code, facets) -> None:
    # Issue 21: a lone capital ("X", "N-1") ended in IndexError in goal_facets.
    repo = make_repo(tmp_path)
    result = cli(["suggest", goal, "--json"], cwd=repo.path)
    assert result.code == code, result.err
    out = json.loads(result.out)
    if facets is None:
        assert out["error"]["code"] == "goal_empty"
    else:
        assert [facet["facet"] for facet in out["facets"]] == facets


@pytest.fixture(scope="module")
def snapshot_for_goals(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in isolated(home).items():
            patch.setenv(name, value)
        repo = make_repo(tmp_path_factory.mktemp("goals"))
    return Snapshot.at(open_repository(repo.path), "HEAD", check_worktree=False)


# The autouse HOME isolation is function-scoped, and harmless to share between examples.
@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(goal=st.text(max_size=120) | st.from_regex(r"[A-Za-z][A-Za-z0-9 \-.,\"`'vs]{0,40}"))
def test_every_goal_gets_an_answer_or_a_coded_refusal(
    snapshot_for_goals: Snapshot, goal: str
) -> None:
    refusal: CapsuleError | None = None
    try:
        draft = Draft.make(goal, snapshot_for_goals.commit_id)
        result = suggest(snapshot_for_goals, draft, Options())
    except CapsuleError as exc:
        refusal = exc
    if refusal is not None:
        assert refusal.code in REGISTRY
        return
    invariant(result)
    lines, notes = report(result)
    assert lines[0].startswith("required_reads:")
    assert notes


def test_files_past_a_corpus_bound_are_named_in_a_warning(cli, tmp_path: Path) -> None:
    # Regression (issue 21): files left out at a corpus bound were counted in
    # --json only; stderr now says how many and which bound, --json or not.
    repo = make_repo(tmp_path)
    repo.write("policies/capsule.yml", POLICY + "max_heading_count: 3\n")
    for name in ("many", "more"):
        repo.write(f"docs/{name}.md", "".join(f"# H{k}\n\nwombat\n\n" for k in range(5)))
    repo.commit("many headings")
    for extra in ([], ["--json"]):
        result = cli(["suggest", "wombat", *extra], cwd=repo.path)
        assert result.code == 0, result.err
        assert (
            "capsule: warning: 2 Markdown files were not read, each over 3 headings "
            "(too_many_headings); narrow the corpus with --paths"
        ) in result.err.splitlines()
    corpus = json.loads(result.out)["corpus"]
    assert corpus["skipped"]["too_many_headings"] == 2
    assert corpus["bounds"] == {
        "tree_entries": 200_000,
        "files": 10_000,
        "file_bytes": 4 << 20,
        "total_bytes": 64 << 20,
        "file_headings": 3,
    }


@pytest.mark.parametrize(
    ("bounds", "line"),
    [
        (Bounds(files=1), "2 Markdown files were not read, past the first 1 files (file_cap)"),
        # One file left out is one file (issue 23 asked for the plurals).
        (Bounds(total_bytes=300), "1 Markdown file was not read, past 300 bytes in all (byte_cap)"),
        (Bounds(file_bytes=100), "Markdown files were not read, each over 100 bytes"),
        (Bounds(tree_entries=2), "the walk of the tree stopped after 2 tree entries"),
    ],
)
def test_each_corpus_bound_has_its_warning(tmp_path: Path, bounds: Bounds, line: str) -> None:
    repo = make_repo(tmp_path)
    snapshot = Snapshot.at(open_repository(repo.path), "HEAD", check_worktree=False)
    draft = Draft.make("replay audit", snapshot.commit_id)
    warnings = cap_warnings(suggest(snapshot, draft, Options(bounds=bounds)))
    assert len(warnings) == 1
    assert line in warnings[0], warnings


def test_a_stub_section_ranks_below_a_substantive_one(cli, tmp_path: Path) -> None:
    # Issue 21: a heading with a line or two (a template's "TBD", its
    # instructions in an HTML comment) ranked first: BM25 favours the short,
    # and the stub's heading names the goal.
    repo = make_repo(tmp_path)
    repo.write(
        "docs/stub.md",
        "# Plan\n\n## Wombat rollout\n\nTBD\n\n<!-- Say how the wombat rollout goes. -->\n",
    )
    repo.write(
        "docs/stages.md",
        "# Stages\n\nThe wombat rollout goes in three stages.\n\n"
        + "Each stage is watched for a week before the next one starts. " * 8
        + "\n",
    )
    repo.commit("plan")
    result = run(cli, repo, "wombat rollout", "--max-reads", "1")
    assert [read["locator"] for read in result["reads"]] == ["docs/stages.md#stages"]
    assert select.is_stub(b"## Wombat rollout\n\nTBD\n\n<!-- wombat " + b"x" * 500 + b" -->\n")
    assert not select.is_stub(b"## Summary\n\nOne sentence of forty bytes or more says it.\n")


def test_a_document_named_by_its_title_leads_only_with_words(cli, tmp_path: Path) -> None:
    # Regression (issue 21, kubernetes/enhancements): an empty file's name,
    # "some-file.md", is the title "some file"; any goal holding "files"
    # names it, and the title rule put the empty file first.
    repo = make_repo(tmp_path)
    repo.write("docs/some-file.md", "")
    repo.write(
        "docs/env.md",
        "# Loading\n\nEnv files are read once, at start, in the order the pod lists them.\n",
    )
    repo.commit("env")
    result = run(cli, repo, "Support for env files", "--max-reads", "1")
    assert [read["locator"] for read in result["reads"]] == ["docs/env.md#loading"]
