"""continuation-result/2: a citation may carry the exact text it rests on,
with the lines it is on, and ``continuation verify`` checks each quote byte for
byte against that part of the capsule (check 6). A real capsule of a real
repository; every verdict validated against its schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_continuation_verify import honest, outcomes, pair, reason

from governance.continuation import prompt
from governance.core.schema import load_schema, validate
from governance.errors import MalformedInput
from support.gitrepo import Repo

ROADMAP = "docs/roadmap.md#phase-2"  # lines 9-16 of docs/roadmap.md
PACKET = "packets/P-1/packet.yml"


def quoting(capsule: Path, slot: str, *citations: Any, **changes: Any) -> dict[str, Any]:
    return honest(
        capsule,
        slot,
        schema="continuation-result/2",
        citations=list(citations) or [PACKET, quote(ROADMAP, 11, 11, "Second phase, with é")],
        **changes,
    )


def quote(locator: str, first: int, last: int, text: str) -> dict[str, Any]:
    return {"locator": locator, "lines": [first, last], "quote": text}


def check6(cli, capsule: Path, tmp_path: Path, *citations: Any) -> tuple[int, dict]:
    a = quoting(capsule, "a", *citations)
    return pair(cli, capsule, tmp_path, a, quoting(capsule, "b"))


# --- the schema ------------------------------------------------------------------


def test_both_versions_are_read(cli, capsule: Path, tmp_path: Path) -> None:
    code, verdict = pair(cli, capsule, tmp_path, honest(capsule, "a"), quoting(capsule, "b"))
    assert code == 0, verdict["checks"]
    assert outcomes(verdict) == ["pass"] * 7
    assert verdict["results"][1]["result"]["schema"] == "continuation-result/2"


def test_a_version_2_citation_may_be_a_bare_locator(cli, capsule: Path, tmp_path: Path) -> None:
    code, verdict = check6(cli, capsule, tmp_path, PACKET, ROADMAP)
    assert code == 0, verdict["checks"]


@pytest.mark.parametrize(
    "citation",
    [
        {"locator": ROADMAP, "lines": [11, 11]},  # no quote
        {"locator": ROADMAP, "quote": "Second"},  # no lines
        {"locator": ROADMAP, "lines": [11], "quote": "Second"},
        {"locator": ROADMAP, "lines": [0, 11], "quote": "Second"},
        {"locator": ROADMAP, "lines": [11, 11], "quote": "   "},
        {"locator": ROADMAP, "lines": [11, 11], "quote": "Second", "page": 1},
    ],
)
def test_a_malformed_quote_is_a_schema_failure(citation: dict[str, Any]) -> None:
    value = {
        "schema": "continuation-result/2",
        "agent": {"id": "a"},
        "prior_context": False,
        "capsule_sha256": "0" * 64,
        "decision": "continue",
        "rationale": "r",
        "next_action": "n",
        "citations": [citation],
    }
    with pytest.raises(MalformedInput):
        validate(value, "continuation-result-2", what="result", code="result_invalid")


def test_version_1_takes_no_quote(cli, capsule: Path, tmp_path: Path) -> None:
    one = honest(capsule, "a", citations=[quote(ROADMAP, 11, 11, "Second phase")])
    code, verdict = pair(cli, capsule, tmp_path, one, honest(capsule, "b"))
    assert code == 1
    assert outcomes(verdict)[1] == "fail"


# --- check 6 ---------------------------------------------------------------------


def test_exact_quotes_pass_check_6(cli, capsule: Path, tmp_path: Path) -> None:
    code, verdict = check6(
        cli,
        capsule,
        tmp_path,
        quote(PACKET, 1, 1, "id: P-1"),
        quote(ROADMAP, 9, 11, "## Phase 2\n\nSecond phase, with é and 日本.\n"),
        quote(ROADMAP, 15, 15, "stay in phase 2"),
        quote("docs/notes.md", 3, 3, "Some notes."),
    )
    assert code == 0, verdict["checks"]
    assert "4 quotes" in reason(verdict, 6)


def test_a_quote_not_in_its_lines_fails_check_6(cli, capsule: Path, tmp_path: Path) -> None:
    code, verdict = check6(cli, capsule, tmp_path, quote(ROADMAP, 11, 11, "Third phase"))
    assert code == 1
    assert outcomes(verdict)[5] == "fail"
    assert "a quotes docs/roadmap.md#phase-2 lines 11-11" in reason(verdict, 6)
    assert "'Third phase'" in reason(verdict, 6)
    assert "not in those lines" in reason(verdict, 6)


def test_a_quote_on_other_lines_of_its_part_is_unsupported(
    cli, capsule: Path, tmp_path: Path
) -> None:
    # The text is in the part, but not on the lines the citation names.
    code, verdict = check6(cli, capsule, tmp_path, quote(ROADMAP, 15, 16, "Second phase"))
    assert code == 1
    assert "not in those lines" in reason(verdict, 6)


def test_a_quote_outside_its_parts_lines_is_unsupported(cli, capsule: Path, tmp_path: Path) -> None:
    # Line 3 of docs/roadmap.md is real, but not in the section the capsule holds.
    code, verdict = check6(cli, capsule, tmp_path, quote(ROADMAP, 3, 3, "Intro text."))
    assert code == 1
    assert "outside the part's lines 9-16" in reason(verdict, 6)


def test_lines_that_run_backwards_are_unsupported(cli, capsule: Path, tmp_path: Path) -> None:
    code, verdict = check6(cli, capsule, tmp_path, quote(ROADMAP, 12, 11, "Second"))
    assert code == 1
    assert "lines 12-11 run backwards" in reason(verdict, 6)


def test_a_quote_is_compared_byte_for_byte(cli, capsule: Path, tmp_path: Path) -> None:
    # Another normalisation form of é is other bytes: unsupported.
    decomposed = "Second phase, with e\u0301"
    code, verdict = check6(cli, capsule, tmp_path, quote(ROADMAP, 11, 11, decomposed))
    assert code == 1
    assert "not in those lines" in reason(verdict, 6)
    # A line ending the part does not have is other bytes too.
    code, verdict = check6(cli, capsule, tmp_path, quote(ROADMAP, 11, 12, "日本.\r\n"))
    assert code == 1


def test_a_quote_of_a_part_that_is_not_citable_is_reported_once(
    cli, capsule: Path, tmp_path: Path
) -> None:
    code, verdict = check6(cli, capsule, tmp_path, quote("docs/roadmap.md", 3, 3, "Intro"))
    assert code == 1
    text = reason(verdict, 6)
    assert "not a part of this capsule" in text
    assert "quotes" not in text


def test_every_unsupported_quote_is_reported(cli, capsule: Path, tmp_path: Path) -> None:
    code, verdict = check6(
        cli,
        capsule,
        tmp_path,
        quote(ROADMAP, 11, 11, "Second phase"),
        quote(ROADMAP, 11, 11, "nowhere"),
        quote(PACKET, 1, 1, "id: P-2"),
    )
    assert code == 1
    text = reason(verdict, 6)
    assert "'nowhere'" in text
    assert "'id: P-2'" in text
    assert "2 of its 3 quotes" in text


def test_a_citation_given_twice_is_checked_by_each_quote(
    cli, capsule: Path, tmp_path: Path
) -> None:
    code, verdict = check6(
        cli, capsule, tmp_path, quote(ROADMAP, 11, 11, "Second"), quote(ROADMAP, 15, 15, "Nope")
    )
    assert code == 1
    assert "'Nope'" in reason(verdict, 6)


def test_quotes_in_crlf_parts_keep_their_line_ends(cli, repo: Repo, tmp_path: Path) -> None:
    repo.write("docs/notes.md", b"# Notes\r\n\r\nOne.\r\nTwo.\r\n")
    repo.commit("crlf notes")
    target = tmp_path / "crlf.json"
    assert cli(["build", PACKET, "-o", str(target)], cwd=repo.path).code == 0
    good = quote("docs/notes.md", 3, 4, "One.\r\nTwo.")
    code, verdict = check6(cli, target, tmp_path, good)
    assert code == 0, verdict["checks"]
    code, verdict = check6(cli, target, tmp_path, quote("docs/notes.md", 3, 4, "One.\nTwo."))
    assert code == 1


# --- the prompt and the docs -----------------------------------------------------


def test_the_prompt_asks_for_quotes() -> None:
    assert prompt.TEXT.startswith("continuation-prompt/3\n")
    assert '"schema": "continuation-result/2"' in prompt.TEXT
    schema = load_schema("continuation-result-2")
    for name in schema["properties"]:
        assert f'"{name}"' in prompt.TEXT, name
    for name in schema["$defs"]["quoted"]["properties"]:
        assert f'"{name}"' in prompt.TEXT, name


def test_the_verdict_reads_either_prompt_version(cli, capsule: Path, tmp_path: Path) -> None:
    _, verdict = pair(cli, capsule, tmp_path, quoting(capsule, "a"), quoting(capsule, "b"))
    assert verdict["prompt"]["version"] == "continuation-prompt/3"
    older = json.loads(json.dumps(verdict))
    older["prompt"]["version"] = "continuation-prompt/2"
    validate(older, "continuation-verdict-1", what="verdict", code="bad_verdict")
