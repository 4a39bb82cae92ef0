"""``capsule cgp`` against the requirement tables of the Context Graph Protocol
specification (contextgraph/1), each test naming the requirement it checks,
run against the real provider as a subprocess. Every envelope it emits is
validated against the vendored envelope schema (tests/cgp_session.py)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from governance.agents.cgp import written
from support.cgp_conformance import verify_provenance
from support.cgp_session import DATA, Provider, assert_valid
from support.gitrepo import Repo, packet_yaml

ANCHOR = "capsule://packets/P-1"
TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
SESSION = Path(__file__).resolve().parents[1] / "governance" / "examples" / "cgp-session.ndjson"


@pytest.fixture
def provider(repo: Repo) -> Iterator[Provider]:
    running = Provider(repo.path)
    yield running
    running.stop()


@pytest.fixture
def ready(provider: Provider) -> Provider:
    assert provider.handshake()["type"] == "handshake_ack"
    return provider


def _frames(provider: Provider, **query: Any) -> list[dict[str, Any]]:
    reply = provider.query(anchors=[ANCHOR], **query)
    assert reply["type"] == "frames", reply
    frames: list[dict[str, Any]] = reply["result"]["frames"]
    return frames


def _lines(data: bytes) -> list[bytes]:
    # The capsule's line rule, written out again here: a line ends at LF, CRLF
    # or a lone CR; a last line may have no end.
    return re.findall(rb"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", data)


def _at_range(repo: Repo, path: str, where: str | None) -> bytes:
    data = subprocess.run(
        ["git", "show", f"HEAD:{path}"], cwd=repo.path, check=True, capture_output=True
    ).stdout
    if where is None:
        return data
    first, last = map(int, where.removeprefix("L").split("-"))
    return b"".join(_lines(data)[first - 1 : last])


# --- handshake (H1-H4, data flow, capabilities) --------------------------------


@pytest.mark.parametrize(
    "version", ["contextgraph/1.0-draft", "contextgraph/1.0", "contextgraph/1.7"]
)
def test_h1_ack_is_in_the_hosts_major_family(provider: Provider, version: str) -> None:
    ack = provider.handshake(version)
    assert ack["type"] == "handshake_ack"
    assert ack["protocol_version"].split(".")[0] == "contextgraph/1"


def test_h2_provider_name_and_version_are_not_empty(provider: Provider) -> None:
    info = provider.handshake()["provider"]
    assert info["name"] == "git-capsule"
    assert info["version"]


def test_h3_another_major_family_is_a_named_error_and_the_provider_stays(
    provider: Provider,
) -> None:
    reply = provider.handshake("contextgraph/2.0")
    assert reply["type"] == "error"
    assert reply["code"] == "incompatible_version"
    assert "contextgraph/1" in reply["message"]
    # Not hung, not gone: a query is still refused, and a good handshake works.
    assert provider.query(anchors=[ANCHOR])["code"] == "bad_request"
    assert provider.handshake()["type"] == "handshake_ack"


def test_h3_a_version_outside_the_grammar_is_a_bad_request(provider: Provider) -> None:
    assert provider.handshake("contextgraph/one")["code"] == "bad_request"


@pytest.mark.parametrize("request_id", ["q1", "  spaced id ", "é/日本/\u2028", "9" * 300])
def test_h4_ids_are_echoed_verbatim_on_frames_and_errors(ready: Provider, request_id: str) -> None:
    frames = ready.query(request_id, anchors=[ANCHOR])
    assert (frames["type"], frames["id"]) == ("frames", request_id)
    error = ready.query(request_id, anchors=[ANCHOR], kinds=["snippet"])
    assert (error["type"], error["id"]) == ("error", request_id)


def test_h4_a_reply_without_an_id_request_carries_none(ready: Provider) -> None:
    assert "id" not in ready.query(anchors=[ANCHOR])


def test_c5_data_flow_is_local_reads_only(provider: Provider) -> None:
    flow = provider.handshake()["provider"]["data_flow"]
    assert flow == {
        "reads": True,
        "writes": False,
        "egress": False,
        "egress_scopes": ["local-only"],
    }


def test_capabilities_are_doc_frames_correlation_and_verify(provider: Provider) -> None:
    capabilities = provider.handshake()["capabilities"]
    assert capabilities["query"] == {"kinds": ["doc"]}
    assert capabilities["correlation"] is True
    assert capabilities["verify"] is True
    assert "representations" not in capabilities  # full frames only (P1)


@pytest.mark.parametrize("kind", ["query", "verify"])
def test_no_payload_before_the_handshake(provider: Provider, kind: str) -> None:
    if kind == "query":
        reply = provider.query("early", anchors=[ANCHOR])
    else:
        reply = provider.ask({"type": "verify", "request": {"frames": []}})
    assert reply["type"] == "error"
    assert reply["code"] == "bad_request"
    assert "handshake first" in reply["message"]


# --- query: anchored on a packet, frames (F1-F5, D1, P1) -----------------------


def test_anchored_query_returns_the_packets_capsule_parts(cli, repo: Repo, ready: Provider) -> None:
    built = cli(["build", "packets/P-1/packet.yml"], cwd=repo.path)
    document = json.loads(built.out)
    frames = _frames(ready)
    expected = [document["packet"]["text"], document["context"]["text"]]
    expected += [read["text"] for read in document["reads"]]
    assert [f["content"] for f in frames] == expected
    assert [f["citation_label"] for f in frames] == [
        "packets/P-1/packet.yml L1-9",
        "packets/P-1/context.md L1-3",
        f"docs/roadmap.md#phase-2 L{document['reads'][0]['lines'][0]}-"
        f"{document['reads'][0]['lines'][1]}",
        "docs/notes.md L1-3",
    ]
    head = repo.head()
    assert [f["id"] for f in frames] == [
        f"capsule:P-1@{head}/packet",
        f"capsule:P-1@{head}/context",
        f"capsule:P-1@{head}/reads/0",
        f"capsule:P-1@{head}/reads/1",
    ]
    assert all(f["kind"] == "doc" and f["uri"] == ANCHOR for f in frames)
    assert frames[2]["title"] == "Phase 2 (docs/roadmap.md)"


def test_f1_f2_f3_score_title_and_citation_label(ready: Provider) -> None:
    for frame in _frames(ready):
        assert 0 <= frame["score"] <= 1
        assert frame["title"]
        assert frame["citation_label"]


def test_f4_timestamps_are_the_commits_time_in_the_utc_profile(repo: Repo, ready: Provider) -> None:
    seconds = int(repo.git("show", "-s", "--format=%ct", "HEAD"))
    expected = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for frame in _frames(ready):
        assert frame["valid_from"] == frame["recorded_at"] == expected
        assert TIME.match(frame["recorded_at"])


def test_f5_d1_digests_are_sha256_of_the_exact_bytes_at_the_range(
    repo: Repo, ready: Provider
) -> None:
    for frame in _frames(ready):
        provenance = frame["provenance"][1]  # the commit-pinned identity
        assert provenance["type"] == "file"
        assert DIGEST.match(provenance["digest"])
        assert DIGEST.match(frame["content_digest"])
        path = provenance["uri"].removeprefix(f"capsule://commits/{repo.head()}/")
        raw = _at_range(repo, path, provenance["range"])
        assert raw == frame["content"].encode("utf-8")
        assert provenance["digest"] == "sha256:" + hashlib.sha256(raw).hexdigest()
        assert frame["content_digest"] == provenance["digest"]


def test_ranges_follow_crlf_and_lone_cr_line_ends(repo: Repo, provider: Provider) -> None:
    repo.write("docs/crlf.md", b"# Top\r\n\r\nintro\r\n## Part\r\nbody\rmore\r\n## Next\r\nx")
    repo.write("packets/P-1/packet.yml", packet_yaml("P-1", ["docs/crlf.md#part", "docs/crlf.md"]))
    repo.commit("crlf")
    provider.handshake()
    section, whole = _frames(provider)[2:]
    assert section["provenance"][1]["range"] == "L4-6"
    assert section["content"] == "## Part\r\nbody\rmore\r\n"
    assert whole["provenance"][1]["range"] == "L1-8"
    for frame in (section, whole):
        raw = _at_range(repo, "docs/crlf.md", frame["provenance"][1]["range"])
        assert raw == frame["content"].encode("utf-8")
        # A host ends lines at LF only, and would read other bytes at L4-6:
        # the file:// provenance names the whole file, with its digest.
        on_disk = frame["provenance"][0]
        assert "range" not in on_disk
        assert (
            on_disk["digest"]
            == "sha256:" + hashlib.sha256(_at_range(repo, "docs/crlf.md", None)).hexdigest()
        )
        assert verify_provenance(on_disk) == ("verified", "")


def test_an_empty_file_has_no_range_and_digests_the_whole_resource(
    repo: Repo, provider: Provider
) -> None:
    repo.write("docs/empty.md", "")
    repo.write("packets/P-1/packet.yml", packet_yaml("P-1", ["docs/empty.md"]))
    repo.commit("empty")
    provider.handshake()
    frame = _frames(provider)[2]
    assert frame["content"] == ""
    for provenance in frame["provenance"]:
        assert "range" not in provenance
        assert provenance["digest"] == "sha256:" + hashlib.sha256(b"").hexdigest()
    assert verify_provenance(frame["provenance"][0]) == ("verified", "")
    assert frame["token_cost"] == 0


PIN = "2026-07-01T00:00:00Z"  # the conformance runner's as_of pin


def _ids(frames: list[dict[str, Any]]) -> set[str]:
    return {f["id"].split("@")[1].split("/")[0] for f in frames}


def test_f4_as_of_serves_the_last_commit_at_or_before_the_pin(repo: Repo, ready: Provider) -> None:
    # Issue 20: as_of was ignored, and a query pinned to 2026-07-01 got frames
    # whose valid_from was after the pin.
    before = repo.head()
    repo.write("docs/notes.md", "# Notes\n\nWritten after the pin.\n")
    after = repo.commit("after the pin", when="2026-09-01T00:00:00Z")
    pinned = _frames(ready, as_of=PIN)
    assert _ids(pinned) == {before}
    assert pinned[3]["content"] == "# Notes\n\nSome notes.\n"
    assert all(f["valid_from"] <= PIN for f in pinned)
    assert _ids(_frames(ready)) == {after}
    goal = ready.query(goal=GOAL, as_of=PIN)["result"]["frames"]
    assert goal
    assert all(f["id"].startswith(f"capsule-suggest:{before}/") for f in goal)


def test_f4_a_commit_at_the_pin_is_served_and_fractions_round_down(
    repo: Repo, ready: Provider
) -> None:
    repo.write("docs/notes.md", "# Notes\n\nAt the pin.\n")
    at = repo.commit("at the pin", when=PIN)
    assert _ids(_frames(ready, as_of=PIN)) == {at}
    assert _ids(_frames(ready, as_of="2026-07-01T00:00:00.999Z")) == {at}
    assert _ids(_frames(ready, as_of="2026-06-30T23:59:59.999Z")) != {at}


def test_f4_as_of_reads_the_committer_time_not_the_author_time(repo: Repo, ready: Provider) -> None:
    before = repo.head()
    repo.write("docs/notes.md", "# Notes\n\nAuthored early, committed late.\n")
    env = {"GIT_AUTHOR_DATE": "2026-02-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-09-01T00:00:00Z"}
    repo.git("add", "-A")
    subprocess.run(["git", "commit", "-qm", "late"], cwd=repo.path, env={**os.environ, **env},
                   check=True)  # fmt: skip
    assert _ids(_frames(ready, as_of=PIN)) == {before}


def test_f4_as_of_follows_the_first_parent_line(repo: Repo, ready: Provider) -> None:
    # A side branch's commit dated before the pin, merged after it: at the pin
    # the branch held the commit before the merge, not the side branch's.
    mainline = repo.head()
    repo.git("checkout", "-q", "-b", "side")
    repo.write("docs/side.md", "# Side\n")
    repo.commit("side, before the pin", when="2026-03-01T00:00:00Z")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "merge", "side", when="2026-09-01T00:00:00Z")
    assert _ids(_frames(ready, as_of=PIN)) == {mainline}


def test_f4_a_pin_before_every_commit_gets_no_frames(ready: Provider) -> None:
    for pin in ("2025-12-31T23:59:59Z", "0000-01-01T00:00:00Z"):
        reply = ready.query("early", anchors=[ANCHOR], as_of=pin)
        assert reply["result"] == {"frames": [], "truncated": False}
        assert reply["id"] == "early"


def test_f4_as_of_null_is_no_pin(repo: Repo, ready: Provider) -> None:
    assert _ids(_frames(ready, as_of=None)) == {repo.head()}


@pytest.mark.parametrize(
    "pin",
    [
        "2026-07-01",
        "2026-07-01T00:00:00",
        "2026-07-01T00:00:00+02:00",
        "2026-07-01t00:00:00z",
        "2026-07-01 00:00:00Z",
        "2026-02-29T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-07-01T24:00:00Z",
        "2026-07-01T00:00:61Z",
        "2026-07-01T00:00:00.Z",
        "\uff12\uff10\uff12\uff16-07-01T00:00:00Z",
        20260701,
        ["2026-07-01T00:00:00Z"],
    ],
)
def test_f4_an_as_of_outside_the_utc_profile_is_a_bad_request(ready: Provider, pin: Any) -> None:
    reply = ready.query("p", anchors=[ANCHOR], as_of=pin)
    assert (reply["type"], reply["code"], reply["id"]) == ("error", "bad_request", "p")
    assert "as_of" in reply["message"]


def test_f4_a_leap_second_and_a_leap_day_are_times(ready: Provider) -> None:
    for pin in ("2026-06-30T23:59:60Z", "2028-02-29T12:00:00Z"):
        assert ready.query(anchors=[ANCHOR], as_of=pin)["type"] == "frames"


def _on_disk(repo: Repo, path: str) -> str:
    return "file://" + urllib.parse.quote(str(repo.path.resolve() / path))


def test_f5_each_frame_has_a_file_provenance_a_host_rereads(repo: Repo, ready: Provider) -> None:
    # Issue 20: every provenance was capsule://commits/..., which no host can
    # read, so the runner skipped provenance-fixture-consistency.
    frames = _frames(ready) + ready.query(goal=GOAL)["result"]["frames"]
    for frame in frames:
        on_disk, pinned = frame["provenance"]
        path = pinned["uri"].removeprefix(f"capsule://commits/{repo.head()}/")
        assert on_disk["uri"] == _on_disk(repo, path)
        assert (on_disk["range"], on_disk["digest"]) == (pinned["range"], frame["content_digest"])
        assert (on_disk["method"], on_disk["by"]) == (pinned["method"], "git-capsule")
        # Re-read as the reference host re-reads it: the bytes on disk match.
        assert verify_provenance(on_disk) == ("verified", "")
        assert verify_provenance(pinned)[0] == "unreadable"


def test_f5_a_file_that_moved_on_disk_no_longer_matches(repo: Repo, ready: Provider) -> None:
    frame = _frames(ready)[2]
    roadmap = repo.path / "docs/roadmap.md"
    roadmap.write_text(roadmap.read_text().replace("Second phase", "2nd phase"))
    outcome, detail = verify_provenance(frame["provenance"][0])
    assert outcome == "mismatch", detail
    # Frames come from the commit: served again, the digest is the same, and
    # the host sees that its work tree is not what the commit holds.
    assert _frames(ready)[2]["provenance"] == frame["provenance"]


def test_f5_a_pinned_frames_file_provenance_digests_the_pins_bytes(
    repo: Repo, ready: Provider
) -> None:
    repo.write("docs/notes.md", "# Notes\n\nLater.\n")
    repo.commit("after the pin", when="2026-09-01T00:00:00Z")
    notes = _frames(ready, as_of=PIN)[3]
    assert notes["provenance"][0]["digest"] == notes["content_digest"]
    assert verify_provenance(notes["provenance"][0])[0] == "mismatch"
    assert verify_provenance(_frames(ready)[3]["provenance"][0]) == ("verified", "")


def test_f5_a_path_a_uri_must_escape_is_percent_encoded(repo: Repo, provider: Provider) -> None:
    name = "docs/ä b%.md"
    repo.write(name, "# Odd\n\nA name to escape.\n")
    repo.write("packets/P-1/packet.yml", packet_yaml("P-1", [name]))
    repo.commit("odd name")
    provider.handshake()
    on_disk = _frames(provider)[2]["provenance"][0]
    assert on_disk["uri"].endswith("/docs/%C3%A4%20b%25.md")
    assert verify_provenance(on_disk) == ("verified", "")


def test_f5_a_bare_repository_has_only_the_commit_pinned_provenance(
    repo: Repo, tmp_path: Path
) -> None:
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.path), str(bare)], check=True)
    provider = Provider(bare)
    try:
        provider.handshake()
        for frame in _frames(provider):
            (pinned,) = frame["provenance"]
            assert pinned["uri"].startswith("capsule://commits/")
    finally:
        provider.stop()


def test_p1_full_frames_carry_content_and_no_reference_fields(ready: Provider) -> None:
    for frame in _frames(ready):
        assert "content" in frame
        assert not {"content_ref", "transform", "canonical_content_hash"} & set(frame)


def test_frames_come_from_the_commit_not_the_working_tree(repo: Repo, ready: Provider) -> None:
    (repo.path / "docs/notes.md").write_text("# Notes\n\nUncommitted.\n")
    assert "Uncommitted" not in "".join(f["content"] for f in _frames(ready))


def test_each_new_commit_is_served_without_a_restart(repo: Repo, ready: Provider) -> None:
    before = _frames(ready)
    repo.write("docs/notes.md", "# Notes\n\nA later commit.\n")
    repo.commit("later")
    after = _frames(ready)
    assert after[3]["content"] == "# Notes\n\nA later commit.\n"
    assert after[3]["id"] != before[3]["id"]


def test_a_missing_packet_is_a_typed_error(ready: Provider) -> None:
    reply = ready.query("m", anchors=["capsule://packets/NOPE"])
    assert reply["type"] == "error"
    assert reply["code"] == "capsule:source_missing"
    assert reply["id"] == "m"


def _suggested(cli, repo: Repo, goal: str) -> list[str]:
    result = cli(["suggest", goal, "--json"], cwd=repo.path)
    assert result.code == 0, result
    return [read["locator"] for read in json.loads(result.out)["reads"]]


GOAL = "second phase details"


def test_a_goal_query_is_answered_from_capsule_suggest(cli, repo: Repo, ready: Provider) -> None:
    reply = ready.query("g", goal=GOAL, anchors=["file:///elsewhere"])
    assert (reply["type"], reply["id"]) == ("frames", "g")
    frames = reply["result"]["frames"]
    locators = _suggested(cli, repo, GOAL)
    assert locators
    assert [f["citation_label"].rsplit(" ", 1)[0] for f in frames] == locators
    head = repo.head()
    for frame in frames:
        assert frame["kind"] == "doc"
        assert frame["id"].startswith(f"capsule-suggest:{head}/")
        provenance = frame["provenance"][1]
        path = provenance["uri"].removeprefix(f"capsule://commits/{head}/")
        raw = _at_range(repo, path, provenance.get("range"))
        assert raw == frame["content"].encode("utf-8")
        assert frame["content_digest"] == "sha256:" + hashlib.sha256(raw).hexdigest()
        assert frame["token_cost"] == math.ceil(len(raw) / 4)
        assert 0 <= frame["score"] <= 1
    assert max(f["score"] for f in frames) == 1.0


def test_a_goal_query_keeps_the_budget(ready: Provider) -> None:
    reply = ready.query(goal=GOAL, max_tokens=1)["result"]
    assert reply["frames"] == []
    assert reply["truncated"] is True


def test_a_goal_of_stop_words_only_is_a_typed_error(ready: Provider) -> None:
    reply = ready.query("s", goal="the and of")
    assert (reply["type"], reply["code"], reply["id"]) == ("error", "capsule:goal_empty", "s")


def test_v3_v4_suggested_frames_verify_valid_stale_and_gone(repo: Repo, ready: Provider) -> None:
    frames = ready.query(goal=GOAL)["result"]["frames"]
    assert [v["status"] for v in _verify(ready, frames)] == ["valid"] * len(frames)
    roadmap = (repo.path / "docs/roadmap.md").read_text()
    repo.write("docs/roadmap.md", roadmap.replace("Nested details", "Nested, edited details"))
    repo.commit("edit the details")
    statuses = {v["frame"]["frame_id"]: v for v in _verify(ready, frames)}
    assert "stale" in {v["status"] for v in statuses.values()}
    for verdict in statuses.values():
        if verdict["status"] == "stale":
            assert DIGEST.match(verdict["replacement_digest"])
    (repo.path / "docs/roadmap.md").unlink()
    repo.commit("remove the roadmap")
    gone = {v["status"] for v in _verify(ready, frames)}
    assert "gone" in gone


def test_two_anchors_on_one_packet_serve_it_once(ready: Provider) -> None:
    once = _frames(ready)
    twice = ready.query(anchors=[ANCHOR, ANCHOR + "/"])["result"]["frames"]
    assert [f["id"] for f in twice] == [f["id"] for f in once]


# --- budget honesty (B1, B3, B4) and kinds (Q1) --------------------------------


def test_b3_token_cost_is_ceil_of_utf8_bytes_over_4(ready: Provider) -> None:
    frames = _frames(ready)
    assert any(len(f["content"].encode()) != len(f["content"]) for f in frames)  # é, 日本
    for frame in frames:
        assert frame["token_cost"] == math.ceil(len(frame["content"].encode("utf-8")) / 4)


def test_b1_max_tokens_binds_with_whole_frames_and_truncated(ready: Provider) -> None:
    every = _frames(ready)
    costs = [f["token_cost"] for f in every]
    budget = costs[0] + costs[1]  # room for the first two, not the third
    reply = ready.query(anchors=[ANCHOR], max_tokens=budget)["result"]
    assert sum(f["token_cost"] for f in reply["frames"]) <= budget
    assert reply["truncated"] is True
    assert reply["dropped_estimate"] == len(every) - len(reply["frames"])
    by_id = {f["id"]: f for f in every}
    assert all(f == by_id[f["id"]] for f in reply["frames"])  # whole, unchanged frames


def test_b1_a_budget_nothing_fits_returns_no_frames_truncated(ready: Provider) -> None:
    reply = ready.query(anchors=[ANCHOR], max_tokens=0)["result"]
    assert reply["frames"] == []
    assert reply["truncated"] is True


def test_b4_max_frames_binds(ready: Provider) -> None:
    reply = ready.query(anchors=[ANCHOR], max_frames=2)["result"]
    assert len(reply["frames"]) == 2
    assert reply["truncated"] is True
    assert ready.query(anchors=[ANCHOR], max_frames=0)["result"]["frames"] == []


def test_b1_b4_a_budget_that_fits_everything_is_not_truncated(ready: Provider) -> None:
    reply = ready.query(anchors=[ANCHOR])["result"]
    assert reply["truncated"] is False
    assert "dropped_estimate" not in reply


def test_q1_kinds_outside_doc_get_no_frames(ready: Provider) -> None:
    reply = ready.query(anchors=[ANCHOR], kinds=["snippet", "symbol"])
    assert reply["type"] == "error"
    assert reply["code"] == "unsupported_kind"


@pytest.mark.parametrize("kinds", [[], ["doc"], ["snippet", "doc"]])
def test_q1_kinds_with_doc_or_empty_return_only_doc_frames(
    ready: Provider, kinds: list[str]
) -> None:
    frames = _frames(ready, kinds=kinds)
    assert frames
    assert {f["kind"] for f in frames} == {"doc"}


# --- verify (V1-V4) -------------------------------------------------------------


def _verify(
    provider: Provider,
    frames: list[dict[str, Any]],
    provider_id: str = "git-capsule",
    suffix: str = "",
) -> list[dict[str, Any]]:
    identities = [
        {
            "provider_id": provider_id,
            "frame_id": f["id"],
            "content_digest": f["content_digest"] + suffix,
        }
        for f in frames
    ]
    reply = provider.ask({"type": "verify", "request": {"frames": identities}})
    assert reply["type"] == "verified", reply
    verdicts: list[dict[str, Any]] = reply["response"]["verdicts"]
    assert [v["frame"] for v in verdicts] == identities  # V2: echoed in full, in order
    return verdicts


def test_v2_v3_unchanged_parts_are_valid(ready: Provider) -> None:
    assert [v["status"] for v in _verify(ready, _frames(ready))] == ["valid"] * 4


def test_v4_an_edited_section_is_stale_with_its_replacement_digest(
    repo: Repo, ready: Provider
) -> None:
    frames = _frames(ready)
    repo.write(
        "docs/roadmap.md", (repo.path / "docs/roadmap.md").read_text().replace("Second", "2nd")
    )
    repo.commit("edit phase 2")
    verdicts = _verify(ready, frames)
    assert [v["status"] for v in verdicts] == ["valid", "valid", "stale", "valid"]
    current = _frames(ready)[2]
    assert verdicts[2]["replacement_digest"] == current["content_digest"]


def test_v3_a_moved_but_identical_section_is_valid(repo: Repo, ready: Provider) -> None:
    frames = _frames(ready)
    roadmap = (repo.path / "docs/roadmap.md").read_text()
    repo.write("docs/roadmap.md", roadmap.replace("Intro text.\n", "Intro text.\n\nMore intro.\n"))
    repo.commit("move phase 2 down")
    assert _verify(ready, frames)[2]["status"] == "valid"
    assert _frames(ready)[2]["citation_label"] != frames[2]["citation_label"]


def test_v4_a_whole_file_that_changed_is_stale(repo: Repo, ready: Provider) -> None:
    frames = _frames(ready)
    repo.write("docs/notes.md", "# Notes\n\nRewritten.\n")
    repo.commit("rewrite notes")
    verdict = _verify(ready, frames)[3]
    assert verdict["status"] == "stale"
    expected = "sha256:" + hashlib.sha256(b"# Notes\n\nRewritten.\n").hexdigest()
    assert verdict["replacement_digest"] == expected


def test_v4_a_deleted_source_or_heading_is_gone(repo: Repo, ready: Provider) -> None:
    frames = _frames(ready)
    (repo.path / "docs/notes.md").unlink()
    roadmap = (repo.path / "docs/roadmap.md").read_text()
    repo.write("docs/roadmap.md", roadmap.replace("## Phase 2", "## Phase Two"))
    repo.commit("remove notes, rename phase 2")
    verdicts = _verify(ready, frames)
    assert [v["status"] for v in verdicts[2:]] == ["gone", "gone"]
    assert not any("replacement_digest" in v for v in verdicts)


@pytest.mark.parametrize("provider_id", ["provider-under-test", "someone-else", "git-capsule"])
def test_v1_verify_answers_under_whatever_id_the_host_registered_us(
    ready: Provider, provider_id: str
) -> None:
    # Issue 20: the conformance runner registers a provider as
    # "provider-under-test", and every frame it verified came back unknown.
    packet = _frames(ready)
    goal = ready.query(goal=GOAL)["result"]["frames"]
    assert goal
    verdicts = _verify(ready, packet + goal, provider_id)
    assert [v["status"] for v in verdicts] == ["valid"] * len(packet + goal)


MUTATED = "-contextgraph-conformance-mutated"  # the runner's own mutation


@pytest.mark.parametrize("suffix", [MUTATED, "x"])
def test_v1_a_digest_we_would_not_serve_is_stale_with_the_current_one(
    ready: Provider, suffix: str
) -> None:
    # Issue 20: with a mutated content_digest the runner must get stale (V1),
    # and got unknown.
    frames = _frames(ready) + ready.query(goal=GOAL)["result"]["frames"]
    verdicts = _verify(ready, frames, "provider-under-test", suffix)
    assert [v["status"] for v in verdicts] == ["stale"] * len(frames)
    assert [v["replacement_digest"] for v in verdicts] == [f["content_digest"] for f in frames]


def test_v1_another_digest_of_the_right_length_is_stale_too(ready: Provider) -> None:
    frame = _frames(ready)[2]
    identity = {"provider_id": "h", "frame_id": frame["id"], "content_digest": "sha256:" + "0" * 64}
    reply = ready.ask({"type": "verify", "request": {"frames": [identity]}})
    (verdict,) = reply["response"]["verdicts"]
    assert (verdict["status"], verdict["replacement_digest"]) == ("stale", frame["content_digest"])


def test_v1_holding_the_bytes_a_part_has_now_is_valid(repo: Repo, ready: Provider) -> None:
    # The digest is the ground truth: an old id held with the bytes its part
    # has at HEAD (the replacement digest, fetched again) is valid.
    frames = _frames(ready)
    repo.write("docs/notes.md", "# Notes\n\nRewritten.\n")
    repo.commit("rewrite notes")
    (stale,) = _verify(ready, frames[3:])
    held = {**frames[3], "content_digest": stale["replacement_digest"]}
    assert _verify(ready, [held])[0]["status"] == "valid"


def test_v4_a_part_gone_is_gone_whatever_digest_is_held(repo: Repo, ready: Provider) -> None:
    frames = _frames(ready)
    (repo.path / "docs/notes.md").unlink()
    repo.commit("remove notes")
    assert [v["status"] for v in _verify(ready, frames[3:], suffix="x")] == ["gone"]


def test_v3_what_the_provider_cannot_vouch_for_is_unknown(repo: Repo, ready: Provider) -> None:
    frame = _frames(ready)[2]
    identities = [
        {
            "provider_id": "git-capsule",
            "frame_id": "frm_retry",
            "content_digest": frame["content_digest"],
        },
        {"provider_id": "git-capsule", "frame_id": frame["id"]},
        {"provider_id": "git-capsule", "frame_id": frame["id"], "content_digest": None},
        {
            "provider_id": "git-capsule",
            "frame_id": frame["id"].replace(repo.head(), "1" * 40),
            "content_digest": frame["content_digest"],
        },
        {
            "provider_id": "git-capsule",
            "frame_id": frame["id"].replace("/reads/0", "/reads/9"),
            "content_digest": frame["content_digest"],
        },
        {
            "provider_id": "git-capsule",
            "frame_id": frame["id"].replace("capsule:P-1@", "capsule:P-2@"),
            "content_digest": frame["content_digest"],
        },
        {
            "provider_id": "git-capsule",
            "frame_id": f"capsule-suggest:{repo.head()}/docs/roadmap.md#no-such-heading",
            "content_digest": frame["content_digest"],
        },
    ]
    reply = ready.ask({"type": "verify", "request": {"frames": identities}})
    assert [v["status"] for v in reply["response"]["verdicts"]] == ["unknown"] * 7
    assert [v["frame"] for v in reply["response"]["verdicts"]] == identities


def test_v2_an_empty_verify_gets_an_empty_verified(ready: Provider) -> None:
    reply = ready.ask({"type": "verify", "request": {"frames": []}})
    assert reply == {"type": "verified", "response": {"verdicts": []}}


# --- robustness (R1, R2), unknown members (U1), embeddings (E1) -----------------


@pytest.mark.parametrize(
    "line",
    [
        b"not json\n",
        b"[1, 2]\n",
        b'"a string"\n',
        b'{"no": "type"}\n',
        b'{"type": 7}\n',
        b"\xff\xfe{}\n",
        b'{"type": "query"}\n',
        b'{"type": "query", "query": {"goal": "", "max_frames": 1, "max_tokens": 1}}\n',
        b'{"type": "query", "query": {"goal": "g", "max_frames": -1, "max_tokens": 1}}\n',
        b'{"type": "query", "query": {"goal": "g", "max_frames": 1, "max_tokens": 1.5}}\n',
        b'{"type": "query", "query": {"goal": "g", "max_frames": 1, "max_tokens": 1, '
        b'"anchors": "x"}}\n',
        b'{"type": "query", "id": 5, "query": {"goal": "g", "max_frames": 1, "max_tokens": 1}}\n',
        b'{"type": "verify", "request": {"frames": [{"frame_id": "x"}]}}\n',
        b'{"type": "frames", "result": {"frames": [], "truncated": false}, "id": "x"}\n',
        b"[" * 100000 + b"\n",
    ],
)
def test_r1_a_malformed_line_gets_bad_request_and_the_provider_keeps_serving(
    ready: Provider, line: bytes
) -> None:
    ready.send_raw(line)
    reply = ready.recv()
    assert reply["type"] == "error"
    assert reply["code"] == "bad_request"
    assert ready.query("after", anchors=[ANCHOR])["type"] == "frames"


LONE = "\ud800"  # a lone surrogate: JSON can escape it, no UTF-8 holds it
_QUERY = {"goal": "g", "max_frames": 8, "max_tokens": 100000, "anchors": [ANCHOR]}
_HELD = {"provider_id": "h", "frame_id": "capsule:P-1@" + "0" * 40 + "/packet"}


@pytest.mark.parametrize(
    ("envelope", "echoed"),
    [
        ({"type": "query", "id": LONE, "query": _QUERY}, None),
        ({"type": "query", "id": "ok" + LONE, "query": _QUERY}, None),
        ({"type": "query", "id": "q", "query": {**_QUERY, "goal": "phase" + LONE}}, "q"),
        ({"type": "query", "id": "q", "query": {**_QUERY, "anchors": [ANCHOR, LONE]}}, "q"),
        ({"type": "query", "id": "q", "query": {**_QUERY, "as_of": LONE}}, "q"),
        ({"type": "query", "id": "q", "query": {**_QUERY, "kinds": [LONE]}}, "q"),
        ({"type": "query", "id": "q", "query": {**_QUERY, LONE: 1}}, "q"),
        ({"type": "query", "id": "q", "future": [{"deep": [LONE]}], "query": _QUERY}, "q"),
        ({"type": "verify", "request": {"frames": [{**_HELD, "provider_id": LONE}]}}, None),
        ({"type": "verify", "request": {"frames": [{**_HELD, "frame_id": LONE}]}}, None),
        ({"type": "verify", "request": {"frames": [{**_HELD, "content_digest": LONE}]}}, None),
        ({"type": "handshake", "protocol_version": "contextgraph/1.0" + LONE}, None),
        ({"type": LONE, "id": "u"}, "u"),
        ({"type": "query" + LONE}, None),
    ],
)
def test_r1_a_lone_surrogate_anywhere_is_a_bad_request_and_the_session_goes_on(
    ready: Provider, envelope: dict[str, Any], echoed: str | None
) -> None:
    # Issue 22 item 4: a lone surrogate in a query id or a provider_id ended the
    # session with a traceback (UnicodeEncodeError in encode, exit 1).
    ready.send_raw(json.dumps(envelope).encode("ascii") + b"\n")
    reply = ready.recv()
    assert (reply["type"], reply["code"], reply.get("id")) == ("error", "bad_request", echoed)
    assert "lone surrogate" in reply["message"]
    assert ready.query("next", anchors=[ANCHOR])["type"] == "frames"
    ready.send({"type": "shutdown"})
    assert ready.wait() == 0
    assert ready.stderr() == ""


def test_r1_a_reply_utf8_cannot_hold_is_written_as_an_internal_error() -> None:
    # Defence in depth: were a repository's undecodable path (held as a lone
    # surrogate) to reach a reply, the line written is still an envelope.
    reply = {"type": "frames", "id": "q", "result": {"frames": [{"title": "x\udcff.md"}]}}
    line = written(reply)
    assert json.loads(line) == {
        "type": "error",
        "code": "internal",
        "message": "the reply is not encodable as UTF-8",
        "id": "q",
    }


def test_r1_an_escaped_surrogate_pair_is_text(ready: Provider) -> None:
    line = json.dumps({"type": "query", "id": "\U0001f600", "query": _QUERY}).encode("ascii")
    assert b"\\ud83d\\ude00" in line
    ready.send_raw(line + b"\n")
    assert ready.recv()["id"] == "\U0001f600"


def test_r1_a_line_over_the_bound_is_dropped_with_an_error(ready: Provider) -> None:
    ready.send_raw(b'{"type": "query", "pad": "' + b"x" * (2 << 20) + b'"}\n')
    reply = ready.recv()
    assert reply["code"] == "bad_request"
    assert "over" in reply["message"]
    assert ready.query("after", anchors=[ANCHOR])["id"] == "after"


def test_r1_too_many_anchors_is_refused_before_any_work(ready: Provider) -> None:
    reply = ready.query("many", anchors=[ANCHOR] * 65)
    assert reply["code"] == "bad_request"


def test_an_unrecognised_notification_is_ignored(ready: Provider) -> None:
    ready.send({"type": "future_notification"})
    assert ready.query("next", anchors=[ANCHOR])["id"] == "next"


def test_an_unrecognised_request_with_an_id_is_a_bad_request(ready: Provider) -> None:
    reply = ready.ask({"type": "resolve", "id": "r1", "request": {}})
    assert (reply["code"], reply["id"]) == ("bad_request", "r1")


def test_u1_unknown_members_are_ignored(ready: Provider) -> None:
    reply = ready.ask(
        {
            "type": "query",
            "id": "u1",
            "future_member": {"x": 1},
            "query": {
                "goal": "g",
                "max_frames": 8,
                "max_tokens": 100000,
                "anchors": [ANCHOR],
                "future_field": True,
                "as_of": "2026-07-01T00:00:00Z",
            },
        }
    )
    assert reply["type"] == "frames"


def test_e1_an_embedding_without_a_declared_space_is_a_bad_request(ready: Provider) -> None:
    reply = ready.query("e", anchors=[ANCHOR], embedding=[0.1, 0.2])
    assert (reply["code"], reply["id"]) == ("bad_request", "e")


def test_r2_shutdown_ends_the_provider_cleanly(ready: Provider) -> None:
    ready.send({"type": "shutdown"})
    assert ready.wait() == 0
    assert ready.rest() == b""
    assert ready.stderr() == ""


def test_r2_end_of_input_ends_the_provider_cleanly(ready: Provider) -> None:
    ready.close_stdin()
    assert ready.wait() == 0
    assert ready.stderr() == ""


def test_not_a_repository_is_a_usage_error(tmp_path: Path) -> None:
    provider = Provider(tmp_path)
    try:
        assert provider.wait() == 2
        assert "not_a_repository" in provider.stderr() or "error [" in provider.stderr()
    finally:
        provider.stop()


# --- the full session, and the spec's reference vectors --------------------------


def test_full_session_handshake_query_verify_shutdown(repo: Repo, provider: Provider) -> None:
    provider.handshake("contextgraph/1.0-draft")
    frames = provider.query("q1", anchors=[ANCHOR], max_frames=3, max_tokens=4096)
    assert frames["result"]["truncated"] is True
    _verify(provider, frames["result"]["frames"])
    provider.send({"type": "shutdown"})
    assert provider.wait() == 0
    kinds = [json.loads(line)["type"] for _, line in provider.transcript]
    assert kinds == [
        "handshake",
        "handshake_ack",
        "query",
        "frames",
        "verify",
        "verified",
        "shutdown",
    ]
    for _, line in provider.transcript:
        assert "\n" not in line
        assert_valid(json.loads(line))
    # The fixture's commit ids are reproducible: docs/cgp.md's example is this
    # session, its work tree shown as /path/to/repo.
    shown = provider.ndjson().replace(urllib.parse.quote(str(repo.path.resolve())), "/path/to/repo")
    assert shown == SESSION.read_text(encoding="utf-8")


def test_reference_messages_parse_and_validate() -> None:
    messages = json.loads((DATA / "reference-messages.json").read_text(encoding="utf-8"))
    assert len(messages) == 12
    for message in messages:
        assert_valid(message)


@pytest.mark.parametrize("name", ["reference-vectors.ndjson", "full-stdio-session.ndjson"])
def test_reference_ndjson_vectors_parse_and_validate(name: str) -> None:
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    assert lines
    for line in lines:
        assert_valid(json.loads(line))


def test_the_reference_sessions_host_lines_are_served(provider: Provider) -> None:
    lines = [
        json.loads(line) for line in (DATA / "full-stdio-session.ndjson").read_text().splitlines()
    ]
    handshake = next(m for m in lines if m["type"] == "handshake")
    assert provider.ask(handshake)["type"] == "handshake_ack"
    query = next(m for m in lines if m["type"] == "query")
    # Its anchor names no packet of ours: a goal query, answered from suggest.
    reply = provider.ask(query)
    assert (reply["type"], reply["id"]) == ("frames", query["id"])
    verify = next(m for m in lines if m["type"] == "verify")
    verdicts = provider.ask(verify)["response"]["verdicts"]
    assert [v["status"] for v in verdicts] == ["unknown", "unknown"]


def test_the_vendored_schema_rejects_what_it_should(provider: Provider) -> None:
    # The validator is not vacuous: a frame with a score above 1 fails it.
    bad = {
        "type": "frames",
        "result": {
            "truncated": False,
            "frames": [
                {
                    "id": "x",
                    "kind": "doc",
                    "title": "t",
                    "content": "",
                    "score": 1.5,
                    "token_cost": 0,
                }
            ],
        },
    }
    with pytest.raises(AssertionError):
        assert_valid(bad)
