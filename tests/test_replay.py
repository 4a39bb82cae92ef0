from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from governance.cli import main
from governance.core.cache import BlobCache
from governance.core.hashing import sha256_hex
from governance.core.reader import READERS, read_capsule
from governance.core.repository import open_repository
from governance.errors import MalformedInput, SourceError
from governance.history.replay import replay_capsule
from support.gitrepo import POLICY, Repo, packet_yaml
from support.history import (
    P1,
    P2,
    forge,
    forge_target,
    forge_whole_read,
    git,
    record,
    record_on_a_deleted_branch,
)


def replay(cli, where: Path, capsule: Path | str, *args: str) -> tuple[int, dict]:
    result = cli(["replay", str(capsule), "--json", *args], cwd=where)
    return result.code, json.loads(result.out)


def _set_schema(document: dict[str, Any], schema: str) -> None:
    document["schema"] = schema


def test_fresh_record_replays_identical(cli, repo: Repo) -> None:
    path = repo.path / record(cli, repo)
    code, report = replay(cli, repo.path, path)
    assert code == 0
    assert report["identical"] is True
    assert report["differences"] == []
    assert report["rebuilt_sha256"] == report["capsule"]["sha256"] == sha256_hex(path.read_bytes())
    assert report["capsule"]["commit"] == repo.head()


def test_text_output(cli, repo: Repo) -> None:
    path = record(cli, repo)
    result = cli(["replay", path], cwd=repo.path)
    assert result.code == 0
    assert result.out.startswith(f"identical  {path}  (P-1 at {repo.head()[:12]}")
    assert "identical" in result.err


def test_source_edited_after_the_record_still_replays(cli, repo: Repo) -> None:
    path = repo.path / record(cli, repo)
    repo.commit("commit the record")
    repo.write("docs/roadmap.md", "# Roadmap\n\n## Phase 2\n\nEntirely new.\n")
    repo.write("docs/notes.md", "gone\n")
    repo.write("packets/P-1/context.md", "# Context\n\nRewritten.\n")
    repo.commit("edit every source")
    repo.write("docs/notes.md", "and dirty in the working tree\n")
    assert replay(cli, repo.path, path)[0] == 0


def test_policy_comes_from_the_declared_commit(cli, repo: Repo) -> None:
    path = repo.path / record(cli, repo)
    repo.commit("record under the first policy")
    repo.write("policies/capsule.yml", POLICY.replace("target_tokens: 12000", "target_tokens: 900"))
    repo.commit("a much smaller target: the old record would not fit it")
    assert json.loads(path.read_bytes())["policy"]["target_tokens"] == 12000
    code, report = replay(cli, repo.path, path)
    assert code == 0, report


def test_hand_edited_record_names_each_field(cli, repo: Repo) -> None:
    path = repo.path / record(cli, repo)
    path.write_bytes(forge_target(path.read_bytes(), 15000))
    code, report = replay(cli, repo.path, path)
    assert code == 1
    assert report["identical"] is False
    fields = {d["path"]: d for d in report["differences"]}
    assert sorted(fields) == ["budget.target_tokens", "policy.target_tokens"]
    # Each hash covers the canonical JSON of that one value.
    target = fields["policy.target_tokens"]
    assert target["recorded_sha256"] == sha256_hex(b"15000\n")
    assert target["rebuilt_sha256"] == sha256_hex(b"12000\n")


def test_hand_edited_excerpt_names_the_read(cli, repo: Repo) -> None:
    path = repo.path / record(cli, repo)
    path.write_bytes(forge_whole_read(path.read_bytes(), 1, "# Notes\n\nSome other notes.\n"))
    read_capsule(path.read_bytes())  # internally consistent: only a replay can tell
    result = cli(["replay", str(path)], cwd=repo.path)
    assert result.code == 1
    assert result.out.startswith("different")
    fields = {line.split()[0] for line in result.out.splitlines()[1:]}
    assert {"reads[1].text", "reads[1].blob", "reads[1].selected_sha256"} <= fields
    assert all(" recorded " in line for line in result.out.splitlines()[1:])


