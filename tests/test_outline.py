"""``capsule outline PATH``: every heading with its selector, lines and cost."""

from __future__ import annotations

import json
import os

from test_qualified import KEP

from support.gitrepo import POLICY, Repo, packet_yaml

PACKET = "packets/P-1/packet.yml"


def outline_json(cli, repo: Repo, *args: str, cwd=None) -> tuple[int, dict]:
    result = cli(["outline", *args, "--json"], cwd=cwd or repo.path)
    return result.code, json.loads(result.out)


def test_outline_text_is_a_tree_with_selectors_and_costs(cli, repo: Repo) -> None:
    repo.write("docs/kep.md", KEP)
    commit = repo.commit()
    result = cli(["outline", "docs/kep.md"], cwd=repo.path)
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "LINES  BYTES  TOKENS  HEADING              SELECTOR",
        "1-27     205      69  # KEP-1: Widgets     docs/kep.md#kep-1-widgets",
        "3-6       26       9    ## Summary         docs/kep.md#kep-1-widgets>summary",
        "7-12      39      13    ## Goals           docs/kep.md#goals",
        "9-12      29      10      ### Summary      docs/kep.md#goals/summary",
        "13-27    122      41    ## Design Details  docs/kep.md#design-details",
        "15-22     57      19      ### Summary      docs/kep.md#design-details/summary",
        "19-22     27       9        #### Notes     docs/kep.md#summary/notes",
        "23-27     46      16      ### Graduation   docs/kep.md#graduation",
        "25-27     30      10        #### Notes     docs/kep.md#graduation/notes",
    ]
    assert f"docs/kep.md at {commit[:12]}: 9 headings, 27 lines, 205 bytes" in result.err


def test_outline_json_lists_every_heading(cli, repo: Repo) -> None:
    repo.write("docs/kep.md", KEP)
    commit = repo.commit()
    code, found = outline_json(cli, repo, "docs/kep.md")
    assert code == 0
    data = KEP.encode()
    assert (found["path"], found["commit"], found["bytes"]) == ("docs/kep.md", commit, len(data))
    headings = found["headings"]
    assert [h["slug"] for h in headings] == [
        "kep-1-widgets", "summary", "goals", "summary", "design-details", "summary", "notes",
        "graduation", "notes",
    ]  # fmt: skip
    design = headings[5]
    assert design == {
        "level": 3,
        "text": "Summary",
        "slug": "summary",
        "locator": "docs/kep.md#design-details/summary",
        "lines": [15, 22],
        "bytes": len(b"".join(data.splitlines(keepends=True)[14:22])),
        "estimated_tokens": -(-design["bytes"] // 3),
        "depth": 2,
        "parent": 4,
    }
    assert headings[0]["parent"] is None
    assert headings[0]["locator"] == "docs/kep.md#kep-1-widgets"
    assert headings[0]["bytes"] == len(data)


def test_every_outline_selector_builds_to_its_lines(cli, repo: Repo) -> None:
    # The outline's selectors are the ones the builder accepts, for the very
    # sections it says, every heading named (the title left out: eight reads
    # at most).
    repo.write("docs/kep.md", KEP)
    repo.commit()
    _, found = outline_json(cli, repo, "docs/kep.md")
    assert all(h["locator"] is not None for h in found["headings"])
    named = found["headings"][1:]
    assert named[0]["locator"] == "docs/kep.md#kep-1-widgets>summary"
    repo.write(PACKET, packet_yaml("P-1", [h["locator"] for h in named]))
    repo.commit()
    result = cli(["build", PACKET], cwd=repo.path)
    assert result.code == 0, result.err
    reads = json.loads(result.out)["reads"]
    assert [r["lines"] for r in reads] == [h["lines"] for h in named]
    assert [len(r["text"].encode()) for r in reads] == [h["bytes"] for h in named]


def test_outline_at_an_older_commit_and_from_a_subfolder(cli, repo: Repo) -> None:
    first = repo.head()
    repo.write("docs/roadmap.md", "# Only\n")
    repo.commit()
    code, found = outline_json(cli, repo, "roadmap.md", "--at", first[:8], cwd=repo.path / "docs")
    assert code == 0
    assert found["commit"] == first
    assert [h["slug"] for h in found["headings"]] == [
        "roadmap", "phase-1", "phase-2", "details", "phase-3",
    ]  # fmt: skip


def test_outline_without_headings(cli, repo: Repo) -> None:
    repo.write("docs/plain.md", "just text\n")
    repo.commit()
    code, found = outline_json(cli, repo, "docs/plain.md")
    assert (code, found["headings"], found["lines"]) == (0, [], 1)


def _fails(cli, repo: Repo, path: str, code: str, *args: str) -> dict:
    result = cli(["outline", path, "--json", *args], cwd=repo.path)
    error = json.loads(result.out)["error"]
    assert (result.code, error["code"]) == (3, code), error
    return dict(error)


def test_outline_fails_closed_like_a_build(cli, repo: Repo) -> None:
    _fails(cli, repo, "docs/absent.md", "source_missing")
    os.symlink("roadmap.md", repo.path / "docs/link.md")
    repo.write("docs/latin1.md", "# Caf\xe9\n".encode("latin-1"))
    repo.commit()
    _fails(cli, repo, "docs/link.md", "source_symlink")
    _fails(cli, repo, "docs/latin1.md", "source_not_utf8")
    repo.write("docs/new.md", "# New\n")
    _fails(cli, repo, "docs/new.md", "source_untracked")


def test_outline_refuses_a_dirty_file_at_head_only(cli, repo: Repo) -> None:
    repo.write("docs/roadmap.md", "# Edited\n")
    _fails(cli, repo, "docs/roadmap.md", "source_dirty")
    code, found = outline_json(cli, repo, "docs/roadmap.md", "--at", repo.head())
    assert code == 0
    assert found["headings"][0]["slug"] == "roadmap"


def test_outline_path_outside_the_repository(cli, repo: Repo, tmp_path) -> None:
    result = cli(["outline", str(tmp_path), "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "path_outside_repository"


def test_hostile_heading_text_is_escaped_in_text_and_exact_in_json(cli, repo: Repo) -> None:
    repo.write("docs/evil.md", "# Title \u202e\x1b[31mred\n\nbody\n")
    repo.commit()
    result = cli(["outline", "docs/evil.md"], cwd=repo.path)
    assert result.code == 0
    assert "\x1b" not in result.out
    assert "\u202e" not in result.out
    assert "\\u202e" in result.out
    _, found = outline_json(cli, repo, "docs/evil.md")
    assert found["headings"][0]["text"] == "Title \u202e\x1b[31mred"


def test_outline_is_bounded_like_a_heading_read(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", POLICY + "max_heading_source_bytes: 64\n")
    repo.write("docs/long.md", "# Long\n\n" + "x" * 100 + "\n")
    repo.commit()
    error = _fails(cli, repo, "docs/long.md", "source_too_large")
    assert (error["bytes"], error["limit"]) == (109, 64)
    # A file within the limit is outlined as usual.
    assert outline_json(cli, repo, "docs/notes.md")[0] == 0


def test_outline_works_without_a_policy(cli, tmp_path) -> None:
    plain = Repo(tmp_path / "plain")
    plain.write("README.md", "# Hello\n\n## Usage\n")
    plain.commit()
    code, found = outline_json(cli, plain, "README.md")
    assert code == 0
    assert [h["locator"] for h in found["headings"]] == ["README.md#hello", "README.md#usage"]
