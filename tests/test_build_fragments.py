"""The builder serialises each capsule from cached fragments of its parts
(canonical.fragment): the bytes must be those of the plain document, whatever
the cache already holds from other packets, paths and commits."""

from __future__ import annotations

import json
import re

import pygit2

from governance.core import canonical
from governance.core.builder import Built, build_capsule
from governance.core.cache import BlobCache
from governance.core.repository import commit_tree
from governance.core.snapshot import Snapshot
from support.gitrepo import Repo, packet_yaml

# The same bytes at several paths: one blob, several parts of capsules.
SHARED = '# Shared\n\nThe same "bytes" \\ at two paths, with é, 日本 and \t a tab.\n'


def _build(repo: Repo, packet: str, cache: BlobCache | None) -> Built:
    git = pygit2.Repository(str(repo.path))
    commit = git.revparse_single(repo.head())
    assert isinstance(commit, pygit2.Commit)
    snapshot = Snapshot(repo=git, tree=commit_tree(commit), commit_id=str(commit.id), cache=cache)
    return build_capsule(snapshot, packet)


def _packets(repo: Repo) -> list[str]:
    repo.write("docs/shared.md", SHARED)
    repo.write("docs/copy.md", SHARED)
    for packet_id, reads in (
        ("P-2", ["docs/shared.md", "docs/roadmap.md#phase-2"]),
        ("P-3", ["docs/copy.md", "docs/shared.md#shared", "docs/roadmap.md#phase-2"]),
    ):
        repo.write(f"packets/{packet_id}/packet.yml", packet_yaml(packet_id, reads))
        repo.write(f"packets/{packet_id}/context.md", SHARED)
    repo.commit("two packets whose context files are one blob")
    return ["packets/P-1/packet.yml", "packets/P-2/packet.yml", "packets/P-3/packet.yml"]


def test_a_built_capsule_is_the_canonical_bytes_of_its_plain_document(repo: Repo) -> None:
    for packet in _packets(repo):
        built = _build(repo, packet, None)
        assert built.data == canonical.dumps(built.document)
        assert json.loads(built.data) == built.document


def test_parts_that_are_one_blob_at_two_paths_each_keep_their_own_path(repo: Repo) -> None:
    packets = _packets(repo)
    cache = BlobCache()
    shared = [_build(repo, packet, cache) for packet in packets]
    for packet, built in zip(packets, shared, strict=True):
        assert built.data == _build(repo, packet, None).data
        context = json.loads(built.data)["context"]
        assert context["path"] == packet.replace("packet.yml", "context.md")
    reads = json.loads(shared[2].data)["reads"]
    assert [read["path"] for read in reads] == ["docs/copy.md", "docs/shared.md", "docs/roadmap.md"]
    assert reads[0]["blob"] == reads[1]["blob"]


def test_a_cache_warm_from_earlier_commits_builds_the_bytes_of_a_cold_one(repo: Repo) -> None:
    packets = _packets(repo)
    cache = BlobCache()
    for revision in range(3):
        for packet in packets:
            assert _build(repo, packet, cache).data == _build(repo, packet, None).data
        # Change a source, a context and the policy's budget under the cache.
        repo.write("docs/shared.md", SHARED + f"\nRevision {revision}.\n")
        repo.write("packets/P-2/context.md", f"# Context\n\nRevision {revision}.\n")
        policy = (repo.path / "policies/capsule.yml").read_text()
        target = f"target_tokens: {12000 - revision - 1}"
        repo.write("policies/capsule.yml", re.sub(r"target_tokens: \d+", target, policy))
        repo.commit(f"revision {revision}")