def test_naive_hand_edit_fails_the_prechecks(cli, repo: Repo) -> None:
    path = repo.path / record(cli, repo)
    document = json.loads(path.read_bytes())
    document["reads"][0]["text"] += "one more line\n"
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    path.write_bytes(text.encode() + b"\n")
    code, report = replay(cli, repo.path, path)
    assert code == 2
    assert report["error"]["code"] == "capsule_corrupt"


def test_non_canonical_record_fails_before_the_repository(cli, repo: Repo, tmp_path) -> None:
    path = repo.path / record(cli, repo)
    path.write_text(json.dumps(json.loads(path.read_bytes()), indent=1) + "\n")
    code, report = replay(cli, tmp_path, path)
    assert code == 2
    assert report["error"]["code"] == "non_canonical"


def test_unsupported_schema_exits_2(cli, repo: Repo) -> None:
    path = repo.path / record(cli, repo)
    path.write_bytes(forge(path.read_bytes(), lambda d: d.update(schema="capsule/2")))
    code, report = replay(cli, repo.path, path)
    assert code == 2
    assert report["error"]["code"] == "unsupported_schema"
    assert report["error"]["schema"] == "capsule/2"


def test_the_registry_refuses_an_unregistered_version(cli, repo: Repo) -> None:
    data = (repo.path / record(cli, repo)).read_bytes()
    assert set(READERS) == {"capsule/1"}
    for schema in ("capsule/2", "capsule/0", "capsule/1.1", "Capsule/1", ""):
        forged = forge(data, functools.partial(_set_schema, schema=schema))
        with pytest.raises(MalformedInput, match=r"this version reads: capsule/1\)") as info:
            read_capsule(forged)
        assert info.value.code == "unsupported_schema"
    assert read_capsule(data).schema == "capsule/1"


def test_replay_with_repo_option_from_anywhere(cli, repo: Repo, tmp_path) -> None:
    path = repo.path / record(cli, repo)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert replay(cli, outside, path, "--repo", str(repo.path / "docs"))[0] == 0
    code, report = replay(cli, outside, path)
    assert code == 2
    assert report["error"]["code"] == "not_a_repository"


def test_forged_record_whose_packet_is_not_at_its_commit(cli, repo: Repo) -> None:
    before = repo.head()
    repo.write(P2, packet_yaml("P-2", ["docs/notes.md"]))
    repo.write("packets/P-2/context.md", "# Context\n")
    repo.commit("add P-2")
    built = repo.path / record(cli, repo, P2)
    # Claim it was built before P-2 existed, under the name that commit gives.
    path = built.with_name(f"{before[:12]}.json")
    path.write_bytes(forge(built.read_bytes(), lambda d: d.update(commit=before)))
    code, report = replay(cli, repo.path, path)
    assert code == 3
    error = report["error"]
    assert error["code"] == "source_missing"
    assert error["stage"] == "rebuild"
    assert error["commit"] == before
    assert error["message"].startswith(f"the rebuild at {before[:12]} failed closed: ")
    assert "packets/P-2/packet.yml" in error["message"]
    text = cli(["replay", str(path)], cwd=repo.path)
    assert text.code == 3
    assert "[source_missing]" in text.err
    assert "rebuild" in text.err
    # The library call raises the builder's own error, unchanged, for callers
    # (such as the records hook) that report it in their own words.
    with pytest.raises(SourceError) as info:
        replay_capsule(open_repository(repo.path), read_capsule(path.read_bytes()))
    assert info.value.code == "source_missing"
    assert info.value.message.startswith("packets/P-2/packet.yml: ")
    assert "stage" not in info.value.details


def test_forged_record_over_budget_at_its_commit(cli, repo: Repo) -> None:
    path = repo.path / record(cli, repo)
    repo.commit("record")
    repo.write("policies/capsule.yml", POLICY.replace("target_tokens: 12000", "target_tokens: 50"))
    small = repo.commit("tiny budget")
    forged = forge(path.read_bytes(), lambda d: d.update(commit=small))
    path = path.with_name(f"{small[:12]}.json")
    path.write_bytes(forged)
    code, report = replay(cli, repo.path, path)
    assert code == 4
    assert report["error"]["code"] == "over_budget"
    assert report["error"]["stage"] == "rebuild"


