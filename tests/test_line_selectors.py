"""``path#L10-L40`` and ``path#L10``: GitHub's line anchors select those lines
of any text file, fail closed with codes of their own, and verify as the
position-dependent selection they are (issue 21, item 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from governance.core import canonical
from governance.core.budget import fixpoint
from governance.core.hashing import sha256_hex
from governance.core.locator import parse_locator
from governance.errors import LINE_RANGE_INVALID, SourceError
from support.gitrepo import POLICY, Repo, packet_yaml

PACKET = "packets/P-1/packet.yml"
CODE = "def one():\n    return 1\n\n\ndef two():\n    return 2\n"


def with_reads(repo: Repo, reads: list[str], files: dict[str, str | bytes] | None = None) -> None:
    for path, content in (files or {"src/app.py": CODE}).items():
        repo.write(path, content)
    repo.write(PACKET, packet_yaml("P-1", reads))
    repo.commit()


def build(cli, repo: Repo) -> dict[str, Any]:
    result = cli(["build", PACKET], cwd=repo.path)
    assert result.code == 0, result.err
    return json.loads(result.out)


def failure(cli, repo: Repo) -> tuple[int, dict[str, Any]]:
    result = cli(["build", PACKET, "--json"], cwd=repo.path)
    assert "Traceback" not in result.err
    return result.code, json.loads(result.out)["error"]


def test_a_range_selects_exactly_those_lines(cli, repo: Repo) -> None:
    with_reads(repo, ["src/app.py#L5-L6"])
    read = build(cli, repo)["reads"][0]
    assert read["text"] == "def two():\n    return 2\n"
    assert read["lines"] == [5, 6]
    assert read["heading"] is None
    assert read["path"] == "src/app.py"
    assert read["source_sha256"] == sha256_hex(CODE.encode())
    assert read["selected_sha256"] == sha256_hex(read["text"].encode())


def test_one_line_is_l_and_its_number(cli, repo: Repo) -> None:
    with_reads(repo, ["src/app.py#L2"])
    read = build(cli, repo)["reads"][0]
    assert (read["text"], read["lines"]) == ("    return 1\n", [2, 2])


def test_a_range_of_one_line_is_the_same_line(cli, repo: Repo) -> None:
    with_reads(repo, ["src/app.py#L2-L2"])
    assert build(cli, repo)["reads"][0]["lines"] == [2, 2]


def test_the_last_line_without_a_line_end_and_crlf_keep_their_bytes(cli, repo: Repo) -> None:
    with_reads(repo, ["notes.txt#L2-L3"], {"notes.txt": "a\r\nb\r\nc"})
    assert build(cli, repo)["reads"][0]["text"] == "b\r\nc"


def test_markdown_lines_are_lines_not_a_heading(cli, repo: Repo) -> None:
    # docs/roadmap.md has a heading "Roadmap" on line 1; #L1 is the line.
    with_reads(repo, ["docs/roadmap.md#L1-L2"], {})
    read = build(cli, repo)["reads"][0]
    assert (read["text"], read["heading"]) == ("# Roadmap\n\n", None)


def test_a_heading_slugged_l10_is_still_its_heading(cli, repo: Repo) -> None:
    # Slugs are lowercase: #l10 is the heading "L10", #L1 the first line.
    files: dict[str, str | bytes] = {"docs/l.md": "# Top\n\n## L10\n\nBody.\n"}
    with_reads(repo, ["docs/l.md#l10", "docs/l.md#L1"], files)
    first, second = build(cli, repo)["reads"]
    assert (first["heading"]["slug"], first["lines"]) == ("l10", [3, 5])
    assert (second["heading"], second["text"]) == (None, "# Top\n")


@pytest.mark.parametrize(
    ("fragment", "why"),
    [
        ("L0", "numbered from 1"),
        ("L0-L3", "numbered from 1"),
        ("L2-L0", "numbered from 1"),
        ("L05", "leading zero"),
        ("L1-L03", "leading zero"),
        ("L4-L2", "reversed"),
        ("L1234567890", "at most 9 digits"),
        ("L1-L" + "9" * 5000, "at most 9 digits"),
        ("L2-4", "L10-L40"),
        ("L2-", "L10-L40"),
        ("L2C3", "columns"),
        ("L2C3-L4C1", "columns"),
        ("L2-L4-L6", "L10-L40"),
        ("L2L4", "L10-L40"),
    ],
)
def test_a_malformed_range_is_line_range_invalid(cli, repo: Repo, fragment: str, why: str) -> None:
    with_reads(repo, [f"src/app.py#{fragment}"])
    code, error = failure(cli, repo)
    assert (code, error["code"]) == (3, "line_range_invalid")
    assert why in error["message"]
    assert error["locator"] == f"src/app.py#{fragment}"
    assert len(error["message"]) < 400  # a 5,000-digit number is never echoed whole


@pytest.mark.parametrize("fragment", ["L7", "L6-L7", "L100-L200", "L999999999"])
def test_a_range_past_the_end_is_line_range_outside(cli, repo: Repo, fragment: str) -> None:
    with_reads(repo, [f"src/app.py#{fragment}"])
    code, error = failure(cli, repo)
    assert (code, error["code"]) == (3, "line_range_outside")
    assert error["line_count"] == 6
    assert "has 6 lines" in error["message"]


def test_an_empty_file_has_no_line_one(cli, repo: Repo) -> None:
    with_reads(repo, ["empty.txt#L1"], {"empty.txt": ""})
    code, error = failure(cli, repo)
    assert (code, error["code"], error["line_count"]) == (3, "line_range_outside", 0)


def test_a_file_with_nul_bytes_is_source_binary(cli, repo: Repo) -> None:
    with_reads(repo, ["data.bin#L1"], {"data.bin": b"ab\x00cd\nline 2\n"})
    code, error = failure(cli, repo)
    assert (code, error["code"]) == (3, "source_binary")


def test_a_file_that_is_not_utf8_is_refused(cli, repo: Repo) -> None:
    with_reads(repo, ["data.bin#L1"], {"data.bin": b"\xff\xfe line\n"})
    code, error = failure(cli, repo)
    assert (code, error["code"]) == (3, "source_not_utf8")


def test_a_range_of_a_source_over_the_partial_read_limit_is_refused(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", POLICY + "max_heading_source_bytes: 100\n")
    with_reads(repo, ["big.txt#L1"], {"big.txt": "x\n" * 51})
    code, error = failure(cli, repo)
    assert (code, error["code"], error["bytes"], error["limit"]) == (
        3, "source_too_large", 102, 100,
    )  # fmt: skip


def test_the_fragment_is_parsed_as_lines() -> None:
    selector = parse_locator("src/app.py#L10-L40")
    assert (selector.lines, selector.slug, selector.whole) == ((10, 40), None, False)
    assert parse_locator("src/app.py#L7").lines == (7, 7)
    assert parse_locator("src/app.py").whole
    with pytest.raises(SourceError) as caught:
        parse_locator("src/app.py#L40-L10")
    assert caught.value.code == LINE_RANGE_INVALID


# Verify: a range names lines, not content. The same bytes at the same lines
# hold; anything else at those lines is stale, whatever moved where.


@pytest.fixture
def recorded(cli, repo: Repo, tmp_path: Path) -> Path:
    with_reads(repo, ["src/app.py#L5-L6"])
    target = tmp_path / "capsule.json"
    assert cli(["build", PACKET, "--output", str(target)], cwd=repo.path).code == 0
    return target


def verify(cli, repo: Repo, capsule: Path) -> tuple[int, dict[str, Any]]:
    result = cli(["verify", str(capsule), "--json"], cwd=repo.path)
    report = json.loads(result.out)
    return result.code, {part["locator"]: part for part in report["parts"]}


def test_verify_unchanged(cli, repo: Repo, recorded: Path) -> None:
    code, parts = verify(cli, repo, recorded)
    assert (code, parts["src/app.py#L5-L6"]["code"]) == (0, "verified_unchanged")


def test_verify_a_change_below_the_range_is_intact(cli, repo: Repo, recorded: Path) -> None:
    repo.write("src/app.py", CODE + "\n\ndef three():\n    return 3\n")
    repo.commit()
    code, parts = verify(cli, repo, recorded)
    part = parts["src/app.py#L5-L6"]
    assert (code, part["status"], part["code"]) == (0, "intact", "source_changed_passage_intact")
    assert part["current"]["lines"] == [5, 6]


def test_verify_a_line_added_above_is_stale(cli, repo: Repo, recorded: Path) -> None:
    # The recorded bytes are still in the file, one line down: the range no
    # longer names them, so the evidence does not hold.
    repo.write("src/app.py", "import os\n" + CODE)
    repo.commit()
    code, parts = verify(cli, repo, recorded)
    part = parts["src/app.py#L5-L6"]
    assert (code, part["status"], part["code"]) == (1, "stale", "passage_stale")
    assert "src/app.py#L6-L7" in part["message"]


def test_verify_a_shortened_file_is_missing(cli, repo: Repo, recorded: Path) -> None:
    repo.write("src/app.py", "def one():\n    return 1\n")
    repo.commit()
    code, parts = verify(cli, repo, recorded)
    part = parts["src/app.py#L5-L6"]
    assert (code, part["status"], part["code"]) == (1, "missing", "line_range_outside")


def test_a_record_of_ranges_replays_byte_for_byte(cli, repo: Repo) -> None:
    with_reads(repo, ["src/app.py#L1-L2", "src/app.py#L5"])
    assert cli(["build", PACKET, "--record"], cwd=repo.path).code == 0
    repo.commit("record")
    result = cli(["audit", "--json"], cwd=repo.path)
    assert result.code == 0, result.out
    assert json.loads(result.out)["counts"]["identical"] == 1


def test_a_reader_refuses_lines_that_disagree_with_the_range(
    cli, repo: Repo, recorded: Path
) -> None:
    # Lines and text edited together, every hash of the read recomputed: the
    # locator alone says which lines a range holds.
    document = json.loads(recorded.read_bytes())
    read = document["reads"][0]
    read["lines"] = [4, 5]
    data = fixpoint(document, canonical.dumps)
    recorded.write_bytes(data)
    result = cli(["verify", str(recorded), "--json"], cwd=repo.path)
    error = json.loads(result.out)["error"]
    assert (result.code, error["code"], error["field"]) == (2, "capsule_corrupt", "reads[0].lines")


def test_over_budget_a_range_offers_no_sections(cli, repo: Repo) -> None:
    # A range of a Markdown file is lines, not the file's sections: the only
    # way to narrow it is to name fewer lines.
    big = "# Big\n\n## Part\n\n" + "words words words\n" * 400
    repo.write(PACKET, packet_yaml("P-1", ["docs/big.md#L1-L300"], budget="{target_tokens: 1500}"))
    repo.write("docs/big.md", big)
    repo.commit()
    code, error = failure(cli, repo)
    assert (code, error["code"]) == (4, "over_budget")
    (narrow,) = error["narrow"]
    assert (narrow["part"], narrow["sections"]) == ("docs/big.md#L1-L300", [])


def test_render_says_a_range_is_lines(cli, repo: Repo, recorded: Path) -> None:
    result = cli(["render", str(recorded)], cwd=repo.path)
    assert result.code == 0, result.err
    assert "- selection: lines 5-6 (a line range)\n" in result.out
    assert "the whole file" not in result.out.split("src/app.py#L5-L6")[1]


@given(first=st.integers(1, 10**9 - 1), extra=st.integers(0, 10**9))
def test_property_every_forward_range_parses_to_its_numbers(first: int, extra: int) -> None:
    last = min(first + extra, 10**9 - 1)
    assert parse_locator(f"a.py#L{first}-L{last}").lines == (first, last)
    assert parse_locator(f"a.py#L{first}").lines == (first, first)


@given(rest=st.text(alphabet="0123456789LC-", max_size=30))
def test_property_a_fragment_l_digit_is_a_range_or_line_range_invalid(rest: str) -> None:
    locator = f"a.py#L1{rest}"
    try:
        selector = parse_locator(locator)
    except SourceError as exc:
        refused: str | None = exc.code
    else:
        refused = None
        assert selector.lines is not None
        assert f"L{selector.lines[0]}" in locator
        assert 1 <= selector.lines[0] <= selector.lines[1]
    assert refused in (None, LINE_RANGE_INVALID)
