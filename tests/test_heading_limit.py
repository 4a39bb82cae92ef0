"""A heading read of a large source is refused from its object header, and a
run parses each blob once (issue 9, items 2 and 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2

from governance.core.builder import build_capsule, check_report
from governance.core.cache import BlobCache
from governance.core.policy import CAPSULE_V1_KEYS, DEFAULT_MAX_HEADING_SOURCE_BYTES
from governance.core.snapshot import Snapshot
from support.gitrepo import POLICY, Repo, error_of, packet_yaml
from support.history import record

PACKET = "packets/P-1/packet.yml"


def big_markdown(size: int) -> str:
    head = "# Big\n\nFirst section.\n\n# Tail\n\n"
    return head + "x" * (size - len(head) - 1) + "\n"


def with_limit(limit: int) -> str:
    return POLICY + f"max_heading_source_bytes: {limit}\n"


def test_heading_read_over_the_policy_limit_is_source_too_large(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", with_limit(1000))
    repo.write("docs/big.md", big_markdown(1001))
    repo.write(PACKET, packet_yaml("P-1", ["docs/big.md#big"]))
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (3, "source_too_large")
    assert (error["bytes"], error["limit"]) == (1001, 1000)
    assert "1,001" in error["message"]
    assert "max_heading_source_bytes" in error["message"]


def test_heading_read_at_the_limit_builds(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", with_limit(1000))
    repo.write("docs/big.md", big_markdown(1000))
    repo.write(PACKET, packet_yaml("P-1", ["docs/big.md#big"]))
    repo.commit()
    result = cli(["build", PACKET], cwd=repo.path)
    assert result.code == 0, result.err


def test_whole_file_read_is_not_bound_by_the_heading_limit(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", with_limit(100))
    repo.write("docs/big.md", big_markdown(1000))
    repo.write(PACKET, packet_yaml("P-1", ["docs/big.md"]))
    repo.commit()
    result = cli(["build", PACKET], cwd=repo.path)
    assert result.code == 0, result.err


def test_policy_without_the_key_gets_the_default_limit(cli, repo: Repo) -> None:
    # Every policy written before the key existed: a 4 MiB source is admitted,
    # one byte more is refused.
    repo.write("docs/at.md", big_markdown(DEFAULT_MAX_HEADING_SOURCE_BYTES))
    repo.write("docs/over.md", big_markdown(DEFAULT_MAX_HEADING_SOURCE_BYTES + 1))
    repo.write(PACKET, packet_yaml("P-1", ["docs/at.md#big"]))
    repo.write("packets/P-2/packet.yml", packet_yaml("P-2", ["docs/over.md#big"]))
    repo.write("packets/P-2/context.md", "# C\n")
    repo.commit()
    assert cli(["build", PACKET], cwd=repo.path).code == 0
    code, error = error_of(cli, repo, ["build", "packets/P-2/packet.yml"])
    assert (code, error["code"]) == (3, "source_too_large")
    assert error["limit"] == DEFAULT_MAX_HEADING_SOURCE_BYTES


def test_refused_before_the_working_tree_is_compared(cli, repo: Repo) -> None:
    # Comparing with the working tree inflates the blob: the size refusal comes first.
    repo.write("policies/capsule.yml", with_limit(1000))
    repo.write("docs/big.md", big_markdown(5000))
    repo.write(PACKET, packet_yaml("P-1", ["docs/big.md#big"]))
    repo.commit()
    repo.write("docs/big.md", "edited\n")
    code, error = error_of(cli, repo, ["build", PACKET])
    assert (code, error["code"]) == (3, "source_too_large")


def test_check_reports_source_too_large(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", with_limit(1000))
    repo.write("docs/big.md", big_markdown(5000))
    repo.write(PACKET, packet_yaml("P-1", ["docs/big.md#big", "docs/notes.md"]))
    repo.commit()
    result = cli(["check", PACKET], cwd=repo.path)
    assert result.code == 3
    assert "docs/big.md#big: source_too_large" in result.out


def test_the_new_policy_key_is_not_written_into_capsules(cli, repo: Repo) -> None:
    # A capsule/1 policy object keeps exactly its keys: the committed records and the
    # golden capsule keep their bytes (test_golden and the audit of this repository's
    # own record prove those); the policy's blob and sha256 bind the new key.
    repo.write("policies/capsule.yml", with_limit(123456))
    repo.commit()
    built = cli(["build", PACKET], cwd=repo.path)
    assert built.code == 0, built.err
    policy = json.loads(built.out)["policy"]
    assert sorted(policy) == sorted([*CAPSULE_V1_KEYS, "path", "blob", "sha256"])


def test_replay_uses_the_limit_of_the_declared_commit(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", with_limit(10_000))
    repo.write("docs/big.md", big_markdown(5000))
    repo.write(PACKET, packet_yaml("P-1", ["docs/big.md#big"]))
    repo.commit()
    path = record(cli, repo)
    repo.commit("the record")
    repo.write("policies/capsule.yml", with_limit(1000))
    repo.commit("a stricter limit later")
    result = cli(["replay", path, "--json"], cwd=repo.path)
    assert result.code == 0, result.out


def test_verify_reports_a_source_grown_over_the_limit(cli, repo: Repo, tmp_path: Path) -> None:
    repo.write("policies/capsule.yml", with_limit(1000))
    repo.write("docs/big.md", big_markdown(900))
    repo.write(PACKET, packet_yaml("P-1", ["docs/big.md#big"]))
    repo.commit()
    built = cli(["build", PACKET], cwd=repo.path)
    assert built.code == 0, built.err
    capsule = tmp_path / "c.json"
    capsule.write_text(built.out)
    repo.write("docs/big.md", big_markdown(5000))
    repo.commit()
    result = cli(["verify", str(capsule), "--json"], cwd=repo.path)
    parts = {p["locator"]: p for p in json.loads(result.out)["parts"]}
    assert parts["docs/big.md#big"]["status"] == "missing"
    assert parts["docs/big.md#big"]["code"] == "source_too_large"
    assert result.code == 1


def cached(cache: BlobCache, key: tuple[str, str]) -> object:
    """The value ``cache`` holds for ``key``, got without computing it."""

    def recompute() -> object:
        raise AssertionError(f"{key} is not cached")

    return cache.get(key, recompute, weight=lambda _: 0)


def assert_never_evicted(cache: BlobCache) -> None:
    # Everything these builds computed is far below the bound, so nothing was
    # evicted; and BlobCache computes a key it holds once (test_cache.py).
    assert cache.weight < cache.max_weight // 8


def _eight_reads(repo: Repo) -> None:
    sections = "".join(f"## S{n}\n\nText {n}.\n\n" for n in range(1, 9))
    repo.write("docs/many.md", "# Many\n\n" + sections)
    repo.write(PACKET, packet_yaml("P-1", [f"docs/many.md#s{n}" for n in range(1, 9)]))
    repo.commit()


def test_one_build_parses_a_blob_once(repo: Repo) -> None:
    _eight_reads(repo)
    snapshot = Snapshot.at(pygit2.Repository(str(repo.path)), "HEAD")
    build_capsule(snapshot, PACKET)
    assert snapshot.cache is not None
    blob = snapshot.source("docs/many.md").blob_id
    # The parsed headings the eight reads share are held, not recomputed: a
    # later read gets them without computing (the probe fails if it would).
    assert cached(snapshot.cache, ("headings", blob))
    assert_never_evicted(snapshot.cache)


def test_one_check_run_parses_a_blob_once_across_packets(repo: Repo) -> None:
    _eight_reads(repo)
    repo.write("packets/P-2/packet.yml", packet_yaml("P-2", ["docs/many.md#s1", "docs/many.md#s2"]))
    repo.write("packets/P-2/context.md", "# C\n")
    repo.commit()
    snapshot = Snapshot.at(pygit2.Repository(str(repo.path)), "HEAD")
    assert check_report(snapshot, PACKET).errors == []
    assert check_report(snapshot, "packets/P-2/packet.yml").errors == []
    assert snapshot.cache is not None
    many = snapshot.source("docs/many.md").blob_id
    assert cached(snapshot.cache, ("headings", many))
    assert cached(snapshot.cache, ("bytes", many))
    assert_never_evicted(snapshot.cache)