# --- the declared commit is not here ------------------------------------------


def test_commit_missing_in_a_fresh_clone(cli, repo: Repo, tmp_path) -> None:
    path, side = record_on_a_deleted_branch(cli, repo)
    # The original still holds the dangling commit, so the capsule rebuilds there ...
    copy = tmp_path / "copy.json"
    copy.write_bytes((repo.path / path).read_bytes())
    assert replay(cli, repo.path, copy)[0] == 0
    # ... but as a record of this branch it is refused: its commit is not in
    # HEAD's history, as audit and the records hook say too.
    code, report = replay(cli, repo.path, repo.path / path)
    assert code == 3
    assert report["error"]["code"] == "commit_unreachable"
    # ... but a clone only gets what is reachable.
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--no-local", str(repo.path), str(clone))
    code, report = replay(cli, clone, clone / path)
    assert code == 3
    assert report["error"]["code"] == "commit_missing"
    assert report["error"]["commit"] == side
    assert report["error"]["shallow"] is False
    assert "shallow" not in report["error"]["message"]


def test_commit_missing_says_when_the_clone_is_shallow(cli, repo: Repo, tmp_path) -> None:
    path = record(cli, repo)
    repo.commit("record")
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo.path}", str(clone))
    code, report = replay(cli, clone, clone / path)
    assert code == 3
    error = report["error"]
    assert error["code"] == "commit_missing"
    assert error["shallow"] is True
    assert "this clone is shallow" in error["message"]
    text = cli(["replay", path], cwd=clone)
    assert text.code == 3
    assert "shallow" in text.err


def test_replay_help_documents_exit_codes(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    text = capsys.readouterr().out
    for needle in ("0  identical", "1  different", "unsupported_schema", "commit_missing"):
        assert needle in text
    assert "--repo PATH" in text


def test_records_sharing_sources_share_one_cache(cli, repo: Repo) -> None:
    repo.write(P2, packet_yaml("P-2", ["docs/roadmap.md#phase-1", "docs/notes.md"]))
    repo.write("packets/P-2/context.md", "# Context\n")
    repo.commit("P-2 reads other sections of the same files")
    capsules = [read_capsule((repo.path / record(cli, repo, p)).read_bytes()) for p in (P1, P2)]
    roadmap = repo.git("rev-parse", "HEAD:docs/roadmap.md")
    git_repo = open_repository(repo.path)
    cache = BlobCache()
    assert replay_capsule(git_repo, capsules[0], cache=cache).identical
    after_p1 = len(cache)
    alone = BlobCache()
    assert replay_capsule(git_repo, capsules[1], cache=alone).identical
    assert replay_capsule(git_repo, capsules[1], cache=cache).identical
    # The roadmap was inflated and parsed once for both packets' sections.
    assert ("bytes", roadmap) in cache
    assert ("headings", roadmap) in cache
    assert ("parsed", roadmap) in cache
    # Shorter than the heading limit, it was never searched for heading lines.
    assert ("heading-lines", roadmap) not in cache
    # Of what P-2's replay needs alone, seven entries were there already (the
    # policy's bytes and parse, notes.md's bytes and excerpt, the roadmap's bytes,
    # parsed headings and heading tree); only its packet, context and section
    # were added.
    assert len(cache) == after_p1 + len(alone) - 7
    # A cached replay and an uncached one agree, drift included.
    forged = read_capsule(forge_target(capsules[1].data))
    cached = replay_capsule(git_repo, forged, cache=cache)
    uncached = replay_capsule(git_repo, forged)
    assert cached.rebuilt == uncached.rebuilt
    assert cached.differences == uncached.differences != ()


def test_partial_clone_without_the_blobs(cli, repo: Repo, tmp_path) -> None:
    path = repo.path / record(cli, repo)
    clone = repo.partial_clone(tmp_path / "blobless", "blob:none")
    code, report = replay(cli, clone, path)
    assert code == 3
    assert report["error"]["code"] == "object_missing"
    assert "partial clone" in report["error"]["message"]
