"""``capsule continuation verify`` and ``prompt``: result files checked against a
real capsule, one named test per way a pair of results can fail."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from governance.continuation import prompt
from governance.core import canonical
from governance.core.hashing import sha256_hex
from governance.core.schema import load_schema, validate
from governance.errors import MalformedInput

PACKET = "packets/P-1/packet.yml"


def honest(capsule: Path, slot: str, **changes: Any) -> dict[str, Any]:
    result: dict[str, Any] = {
        "schema": "continuation-result/1",
        "agent": {"id": f"agent-{slot}"},
        "prior_context": False,
        "capsule_sha256": sha256_hex(capsule.read_bytes()),
        "decision": "continue",
        "rationale": "Phase 2 is described in full.",
        "next_action": "Start phase 2.",
        "citations": ["packets/P-1/packet.yml", "docs/roadmap.md#phase-2"],
    }
    result.update(changes)
    return {key: value for key, value in result.items() if value is not None}


def write(tmp_path: Path, name: str, value: Any) -> str:
    path = tmp_path / name
    path.write_bytes(value if isinstance(value, bytes) else json.dumps(value).encode())
    return str(path)


def verify(cli, capsule: Path, *results: str) -> tuple[int, dict]:
    result = cli(["continuation", "verify", str(capsule), *results, "--json"])
    document = json.loads(result.out)
    if "error" not in document:
        validate(document, "continuation-verdict-1", what="verdict", code="bad_verdict")
    return result.code, document


def pair(cli, capsule: Path, tmp_path: Path, a: Any, b: Any) -> tuple[int, dict]:
    return verify(cli, capsule, write(tmp_path, "a.json", a), write(tmp_path, "b.json", b))


def outcomes(verdict: dict) -> list[str]:
    return [check["outcome"] for check in verdict["checks"]]


def reason(verdict: dict, number: int) -> str:
    return verdict["checks"][number - 1]["reason"]


def test_agreeing_results(cli, capsule: Path, tmp_path: Path) -> None:
    code, verdict = pair(cli, capsule, tmp_path, honest(capsule, "a"), honest(capsule, "b"))
    assert code == 0
    assert (verdict["agreement"], verdict["decision"]) == (True, "continue")
    assert outcomes(verdict) == ["pass"] * 7
    assert [c["name"] for c in verdict["checks"]] == [
        "two_results", "schema_valid", "distinct_identities", "no_prior_context",
        "capsule_bound", "citations_in_capsule", "decisions_agree",
    ]  # fmt: skip
    assert [r["source"] for r in verdict["results"]] == [
        str(tmp_path / "a.json"),
        str(tmp_path / "b.json"),
    ]
    assert verdict["results"][0]["sha256"] == sha256_hex((tmp_path / "a.json").read_bytes())
    assert verdict["claims"]["fresh_workspace"] == "agent_reported"
    assert verdict["execution"] == {"status": "unattested"}


def test_agreeing_on_blocked(cli, capsule: Path, tmp_path: Path) -> None:
    blocked = {"decision": "blocked", "next_action": None, "blockers": ["No owner for phase 2."]}
    code, verdict = pair(
        cli, capsule, tmp_path, honest(capsule, "a", **blocked), honest(capsule, "b", **blocked)
    )
    assert code == 0
    assert verdict["decision"] == "blocked"


def test_verdict_is_deterministic(cli, capsule: Path, tmp_path: Path) -> None:
    a = write(tmp_path, "a.json", honest(capsule, "a"))
    b = write(
        tmp_path,
        "b.json",
        honest(capsule, "b", decision="blocked", next_action=None, blockers=["x"]),
    )
    first = cli(["continuation", "verify", str(capsule), a, b, "--json"])
    second = cli(["continuation", "verify", str(capsule), a, b, "--json"])
    assert first.out == second.out
    assert first.out.encode() == canonical.dumps(json.loads(first.out))


# (1) exactly two results; a file that is not one JSON object is malformed input


def test_three_results(cli, capsule: Path, tmp_path: Path) -> None:
    files = [write(tmp_path, f"{s}.json", honest(capsule, s)) for s in "abc"]
    code, verdict = verify(cli, capsule, *files)
    assert code == 1
    assert reason(verdict, 1) == "3 results given; exactly two are required"
    assert [r["slot"] for r in verdict["results"]] == ["a", "b", "c"]
    assert outcomes(verdict)[1:] == ["skipped"] * 6


def test_one_result(cli, capsule: Path, tmp_path: Path) -> None:
    code, verdict = verify(cli, capsule, write(tmp_path, "a.json", honest(capsule, "a")))
    assert code == 1
    assert outcomes(verdict)[0] == "fail"
    assert reason(verdict, 3) == "needs two valid results (valid: a)"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "the output is empty"),
        (b"continue\n", "not valid JSON"),
        (b"[1, 2]", "an array in JSON, not an object"),
        (b'{"a": 1} {"b": 2}', "not valid JSON: Extra data"),
        (b'{"decision": "continue", "decision": "blocked"}', "duplicate key 'decision'"),
        (b'{"rationale": NaN}', "NaN is not JSON"),
        (b'{"rationale": "caf\xe9"}', "not valid UTF-8"),
        (b'{"rationale": "\\ud800"}', "lone surrogate"),
        (b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    ],
    ids=[
        "empty", "prose", "array", "two-objects", "duplicate-key", "nan", "latin-1",
        "lone-surrogate", "deep-nesting",
    ],
)  # fmt: skip
def test_result_that_is_not_one_json_object(
    cli, capsule: Path, tmp_path: Path, content: bytes, why: str
) -> None:
    # The exit 2: malformed input, no verdict.
    code, document = pair(cli, capsule, tmp_path, honest(capsule, "a"), content)
    assert code == 2
    assert document["error"]["code"] == "result_malformed"
    assert document["error"]["message"].startswith(f"{tmp_path / 'b.json'}: not one JSON object: ")
    assert why in document["error"]["message"]


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_result_with_a_lone_surrogate_is_malformed_not_a_crash(
    cli, capsule: Path, tmp_path: Path, as_json: bool
) -> None:
    # json.loads accepts "\ud800"; no UTF-8 output can carry it.
    b = json.dumps(honest(capsule, "b", rationale="half a pair: \ud800")).encode()
    a = write(tmp_path, "a.json", honest(capsule, "a"))
    argv = ["continuation", "verify", str(capsule), a, write(tmp_path, "b.json", b)]
    result = cli(argv + (["--json"] if as_json else []))
    assert result.code == 2
    assert "result_malformed" in (result.out if as_json else result.err)


def test_oversized_result_file_is_refused_unread(cli, capsule: Path, tmp_path: Path) -> None:
    huge = honest(capsule, "b", rationale="x" * (1 << 20))
    code, document = pair(cli, capsule, tmp_path, honest(capsule, "a"), huge)
    assert code == 2
    assert document["error"]["code"] == "result_too_large"
    assert "over 1 MiB" in document["error"]["message"]


def test_endless_result_file_is_refused(cli, capsule: Path, tmp_path: Path) -> None:
    a = write(tmp_path, "a.json", honest(capsule, "a"))
    code, document = verify(cli, capsule, a, "/dev/zero")
    assert code == 2
    assert document["error"]["code"] == "result_too_large"


# (2) each is valid against the closed schema


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"confidence": "high"}, "Additional properties"),
        ({"confidence": 0.9}, "Additional properties"),
        ({"decision": "maybe"}, "$.decision"),
        ({"next_action": None}, "'next_action' is a required property"),
        ({"decision": "blocked", "next_action": None}, "'blockers' is a required property"),
        ({"decision": "blocked", "next_action": None, "blockers": []}, "$.blockers"),
        ({"rationale": "   "}, "$.rationale"),
        ({"citations": []}, "$.citations"),
        ({"capsule_sha256": "ABC"}, "$.capsule_sha256"),
        ({"agent": {"id": "x", "model": "y"}}, "$.agent"),
        ({"schema": "continuation-result/3"}, "$.schema"),
        ({"blockers": ["Nobody owns phase 2."]}, "$.blockers"),
        (
            {"decision": "blocked", "blockers": ["Nobody owns phase 2."]},
            "$.next_action",
        ),
    ],
    ids=[
        "extra-field", "extra-float-field", "unknown-decision", "continue-without-next-action",
        "blocked-without-blockers", "blocked-with-empty-blockers", "blank-rationale",
        "no-citations", "bad-hash", "extra-agent-field", "unknown-version",
        "continue-with-blockers", "blocked-with-next-action",
    ],
)  # fmt: skip
def test_result_invalid_against_the_schema(
    cli, capsule: Path, tmp_path: Path, changes: dict, where: str
) -> None:
    code, verdict = pair(
        cli, capsule, tmp_path, honest(capsule, "a"), honest(capsule, "b", **changes)
    )
    assert code == 1
    assert outcomes(verdict)[:2] == ["pass", "fail"]
    assert reason(verdict, 2).startswith("result b: ")
    assert where in reason(verdict, 2)


# (3) distinct identities


def test_identities_differing_only_in_case_are_the_same(cli, capsule: Path, tmp_path: Path) -> None:
    code, verdict = pair(
        cli, capsule, tmp_path,
        honest(capsule, "a", agent={"id": "Reviewer"}),
        honest(capsule, "b", agent={"id": "reviewer "}),
    )  # fmt: skip
    assert code == 1
    assert outcomes(verdict)[2] == "fail"
    assert reason(verdict, 3) == "a and b claim the same identity 'Reviewer'"


# (4)-(6), each failing alone


def test_prior_context(cli, capsule: Path, tmp_path: Path) -> None:
    code, verdict = pair(
        cli, capsule, tmp_path, honest(capsule, "a", prior_context=True), honest(capsule, "b")
    )
    assert code == 1
    assert outcomes(verdict) == ["pass", "pass", "pass", "fail", "pass", "pass", "pass"]


def test_wrong_capsule_hash(cli, capsule: Path, tmp_path: Path) -> None:
    code, verdict = pair(
        cli, capsule, tmp_path, honest(capsule, "a"), honest(capsule, "b", capsule_sha256="0" * 64)
    )
    assert code == 1
    assert outcomes(verdict)[4] == "fail"
    assert reason(verdict, 5) == (
        f"b binds capsule_sha256 {'0' * 64}, but this capsule's is "
        f"{sha256_hex(capsule.read_bytes())}"
    )


@pytest.mark.parametrize(
    "citation",
    ["docs/roadmap.md", "docs/roadmap.md#phase-1", "packets/P-1/context.md#context", "README.md"],
)
def test_citation_outside_the_capsule(cli, capsule: Path, tmp_path: Path, citation: str) -> None:
    code, verdict = pair(
        cli, capsule, tmp_path,
        honest(capsule, "a", citations=["docs/notes.md", citation]),
        honest(capsule, "b"),
    )  # fmt: skip
    assert code == 1
    assert outcomes(verdict)[5] == "fail"
    assert reason(verdict, 6) == (
        f"a cites {citation!r}, not a part of this capsule (citable: packets/P-1/packet.yml, "
        "packets/P-1/context.md, docs/roadmap.md#phase-2, docs/notes.md)"
    )


def test_packet_and_context_paths_are_citable(cli, capsule: Path, tmp_path: Path) -> None:
    citations = ["packets/P-1/packet.yml", "packets/P-1/context.md", "docs/notes.md"]
    code, verdict = pair(
        cli, capsule, tmp_path, honest(capsule, "a", citations=citations), honest(capsule, "b")
    )
    assert code == 0
    assert reason(verdict, 6) == "every citation names one of the capsule's 4 citable parts"


# Malformed input and bad usage: exit 2, no verdict


def test_missing_result_file(cli, capsule: Path, tmp_path: Path) -> None:
    a = write(tmp_path, "a.json", honest(capsule, "a"))
    code, document = verify(cli, capsule, a, str(tmp_path / "absent.json"))
    assert code == 2
    assert document["error"]["code"] == "result_unreadable"


def test_corrupt_capsule(cli, capsule: Path, tmp_path: Path) -> None:
    document = json.loads(capsule.read_bytes())
    document["reads"][0]["text"] += "A line the builder never read.\n"
    capsule.write_bytes(canonical.dumps(document))
    a, b = (write(tmp_path, f"{s}.json", honest(capsule, s)) for s in "ab")
    code, error = verify(cli, capsule, a, b)
    assert code == 2
    assert error["error"]["code"] == "capsule_corrupt"


def test_capsule_of_an_unknown_schema(cli, capsule: Path, tmp_path: Path) -> None:
    capsule.write_bytes(canonical.dumps({"schema": "capsule/9"}))
    a, b = (write(tmp_path, f"{s}.json", honest(capsule, s)) for s in "ab")
    code, error = verify(cli, capsule, a, b)
    assert code == 2
    assert error["error"]["code"] == "unsupported_schema"


def test_continuation_needs_a_subcommand(cli) -> None:
    result = cli(["continuation"])
    assert result.code == 2
    assert "usage" in result.err


# Text output


def test_text_output(cli, capsule: Path, tmp_path: Path) -> None:
    a = write(tmp_path, "a.json", honest(capsule, "a"))
    b = write(
        tmp_path,
        "b.json",
        honest(capsule, "b", decision="blocked", next_action=None, blockers=["one", "two"]),
    )
    result = cli(["continuation", "verify", str(capsule), a, b])
    assert result.code == 1
    lines = result.out.splitlines()
    assert lines[6] == (
        "(7) fail     decisions_agree: the decisions differ: a decides continue, b decides blocked"
    )
    assert lines[7:] == [
        "a  agent-a  continue  next action: Start phase 2.",
        "b  agent-b  blocked  blockers: one; two",
    ]
    assert "no agreement (exit 1)" in result.err
    assert "authority: none" in result.err


# The prompt


def test_prompt_prints_the_fixed_text(cli) -> None:
    result = cli(["continuation", "prompt"])
    assert result.code == 0
    assert result.out == prompt.TEXT
    assert result.out.startswith("continuation-prompt/3\n")


def test_prompt_json_carries_its_hash(cli) -> None:
    result = cli(["continuation", "prompt", "--json"])
    document = json.loads(result.out)
    assert document == {
        "version": prompt.VERSION,
        "sha256": sha256_hex(prompt.TEXT.encode()),
        "text": prompt.TEXT,
    }


def test_prompt_describes_every_result_field(cli) -> None:
    schema = load_schema("continuation-result-1")
    for name in schema["properties"]:
        assert f'"{name}"' in prompt.TEXT, name
    assert "untrusted" in prompt.TEXT
    for decision in schema["properties"]["decision"]["enum"]:
        assert f'"{decision}"' in prompt.TEXT


def test_verdict_records_the_prompt_hash(cli, capsule: Path, tmp_path: Path) -> None:
    _, verdict = pair(cli, capsule, tmp_path, honest(capsule, "a"), honest(capsule, "b"))
    assert verdict["prompt"] == {
        "version": "continuation-prompt/3",
        "sha256": sha256_hex(prompt.TEXT.encode()),
    }


# Fixed-length hex fields: Python's `$` matches before a final newline, so a
# pattern alone would let "<hex>\n" through.


def test_capsule_hash_with_a_trailing_newline_is_invalid(
    cli, capsule: Path, tmp_path: Path
) -> None:
    newline = sha256_hex(capsule.read_bytes()) + "\n"
    code, verdict = pair(
        cli, capsule, tmp_path, honest(capsule, "a"), honest(capsule, "b", capsule_sha256=newline)
    )
    assert code == 1
    assert outcomes(verdict)[:2] == ["pass", "fail"]
    assert reason(verdict, 2).startswith("result b: $.capsule_sha256: ")


def test_verdict_schema_refuses_hashes_with_a_trailing_newline(
    cli, capsule: Path, tmp_path: Path
) -> None:
    _, verdict = pair(cli, capsule, tmp_path, honest(capsule, "a"), honest(capsule, "b"))
    for key in ("sha256", "commit"):
        bad = json.loads(json.dumps(verdict))
        bad["capsule"][key] += "\n"
        with pytest.raises(MalformedInput, match=rf"\$\.capsule\.{key}"):
            validate(bad, "continuation-verdict-1", what="verdict", code="bad_verdict")
    bad = json.loads(json.dumps(verdict))
    bad["results"][0]["sha256"] += "\n"
    with pytest.raises(MalformedInput):
        validate(bad, "continuation-verdict-1", what="verdict", code="bad_verdict")


# next_action and blockers exclude each other


def test_continue_with_blockers_does_not_agree(cli, capsule: Path, tmp_path: Path) -> None:
    # Both continue, but one also lists a blocker: the text output would show
    # only its next action, so the schema refuses the mixture.
    hedged = honest(capsule, "b", blockers=["Phase 1 may not be merged."])
    code, verdict = pair(cli, capsule, tmp_path, honest(capsule, "a"), hedged)
    assert code == 1
    assert verdict["agreement"] is False
    assert reason(verdict, 2) == (
        "result b: $.blockers: blockers are not allowed when the decision is continue"
    )


def test_paths_that_are_not_utf8_are_shown_not_a_crash(cli, capsule: Path, tmp_path: Path) -> None:
    odd = tmp_path / os.fsdecode(b"capsule-\xff.json")
    odd.write_bytes(capsule.read_bytes())
    a = write(tmp_path, "a.json", honest(capsule, "a"))
    b = write(tmp_path, os.fsdecode(b"b-\xff.json"), honest(capsule, "b"))
    code, verdict = verify(cli, odd, a, b)
    assert code == 0
    assert verdict["capsule"]["path"] == str(tmp_path / "capsule-\ufffd.json")
    assert verdict["results"][1]["source"] == str(tmp_path / "b-\ufffd.json")
    code, error = verify(cli, odd, a, str(tmp_path / os.fsdecode(b"missing-\xff.json")))
    assert code == 2
    assert error["error"]["message"].startswith(str(tmp_path / "missing-\ufffd.json"))
