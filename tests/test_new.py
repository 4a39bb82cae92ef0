"""``capsule new`` and the budget fit: what suggest proposes builds, for real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.authoring.corpus import scan
from governance.authoring.fit import BudgetFit
from governance.authoring.template import Draft, quoted
from governance.core.repository import open_repository
from governance.core.snapshot import Snapshot
from governance.core.yamlload import load_yaml
from support.gitrepo import POLICY, Repo

SECTION = (
    "A preface that the section leaves out.\n" * 6
    + "\n# Zeppelin\n\n"
    + "The zeppelin section explains airships at length.\n" * 40
)


def make_repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "repo")
    r.write("policies/capsule.yml", POLICY)
    r.write("docs/air.md", SECTION)
    r.write("docs/sea.md", "# Sea\n\nBoats, not airships.\n\n## Harbour\n\nA harbour for boats.\n")
    r.write("docs/land.md", "# Land\n\nTrains and boats and roads.\n")
    r.commit("docs")
    return r


def suggestion(cli, repo: Repo, *argv: str) -> dict:
    result = cli(["suggest", *argv, "--json"], cwd=repo.path)
    assert result.code == 0, result.out + result.err
    return json.loads(result.out)


def test_a_read_that_fits_by_one_token_is_kept_and_one_less_drops_it(cli, tmp_path) -> None:
    repo = make_repo(tmp_path)
    # The packet names its budget: keep its digit count, so only the limit moves.
    roomy = suggestion(cli, repo, "zeppelin", "--budget", "9999")
    assert [read["locator"] for read in roomy["reads"]] == ["docs/air.md#zeppelin"]
    exact = roomy["capsule"]["estimated_tokens"]
    assert 1001 <= exact <= 9999
    fits = suggestion(cli, repo, "zeppelin", "--budget", str(exact))
    assert [read["locator"] for read in fits["reads"]] == ["docs/air.md#zeppelin"]
    assert fits["capsule"]["estimated_tokens"] == exact
    short = suggestion(cli, repo, "zeppelin", "--budget", str(exact - 1))
    assert short["reads"] == []
    assert short["coverage"]["unresolved"] == [{"facet": "zeppelin", "gap": "budget_exhausted"}]
    # The section and the whole file (larger by its preface) were both too large.
    assert short["omissions"]["reasons"]["budget"] == 2


def test_the_estimate_is_the_builders_size(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    snapshot = Snapshot.at(open_repository(repo.path), "HEAD", check_worktree=False)
    draft = Draft.make('boats \u00e9 "quoted"\n\\ airships', snapshot.commit_id)
    fit = BudgetFit(snapshot, draft)
    docs = scan(snapshot, None, ["boats"]).docs
    assert len(docs) >= 5
    for count in range(len(docs) + 1):
        reads = docs[:count]
        assert fit.estimate(reads) == len(fit.build(reads).data)


def test_new_writes_a_packet_that_builds_once_committed(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = cli(
        ["new", "AIR-1", "--goal", "Explain the zeppelin", "--title", "Airships"], cwd=repo.path
    )
    assert result.code == 0, result.err
    assert "wrote packets/AIR-1/packet.yml and packets/AIR-1/context.md" in result.err
    packet = load_yaml(
        (repo.path / "packets/AIR-1/packet.yml").read_text(), path="p", code="packet_malformed"
    )
    assert packet["id"] == "AIR-1"
    assert packet["title"] == "Airships"
    assert packet["objective"] == "Explain the zeppelin"
    assert packet["required_reads"] == ["docs/air.md#zeppelin"]
    assert "Explain the zeppelin" in (repo.path / "packets/AIR-1/context.md").read_text()
    repo.commit("packet")
    built = cli(["build", "packets/AIR-1/packet.yml"], cwd=repo.path)
    assert built.code == 0, built.err
    capsule = json.loads(built.out)
    assert [read["locator"] for read in capsule["reads"]] == ["docs/air.md#zeppelin"]


def test_new_with_qualified_reads_builds(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    repo.write(
        "docs/twice.md",
        "# Twice\n\n## Design\n\n### Notes\n\nwombat here.\n\n## Later\n\n### Notes\n\n"
        "numbat there.\n\n" + "padding\n" * 3000,
    )
    repo.commit("twice")
    assert cli(["new", "Q-1", "--goal", "wombat numbat"], cwd=repo.path).code == 0
    repo.commit("packet")
    built = cli(["build", "packets/Q-1/packet.yml"], cwd=repo.path)
    assert built.code == 0, built.err
    assert [r["locator"] for r in json.loads(built.out)["reads"]] == [
        "docs/twice.md#design/notes",
        "docs/twice.md#later/notes",
    ]


def test_new_with_nothing_matching_writes_no_reads_and_says_so(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = cli(["new", "NONE", "--goal", "quantum chromodynamics"], cwd=repo.path)
    assert result.code == 0, result.err
    assert "with no reads: no section of the tracked Markdown matched the goal" in result.err
    text = (repo.path / "packets/NONE/packet.yml").read_text()
    assert "required_reads: []\n" in text
    repo.commit("packet")
    assert cli(["build", "packets/NONE/packet.yml"], cwd=repo.path).code == 0


@pytest.mark.parametrize("existing", ["packet.yml", "context.md"])
def test_new_never_overwrites(cli, tmp_path: Path, existing: str) -> None:
    repo = make_repo(tmp_path)
    target = repo.write(f"packets/AIR-1/{existing}", "mine\n")
    result = cli(["new", "AIR-1", "--goal", "zeppelin", "--json"], cwd=repo.path)
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["code"] == "file_exists"
    assert error["path"] == f"packets/AIR-1/{existing}"
    assert target.read_text() == "mine\n"
    other = "context.md" if existing == "packet.yml" else "packet.yml"
    assert not (repo.path / f"packets/AIR-1/{other}").exists()


@pytest.mark.parametrize("bad", ["", "x-", "a/b", "a..b", "x" * 65, "id\n", "é"])
def test_new_refuses_an_id_the_schema_refuses(cli, tmp_path: Path, bad: str) -> None:
    repo = make_repo(tmp_path)
    result = cli(["new", bad, "--goal", "zeppelin", "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "invalid_packet_id"
    assert not (repo.path / "packets").exists()


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(blacklist_categories=["Cs"]), min_size=1))
def test_quoted_scalars_load_back_exactly(value: str) -> None:
    loaded = load_yaml(f"key: {quoted(value)}\n", path="x.yml", code="packet_malformed")
    assert loaded == {"key": value}


def test_new_json_names_both_files_and_the_suggestion(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    result = cli(["new", "AIR-2", "--goal", "zeppelin", "--json"], cwd=repo.path)
    assert result.code == 0, result.err
    out = json.loads(result.out)
    assert out["packet"] == "packets/AIR-2/packet.yml"
    assert out["context"] == "packets/AIR-2/context.md"
    reads = [read["locator"] for read in out["suggestion"]["reads"]]
    text = (repo.path / "packets/AIR-2/packet.yml").read_text()
    packet = load_yaml(text, path="p", code="packet_malformed")
    assert packet["required_reads"] == reads
    # The budget was fitted to this very packet, id and all.
    assert out["suggestion"]["capsule"]["packet"] == "packets/AIR-2/packet.yml"


def test_in_a_bare_repository_suggest_works_and_new_refuses(cli, tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    bare = tmp_path / "bare.git"
    repo.git("clone", "-q", "--bare", str(repo.path), str(bare))
    suggested = cli(["suggest", "zeppelin", "--json"], cwd=bare)
    assert suggested.code == 0, suggested.out
    assert [r["locator"] for r in json.loads(suggested.out)["reads"]] == ["docs/air.md#zeppelin"]
    refused = cli(["new", "AIR-3", "--goal", "zeppelin", "--json"], cwd=bare)
    assert refused.code == 2
    assert json.loads(refused.out)["error"]["code"] == "no_working_tree"
