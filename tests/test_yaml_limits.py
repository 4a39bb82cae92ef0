"""What a packet and a policy may say (issue 9, items 1, 14 and 15): no YAML
aliases, bounded error messages, plain decimal integers only, targets that can
fit the hard limit, one packet id pattern."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.authoring.init import policy_text
from governance.core.hashing import sha256_hex
from governance.core.policy import Policy, _plain_policy
from governance.core.yamlload import load_yaml
from support.gitrepo import POLICY, Repo, error_of, packet_yaml
from support.history import forge

PACKET = "packets/P-1/packet.yml"
POLICY_PATH = "policies/capsule.yml"


def bomb(depth: int, key: str = "question") -> str:
    """Nested aliases ("billion laughs"): 9**depth strings from a few hundred bytes."""
    lines = [f"{key}:", '  a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    previous = "a"
    for name in "bcdefghi"[:depth]:
        lines.append(f"  {name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
        previous = name
    return "\n".join(lines) + "\n"


# Item 1: aliases are refused before anything else runs.


def test_packet_alias_bomb_is_refused_as_an_alias(cli, repo: Repo) -> None:
    # Five levels only, so that the unfixed code answers quickly (with a schema
    # error quoting all 59,049 strings); eight levels cost it minutes and gigabytes.
    repo.write(PACKET, packet_yaml("P-1", []) + bomb(5))
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "packet_malformed")
    assert "alias" in error["message"]
    assert len(error["message"]) < 400


def test_policy_alias_bomb_is_refused_as_an_alias(cli, repo: Repo) -> None:
    repo.write(POLICY_PATH, POLICY + bomb(5, key="max_required_reads"))
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "policy_malformed")
    assert "alias" in error["message"]
    assert len(error["message"]) < 400


def test_an_anchor_alone_is_refused(cli, repo: Repo) -> None:
    text = packet_yaml("P-1", ["docs/notes.md"]).replace("scope: docs", "scope: &s docs")
    repo.write(PACKET, text)
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "packet_malformed")
    assert "anchor" in error["message"]


def test_shared_alias_is_refused(cli, repo: Repo) -> None:
    # The same list used twice is valid YAML, but no hand-written packet needs it.
    text = packet_yaml("P-1", ["docs/notes.md"])
    text = text.replace("scope: docs", "scope: &s [docs, tests]").replace(
        "contracts: []", "contracts: *s"
    )
    repo.write(PACKET, text)
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "packet_malformed")


def _with_packet_text(data: bytes, text: str) -> bytes:
    def edit(d: dict[str, Any]) -> None:
        raw = text.encode()
        d["packet"]["text"] = text
        d["packet"]["sha256"] = sha256_hex(raw)
        d["packet"]["blob"] = str(pygit2.hash(raw))

    return forge(data, edit)


@pytest.mark.parametrize("command", ["verify", "replay"])
def test_capsule_packet_text_alias_bomb_is_corrupt(
    cli, repo: Repo, tmp_path: Path, command: str
) -> None:
    built = cli(["build", PACKET], cwd=repo.path)
    assert built.code == 0, built.err
    text = packet_yaml("P-1", ["docs/roadmap.md#phase-2", "docs/notes.md"]) + bomb(5)
    capsule = tmp_path / "bomb.json"
    capsule.write_bytes(_with_packet_text(built.out.encode(), text))
    code, error = error_of(cli, repo, [command, str(capsule)])
    assert (code, error["code"]) == (2, "capsule_corrupt")
    assert "alias" in error["message"]
    assert len(error["message"]) < 400


def test_schema_error_message_is_bounded(cli, repo: Repo) -> None:
    # A long value quoted whole by the schema validator.
    long = "x" * 20_000
    repo.write(PACKET, packet_yaml("P-1", []) + f"question: [{long}]\n")
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "packet_malformed")
    assert error["where"] == "$.question"
    assert len(error["message"]) < 400


def test_duplicate_key_message_is_bounded(cli, repo: Repo) -> None:
    long = "k" * 1_000
    repo.write(PACKET, packet_yaml("P-1", []) + f"{long}: 1\n{long}: 2\n")
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "packet_malformed")
    assert "duplicate key" in error["message"]
    assert len(error["message"]) < 600


def test_oversized_policy_is_refused_from_its_header(cli, repo: Repo) -> None:
    repo.write(POLICY_PATH, POLICY + "# " + "x" * (1 << 20) + "\n")
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "policy_malformed")
    assert "65536" in error["message"].replace(",", "")


# Item 14: a target that cannot fit the hard limit less the reserve.


def test_policy_target_above_hard_limit_is_malformed(cli, repo: Repo) -> None:
    repo.write(POLICY_PATH, POLICY.replace("target_tokens: 12000", "target_tokens: 20000"))
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "policy_malformed")
    for number in ("20000", "1500", "16000"):
        assert number in error["message"]


def test_policy_target_plus_reserve_above_hard_limit_is_malformed(cli, repo: Repo) -> None:
    repo.write(POLICY_PATH, POLICY.replace("target_tokens: 12000", "target_tokens: 14501"))
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "policy_malformed")
    assert "14501" in error["message"]


def test_policy_target_that_exactly_fits_builds(cli, repo: Repo) -> None:
    # 12,000 + 4,000 = 16,000: the target and the reserve fill the hard limit
    # exactly (a larger target would loosen the ADR's, tests/test_adr_limits.py).
    repo.write(POLICY_PATH, POLICY.replace("reserve_tokens: 1500", "reserve_tokens: 4000"))
    repo.commit()
    assert cli(["build", PACKET], cwd=repo.path).code == 0


def test_packet_target_above_hard_limit_is_malformed(cli, repo: Repo) -> None:
    repo.write(
        PACKET,
        packet_yaml("P-1", ["docs/notes.md"]) + "budget: {target_tokens: 15000}\n",
    )
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "packet_malformed")
    for number in ("15000", "1500", "16000"):
        assert number in error["message"]


def test_packet_target_problem_is_reported_by_check(cli, repo: Repo) -> None:
    repo.write(
        PACKET,
        packet_yaml("P-1", ["docs/notes.md"]) + "budget: {target_tokens: 15000}\n",
    )
    repo.commit()
    result = cli(["check", PACKET], cwd=repo.path)
    assert result.code == 2
    assert "packet_malformed" in result.out


# Item 15: plain decimal integers only.


@pytest.mark.parametrize(
    "value",
    ["3:20", "0x2000", "017", "1_000", "+5000", "0b101", "-0x1"],
)
def test_policy_integer_must_be_plain_decimal(cli, repo: Repo, value: str) -> None:
    repo.write(POLICY_PATH, POLICY.replace("target_tokens: 12000", f"target_tokens: {value}"))
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "policy_malformed")
    assert "decimal" in error["message"]


@pytest.mark.parametrize("value", ["3:20", "0x2000", "1_000"])
def test_packet_integer_must_be_plain_decimal(cli, repo: Repo, value: str) -> None:
    repo.write(
        PACKET, packet_yaml("P-1", ["docs/notes.md"]) + f"budget: {{target_tokens: {value}}}\n"
    )
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "packet_malformed")
    assert "decimal" in error["message"]


@pytest.mark.parametrize("packet_id", ["T-1.", "T..1", "T.-1", "T_", "-T"])
def test_odd_packet_ids_are_refused(cli, repo: Repo, packet_id: str) -> None:
    path = f"packets/{packet_id}/packet.yml"
    repo.write(path, packet_yaml(packet_id, ["docs/notes.md"]))
    repo.write(f"packets/{packet_id}/context.md", "# C\n")
    repo.commit()
    code, error = error_of(cli, repo, ["build", path])
    assert (code, error["code"]) == (2, "packet_malformed")
    assert error["where"] == "$.id"


@pytest.mark.parametrize("packet_id", ["T-1", "GC-003", "a.b_c-d", "X9"])
def test_plain_packet_ids_build(cli, repo: Repo, packet_id: str) -> None:
    path = f"packets/{packet_id}/packet.yml"
    repo.write(path, packet_yaml(packet_id, ["docs/notes.md"]))
    repo.write(f"packets/{packet_id}/context.md", "# C\n")
    repo.commit()
    result = cli(["build", path], cwd=repo.path)
    assert result.code == 0, result.err


def test_dependencies_use_the_same_id_pattern(cli, repo: Repo) -> None:
    text = packet_yaml("P-1", ["docs/notes.md"]).replace(
        "dependencies: []", 'dependencies: ["A..B"]'
    )
    repo.write(PACKET, text)
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (2, "packet_malformed")


# A plain policy is read without PyYAML (policy._plain_policy); the loader and
# that reading must never differ on a text the reading accepts.

_KEYS = ["target_tokens", "max_heading_count", "estimator", "Target_tokens", "on", "foo", "null"]
_VALUES = ["12000", "0", "-0", "-5", "012", "1_000", "0x10", "3:20", "12000.0", "+5", "yes"]
_VALUES += ["no", "on", "off", "y", "n", "null", "~", "true", "utf8_bytes_div_3_ceil", "abc"]
_VALUES += ["", "'5'", "[1]"]
_VALUES += ["&a 5", "*a", "5 6", "a#b", "5#c", "é"]
_COMMENTS = ["", " # c", "# c", " #", "  ", "\t", " # é", " #\x7f", " # :"]
_POLICY_LINES = st.one_of(
    # Entries as a policy writes them, with every value and comment.
    st.builds(
        "{}: {}{}".format,
        st.sampled_from(["target_tokens", "max_heading_count", "estimator"]),
        st.sampled_from(_VALUES),
        st.sampled_from(_COMMENTS),
    ),
    st.builds(
        "{}{}{}{}{}".format,
        st.sampled_from(["", " ", "- "]),
        st.sampled_from(_KEYS),
        st.sampled_from([": ", ":  ", ":", ":\t", " : ", ": \t"]),
        st.sampled_from(_VALUES),
        st.sampled_from(_COMMENTS),
    ),
    st.sampled_from(["", "  ", "\t", "#", "# a: b", "  # c", "---", "...", "%YAML 1.1", "?"]),
    st.text(alphabet=" #:-a1\t\r\x85\u2028\ufeff.{}[]&*!|>'\"%@`", max_size=6),
)


@settings(max_examples=1500)
@given(st.lists(_POLICY_LINES, max_size=6), st.sampled_from(["", "\n", "\n\n", "\r\n"]))
def test_a_plain_policy_reads_as_the_yaml_loader_reads_it(lines: list[str], end: str) -> None:
    text = "\n".join(lines) + end
    plain = _plain_policy(text)
    if plain is None:
        return  # the loader reads it, as before
    loaded = load_yaml(text, path=POLICY_PATH, code="policy_malformed")
    # parse_policy reads an empty document (None) as no entry, the same as {}.
    assert (loaded if loaded is not None else {}) == plain


def test_the_policies_init_writes_and_the_tests_use_are_plain() -> None:
    # So a build and an outline under them import no YAML parser for the policy.
    assert _plain_policy(policy_text()) == dataclasses.asdict(Policy())
    assert _plain_policy(POLICY) == load_yaml(POLICY, path=POLICY_PATH, code="policy_malformed")
    assert _plain_policy("# only a comment\n") == {}
    assert _plain_policy("target_tokens: 012\n") is None  # the loader refuses it, with its reason
