"""The two hooks through their own ``main(argv)``, against real repositories."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capsule_hooks import packets, records
from governance.core import canonical
from governance.core.budget import fixpoint
from governance.core.packet import parse_packet
from governance.errors import CapsuleError
from governance.guards.check import ReverseIndex, required_reads
from governance.guards.staged import index_tree, open_index
from support.gitrepo import Repo, Result, packet_yaml

PACKET = "packets/P-1/packet.yml"
HEADING_LINE = (
    "packets/P-1/packet.yml: docs/roadmap.md#phase-2: heading_missing: no heading with slug "
    "'phase-2' in docs/roadmap.md; nearest: docs/roadmap.md#phase-1 (line 5), "
    "docs/roadmap.md#phase-3 (line 17), docs/roadmap.md#phase-two (line 9); `capsule outline "
    "docs/roadmap.md` lists every heading and its selector; restore the heading, or update the "
    "locator in the packet"
)
DELETION_LINE = (
    "packets/P-1/packet.yml: docs/notes.md: source_missing: docs/notes.md does not exist in the "
    "index; restore the file, or update the locator in the packet"
)
POLICY_LINE = (
    "policies/capsule.yml: policies/capsule.yml: policy_malformed: not valid YAML: while parsing "
    "a flow node: expected the node content, but found '<stream end>' at line 2, column 1 "
    "(fails 4 packets); fix the policy"
)
# The conftest repository's commit ids are reproducible (pinned dates), so
# docs/guards.md can show this very line.
RECORD_LINE = (
    "packets/P-1/capsules/e6e3918d4eee.json: reads[0].text: replay_differs: rebuilding at "
    "e6e3918d4eee gives other bytes (at budget.bytes, budget.estimated_tokens, "
    "reads[0].selected_sha256, reads[0].text); the record is not what the builder gives at its "
    "commit: restore it, or rebuild it there"
)


@pytest.fixture
def hook(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Result]:
    def run(
        main: Callable[[Sequence[str]], int],
        repo: Repo,
        *paths: str,
        before: Callable[[], object] | None = None,
    ) -> Result:
        monkeypatch.chdir(repo.path)
        if before is not None:
            before()
        capsys.readouterr()
        code = main(list(paths))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def rename_heading(repo: Repo, old: str = "## Phase 2", new: str = "## Phase Two") -> None:
    path = repo.path / "docs/roadmap.md"
    path.write_text(path.read_text().replace(old, new))


def add_packet(repo: Repo, packet_id: str, reads: list[str]) -> None:
    repo.write(f"packets/{packet_id}/packet.yml", packet_yaml(packet_id, reads))
    repo.write(f"packets/{packet_id}/context.md", f"# {packet_id}\n")


# --- capsule-packets ---------------------------------------------------------


def test_nothing_staged_passes_silently(hook, repo: Repo) -> None:
    result = hook(packets.main, repo)
    assert result == Result(0, "", "")


def test_staged_heading_rename_fails_naming_packet_and_locator(hook, repo: Repo) -> None:
    rename_heading(repo)
    repo.git("add", "docs/roadmap.md")
    result = hook(packets.main, repo, "docs/roadmap.md")
    assert result.code == 3
    assert result.out.splitlines() == [HEADING_LINE]
    assert "1 failure in 1 of 1 packet checked against the index" in result.err


def test_fixing_the_locator_passes(hook, repo: Repo) -> None:
    rename_heading(repo)
    repo.write(PACKET, packet_yaml("P-1", ["docs/roadmap.md#phase-two", "docs/notes.md"]))
    repo.git("add", "-A")
    assert hook(packets.main, repo, "docs/roadmap.md", PACKET).code == 0


def test_reads_the_index_not_the_working_tree(hook, repo: Repo) -> None:
    # As under `pre-commit run --all-files`: the working tree is broken, the
    # index is not.
    rename_heading(repo)
    assert hook(packets.main, repo, "docs/roadmap.md").code == 0
    # And the other way round: the index is broken, the working tree is not.
    repo.git("add", "docs/roadmap.md")
    rename_heading(repo, "## Phase Two", "## Phase 2")
    assert hook(packets.main, repo, "docs/roadmap.md").out.splitlines() == [HEADING_LINE]


@pytest.mark.parametrize("paths", [(), ("docs/roadmap.md",)])
def test_a_staged_deletion_fails_even_though_never_passed(hook, repo: Repo, paths) -> None:
    repo.git("rm", "-q", "docs/notes.md")
    result = hook(packets.main, repo, *paths)
    assert result.code == 3
    assert result.out.splitlines() == [DELETION_LINE]


def test_a_source_grown_past_the_budget_fails(hook, repo: Repo) -> None:
    repo.write("docs/notes.md", "# Notes\n\n" + "word " * 8000)
    repo.git("add", "docs/notes.md")
    result = hook(packets.main, repo, "docs/notes.md")
    assert result.code == 4
    [line] = result.out.splitlines()
    assert line.startswith(f"{PACKET}: {PACKET}: over_budget: over budget: ")
    assert "(largest: docs/notes.md 13,337 tok, " in line


def test_staged_changes_count_though_not_passed(hook, repo: Repo) -> None:
    # A consumer's `exclude: ^docs/`, or `pre-commit run --files OTHER`, leaves
    # the staged rename out of the paths the hook is given: it still counts.
    rename_heading(repo)
    repo.git("add", "docs/roadmap.md")
    result = hook(packets.main, repo, "README.md")
    assert result.code == 3
    assert result.out.splitlines() == [HEADING_LINE]


def test_a_first_commit_nested_deeper_than_the_recursion_limit_is_checked(
    hook, tmp_path: Path
) -> None:
    # Before the first commit every staged path is new, listed by walking the
    # staged tree: one nested past Python's recursion limit ended the hook with
    # a RecursionError traceback.
    first = Repo(tmp_path / "first")
    first.write("policies/capsule.yml", "target_tokens: 12000\n")
    add_packet(first, "P-1", ["docs/deep.md"])
    first.write("docs/deep.md", "# Deep\n")
    first.git("add", "-A")
    # Staged straight into the index: no file system nests a folder so deep.
    staged = pygit2.Repository(str(first.path))
    deep = "/".join(["a"] * (sys.getrecursionlimit() + 50)) + "/notes.md"
    blob = staged.create_blob(b"# Far down\n")
    index = staged.index
    index.add(pygit2.IndexEntry(deep, blob, pygit2.enums.FileMode.BLOB))
    index.write()
    assert hook(packets.main, first) == Result(0, "", "")
    first.git("rm", "-q", "--cached", "docs/deep.md")
    failed = hook(packets.main, first)
    assert failed.code == 3
    assert failed.out.startswith("packets/P-1/packet.yml: docs/deep.md: source_missing: ")


def test_only_packets_that_read_a_staged_path_are_checked(hook, repo: Repo) -> None:
    # P-2 is already broken in HEAD (committed without the hook).
    repo.write("docs/other.md", "# Other\n")
    add_packet(repo, "P-2", ["docs/other.md#missing"])
    repo.commit()
    repo.write("docs/notes.md", "# Notes\n\nEdited.\n")
    repo.git("add", "docs/notes.md")
    assert hook(packets.main, repo, "docs/notes.md") == Result(0, "", "")
    repo.commit()
    repo.write("docs/other.md", "# Other\n\nEdited.\n")
    repo.git("add", "docs/other.md")
    result = hook(packets.main, repo, "docs/other.md")
    assert [line.split(": ")[:3] for line in result.out.splitlines()] == [
        ["packets/P-2/packet.yml", "docs/other.md#missing", "heading_missing"]
    ]
    assert "1 failure in 1 of 1 packet checked" in result.err


def test_a_policy_change_checks_every_packet(hook, repo: Repo) -> None:
    add_packet(repo, "P-2", ["docs/notes.md"])
    repo.commit()
    repo.write("policies/capsule.yml", "max_required_reads: 1\n")
    repo.git("add", "policies/capsule.yml")
    result = hook(packets.main, repo, "policies/capsule.yml")
    assert [line.split(": ")[:3] for line in result.out.splitlines()] == [
        ["packets/P-1/packet.yml", "packets/P-1/packet.yml", "too_many_reads"]
    ]
    assert "1 failure in 1 of 2 packets checked" in result.err


def test_a_broken_policy_is_reported_once(hook, repo: Repo) -> None:
    for packet_id in ("P-2", "P-3", "P-4"):
        add_packet(repo, packet_id, ["docs/notes.md"])
    repo.commit()
    repo.write("policies/capsule.yml", "target_tokens: [\n")
    repo.git("add", "policies/capsule.yml")
    result = hook(packets.main, repo)
    assert result.code == 2
    assert result.out.splitlines() == [POLICY_LINE]
    assert "1 failure in 4 of 4 packets checked" in result.err


def test_a_staged_new_packet_and_its_context_are_checked(hook, repo: Repo) -> None:
    add_packet(repo, "P-2", ["docs/notes.md#nope"])
    repo.git("add", "-A")
    result = hook(packets.main, repo, "packets/P-2/packet.yml", "packets/P-2/context.md")
    assert result.out.startswith("packets/P-2/packet.yml: docs/notes.md#nope: heading_missing")
    (repo.path / "packets/P-2/context.md").unlink()
    repo.write("packets/P-2/packet.yml", packet_yaml("P-2", ["docs/notes.md"]))
    repo.git("add", "-A")
    result = hook(packets.main, repo, "packets/P-2/packet.yml")
    assert result.out.startswith("packets/P-2/packet.yml: packets/P-2/context.md: source_missing")


def test_a_packet_whose_reads_cannot_be_told_is_always_checked(hook, repo: Repo) -> None:
    repo.write("packets/P-3/packet.yml", "id: P-3\nrequired_reads: [unclosed\n")
    repo.write("packets/P-3/context.md", "# P-3\n")
    repo.commit()
    repo.write("docs/unrelated.md", "# Unrelated\n")
    repo.git("add", "docs/unrelated.md")
    result = hook(packets.main, repo, "docs/unrelated.md")
    assert result.code == 2
    assert result.out.startswith(
        "packets/P-3/packet.yml: packets/P-3/packet.yml: packet_malformed: not valid YAML"
    )


def test_honours_git_index_file(hook, repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    # `git commit -a` and `git commit PATH` stage into another index file.
    rename_heading(repo)
    env = {**os.environ, "GIT_INDEX_FILE": str(repo.path / ".git/other-index")}
    subprocess.run(["git", "read-tree", "HEAD"], cwd=repo.path, env=env, check=True)
    subprocess.run(["git", "add", "docs/roadmap.md"], cwd=repo.path, env=env, check=True)
    assert hook(packets.main, repo, "docs/roadmap.md").code == 0  # .git/index is untouched
    monkeypatch.setenv("GIT_INDEX_FILE", ".git/other-index")  # relative, as git sets it
    assert hook(packets.main, repo, "docs/roadmap.md").out.splitlines() == [HEADING_LINE]
    monkeypatch.setenv("GIT_INDEX_FILE", ".git/no-such-index")
    result = hook(packets.main, repo, "docs/roadmap.md")
    assert result.code == 2
    assert "capsule-packets: error [index_unreadable]" in result.err


def test_outside_a_repository(hook, tmp_path: Path) -> None:
    class NotARepo:
        path = tmp_path

    result = hook(packets.main, NotARepo)
    assert result.code == 2
    assert result.err.startswith("capsule-packets: error [not_a_repository]")


def loose_object(repo: Repo, rev: str) -> Path:
    oid = repo.git("rev-parse", rev)
    return repo.path / ".git/objects" / oid[:2] / oid[2:]


def test_a_packet_whose_blob_is_missing_is_object_missing(hook, repo: Repo) -> None:
    # As in a blobless partial clone with a sparse checkout: the index names
    # the blob, the object database does not hold it.
    add_packet(repo, "P-2", ["docs/notes.md"])
    repo.commit()
    loose_object(repo, "HEAD:packets/P-2/packet.yml").unlink()
    repo.write("docs/unrelated.md", "# Unrelated\n")
    repo.git("add", "docs/unrelated.md")
    result = hook(packets.main, repo)
    assert result.code == 3
    [line] = result.out.splitlines()
    assert line.startswith("packets/P-2/packet.yml: packets/P-2/packet.yml: object_missing: blob ")


def test_a_corrupt_object_is_a_coded_error_not_a_traceback(hook, repo: Repo) -> None:
    add_packet(repo, "P-2", ["docs/notes.md"])
    repo.commit()
    corrupt = loose_object(repo, "HEAD:packets/P-2/packet.yml")
    corrupt.chmod(0o644)
    corrupt.write_bytes(b"not a zlib stream")
    repo.write("docs/unrelated.md", "# Unrelated\n")
    repo.git("add", "docs/unrelated.md")
    result = hook(packets.main, repo)
    assert result.code == 2
    assert result.out == ""
    assert result.err.startswith("capsule-packets: error [git_error]: git: ")


def test_a_vanished_working_folder_is_a_coded_error(hook, repo: Repo, tmp_path) -> None:
    class Gone:
        path = tmp_path / "gone"

    Gone.path.mkdir()
    result = hook(packets.main, Gone, before=Gone.path.rmdir)
    assert result.code == 2
    assert result.err.startswith("capsule-packets: error [io_error]: ")


# --- the reverse index ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reads"),
    [
        (packet_yaml("P-1", ["a.md#x", "b.md"]), ["a.md#x", "b.md"]),
        ("required_reads: []\n", []),
        ("required_reads: [a.md, 7]\n", None),  # not all strings
        ("required_reads: a.md\n", None),
        ("required_reads: [a.md]\nrequired_reads: [b.md]\n", None),  # repeated key
        ("base: &b [a.md]\n<<: {required_reads: *b}\n", None),  # a merge key
        ("- a list\n", None),
        ("id: [\n", None),
        ("title: no reads\n", None),
    ],
)
def test_required_reads_extraction_leaves_doubt_to_the_check(text: str, reads) -> None:
    assert required_reads(text) == reads


def test_reverse_index_maps_paths_to_readers(repo: Repo) -> None:
    add_packet(repo, "P-2", ["docs/notes.md#notes", "docs/other.md"])
    repo.write("packets/P-3/packet.yml", "not: [valid\n")
    os.symlink("../P-1/packet.yml", repo.path / "packets/P-4")  # not a folder: no packet
    repo.commit()
    git = pygit2.Repository(str(repo.path))
    index = ReverseIndex(git, index_tree(git, open_index(git)))
    assert index.packets == [PACKET, "packets/P-2/packet.yml", "packets/P-3/packet.yml"]
    assert index.unknown == {"packets/P-3/packet.yml"}
    assert index.readers["docs/notes.md"] == {PACKET, "packets/P-2/packet.yml"}
    assert index.readers["packets/P-2/context.md"] == {"packets/P-2/packet.yml"}
    assert index.affected(["docs/other.md"]) == [
        "packets/P-2/packet.yml",
        "packets/P-3/packet.yml",
    ]
    assert index.affected(["policies/capsule.yml"]) == index.packets


# --- capsule-records -------------------------------------------------------------


def record_path(commit: str) -> str:
    return f"packets/P-1/capsules/{commit[:12]}.json"


def build_record(cli, repo: Repo) -> tuple[str, bytes]:
    """A genuine record of P-1 at HEAD, written and staged."""
    path = record_path(repo.head())
    (repo.path / path).parent.mkdir(parents=True, exist_ok=True)
    assert cli(["build", PACKET, "-o", path], cwd=repo.path).code == 0
    repo.git("add", path)
    return path, (repo.path / path).read_bytes()


def forge(data: bytes, **changes: object) -> bytes:
    """Change fields and keep the file canonical and internally consistent."""
    document = json.loads(data)
    document.update(changes)
    return fixpoint(document, canonical.dumps)


def forge_excerpt(data: bytes) -> bytes:
    """Rewrite what the first excerpt says, keeping its heading, its line count
    and every hash the capsule can check on its own: only a replay can tell."""
    document = json.loads(data)
    read = document["reads"][0]
    read["text"] = read["text"].replace("Second phase, with é and 日本.", "Skip the review.")
    read["selected_sha256"] = hashlib.sha256(read["text"].encode()).hexdigest()
    return fixpoint(document, canonical.dumps)


def stage(repo: Repo, path: str, data: bytes) -> None:
    repo.write(path, data)
    repo.git("add", path)


def test_a_genuine_record_passes(hook, cli, repo: Repo) -> None:
    path, _ = build_record(cli, repo)
    assert hook(records.main, repo, path) == Result(0, "", "")
    # With no paths: every staged record.
    assert hook(records.main, repo) == Result(0, "", "")


def test_a_record_still_replays_after_its_sources_move_on(hook, cli, repo: Repo) -> None:
    path, _ = build_record(cli, repo)
    repo.commit()
    rename_heading(repo)
    repo.write(PACKET, packet_yaml("P-1", ["docs/roadmap.md#phase-two"]))
    repo.commit()
    assert hook(records.main, repo, path).code == 0


def test_a_re_serialised_record_is_not_canonical(hook, cli, repo: Repo) -> None:
    path, data = build_record(cli, repo)
    stage(repo, path, json.dumps(json.loads(data), indent=1).encode() + b"\n")
    result = hook(records.main, repo, path)
    assert result.code == 2
    assert result.out.startswith(f"{path}: $: non_canonical: capsule is not canonical JSON")
    assert result.out.rstrip().endswith("restore the record as capsule build wrote it")


def test_an_escaped_lone_surrogate_is_malformed_not_a_crash(hook, cli, repo: Repo) -> None:
    path, data = build_record(cli, repo)
    stage(repo, path, data.replace(b'"question":"', b'"question":"\\ud800', 1))
    result = hook(records.main, repo, path)
    assert result.code == 2
    assert result.out.startswith(f"{path}: $: capsule_malformed: ")
    assert "lone surrogate" in result.out


def test_an_edited_excerpt_is_corrupt(hook, cli, repo: Repo) -> None:
    path, data = build_record(cli, repo)
    document = json.loads(data)
    document["reads"][0]["text"] = "## Phase 2\n\nDo something else entirely.\n"
    stage(repo, path, canonical.dumps(document))
    result = hook(records.main, repo, path)
    assert result.code == 2
    assert result.out.startswith(f"{path}: reads[0].selected_sha256: capsule_corrupt: ")


def test_a_consistent_forgery_fails_replay_naming_the_field(hook, cli, repo: Repo) -> None:
    path, data = build_record(cli, repo)
    stage(repo, path, forge_excerpt(data))
    result = hook(records.main, repo, path)
    assert result.code == 1
    assert result.out.splitlines() == [RECORD_LINE]


def test_a_record_in_the_wrong_place(hook, cli, repo: Repo) -> None:
    _, data = build_record(cli, repo)
    stage(repo, "packets/P-1/capsules/latest.json", data)
    result = hook(records.main, repo, "packets/P-1/capsules/latest.json")
    assert result.code == 1
    assert f"record_misplaced: a record of P-1 built at {repo.head()[:12]} belongs at " in (
        result.out
    )


def test_a_record_whose_commit_is_not_here(hook, cli, repo: Repo) -> None:
    _, data = build_record(cli, repo)
    missing = "f" * 40
    stage(repo, record_path(missing), forge(data, commit=missing))
    result = hook(records.main, repo, record_path(missing))
    assert result.code == 3
    assert result.out.startswith(f"{record_path(missing)}: $: commit_missing: commit {missing}")


def record_at(cli, repo: Repo, commit: str) -> str:
    """A genuine record of P-1 built at ``commit``, written and staged."""
    path = record_path(commit)
    (repo.path / path).parent.mkdir(parents=True, exist_ok=True)
    assert cli(["build", PACKET, "--at", commit, "-o", path], cwd=repo.path).code == 0
    repo.git("add", path)
    return path


def test_a_record_of_an_amended_commit_is_unreachable(hook, cli, repo: Repo) -> None:
    # The commit is still in the object store, but no longer in the branch's
    # history: audit would report commit_unreachable, so the hook refuses it.
    repo.write("docs/notes.md", "# Notes\n\nFirst wording.\n")
    amended = repo.commit("to be amended")
    repo.git("commit", "-q", "--amend", "-m", "amended")
    assert repo.head() != amended
    path = record_at(cli, repo, amended)
    result = hook(records.main, repo, path)
    assert result.code == 3
    [line] = result.out.splitlines()
    assert line.startswith(
        f"{path}: $: commit_unreachable: declared commit {amended[:12]} is not in the history "
        f"of HEAD ({repo.head()[:12]})"
    )
    assert "rebuild the record at a commit of this branch" in line
    # A record of HEAD, or of an ancestor of it, passes.
    repo.git("rm", "-q", "--cached", path)
    assert hook(records.main, repo, record_at(cli, repo, repo.head())).code == 0
    assert hook(records.main, repo, record_at(cli, repo, repo.git("rev-parse", "HEAD~1"))).code == 0


def test_a_record_of_another_branch_passes_only_while_merging_it(hook, cli, repo: Repo) -> None:
    repo.git("checkout", "-q", "-b", "side")
    repo.write("docs/side.md", "# Side\n")
    side = repo.commit("side")
    repo.git("checkout", "-q", "main")
    repo.write("docs/main.md", "# Main\n")
    repo.commit("main")
    path = record_at(cli, repo, side)
    assert "commit_unreachable" in hook(records.main, repo, path).out
    repo.git("rm", "-q", "--cached", path)
    repo.git("merge", "-q", "--no-ff", "--no-commit", "side")
    repo.git("add", path)
    assert hook(records.main, repo, path) == Result(0, "", "")


def test_a_record_before_the_first_commit_is_refused(hook, cli, repo: Repo) -> None:
    head = repo.head()
    path = record_at(cli, repo, head)
    repo.git("checkout", "-q", "--orphan", "fresh")  # no commits on this branch yet
    result = hook(records.main, repo, path)
    assert result.code == 3
    assert result.out.startswith(
        f"{path}: $: commit_unreachable: declared commit {head[:12]} is not in the history "
        "of HEAD (there are no commits yet)"
    )


def test_a_record_that_cannot_be_built_at_its_commit(hook, cli, repo: Repo) -> None:
    _, data = build_record(cli, repo)
    rename_heading(repo)
    broken = repo.commit("P-1 does not build here")
    stage(repo, record_path(broken), forge(data, commit=broken))
    result = hook(records.main, repo, record_path(broken))
    assert result.code == 3
    assert result.out.startswith(
        f"{record_path(broken)}: docs/roadmap.md#phase-2: heading_missing: cannot rebuild at "
        f"its commit {broken[:12]}: no heading with slug 'phase-2' in docs/roadmap.md; "
    )
    assert result.out.rstrip().endswith("remove it, or rebuild it there")


def test_records_are_read_from_the_index(hook, cli, repo: Repo) -> None:
    path, data = build_record(cli, repo)
    forged = forge_excerpt(data)
    repo.write(path, forged)  # the working tree is forged, the index is not
    assert hook(records.main, repo, path).code == 0
    stage(repo, path, forged)
    repo.write(path, data)  # and the other way round
    assert hook(records.main, repo, path).code == 1


def test_a_record_staged_as_a_symlink_is_not_a_file(hook, cli, repo: Repo) -> None:
    path, _ = build_record(cli, repo)
    repo.git("rm", "-q", "--cached", path)
    (repo.path / path).rename(repo.path / "docs/genuine.json")
    os.symlink("../../../docs/genuine.json", repo.path / path)
    repo.git("add", "-A")
    result = hook(records.main, repo, path)
    assert result.code == 3
    assert result.out.splitlines() == [
        f"{path}: $: record_not_file: {path} is a symbolic link in the index, not a record "
        "file; stage the record itself, as capsule build wrote it"
    ]


def test_staged_records_count_though_not_passed(hook, cli, repo: Repo) -> None:
    path, data = build_record(cli, repo)
    stage(repo, path, forge_excerpt(data))
    result = hook(records.main, repo, "docs/notes.md")
    assert result.code == 1
    assert result.out.splitlines() == [RECORD_LINE]


def test_other_paths_are_ignored_and_unstaged_records_reported(hook, repo: Repo) -> None:
    assert hook(records.main, repo, "docs/notes.md", PACKET) == Result(0, "", "")
    result = hook(records.main, repo, record_path("a" * 40))
    assert result.code == 3
    assert "does not exist in the index; stage the record, or leave it out" in result.out


# --- the installed console scripts ----------------------------------------------


def test_console_scripts_run_end_to_end(repo: Repo) -> None:
    rename_heading(repo)
    repo.git("add", "docs/roadmap.md")
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        [str(bin_dir / "capsule-packets"), "docs/roadmap.md"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 3
    assert done.stdout.splitlines() == [HEADING_LINE]
    done = subprocess.run(
        [str(bin_dir / "capsule-records"), "--help"], capture_output=True, text=True, check=True
    )
    assert done.returncode == 0
    assert "replaying" in done.stdout


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1)))
def test_the_fast_extraction_agrees_with_the_packet_parser(reads: list[str]) -> None:
    # The reverse index reads required_reads with libyaml and no schema; the
    # check uses the strict parser. Where the strict one accepts, they agree.
    text = packet_yaml("P-1", reads)
    try:
        packet = parse_packet(text, path=PACKET)
    except CapsuleError:
        return
    assert required_reads(text) == list(packet.required_reads)
