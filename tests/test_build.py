from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pygit2
import pytest

from governance.core.hashing import sha256_hex
from governance.core.locator import check_path
from governance.errors import SourceError
from support.gitrepo import Repo, commit_with_a_tree_for_a_file, packet_yaml

PACKET = "packets/P-1/packet.yml"


def build(cli, repo: Repo, *args: str):
    return cli(["build", PACKET, *args], cwd=repo.path)


def test_build_prints_canonical_capsule_and_summary(cli, repo: Repo) -> None:
    result = build(cli, repo)
    assert result.code == 0, result.err
    data = result.out.encode("utf-8")
    capsule = json.loads(data)
    assert capsule["schema"] == "capsule/1"
    assert capsule["commit"] == repo.head()
    assert capsule["id"] == "P-1"
    assert [r["locator"] for r in capsule["reads"]] == ["docs/roadmap.md#phase-2", "docs/notes.md"]
    assert "capsule: built P-1" in result.err
    assert "2 reads" in result.err
    assert capsule["budget"]["bytes"] == len(data)
    assert capsule["budget"]["estimated_tokens"] == -(-len(data) // 3)


def test_heading_section_is_exact_bytes_and_lines(cli, repo: Repo) -> None:
    capsule = json.loads(build(cli, repo).out)
    read = capsule["reads"][0]
    assert read["heading"] == {"slug": "phase-2", "text": "Phase 2", "level": 2}
    assert read["lines"] == [9, 16]
    assert read["text"] == (
        "## Phase 2\n\nSecond phase, with é and 日本.\n\n### Details\n\n"
        "Nested details stay in phase 2.\n\n"
    )
    source = (repo.path / "docs/roadmap.md").read_bytes()
    assert read["source_sha256"] == sha256_hex(source)
    assert read["selected_sha256"] == sha256_hex(read["text"].encode())
    assert read["blob"] == str(pygit2.hash(source))


def test_whole_file_read_and_packet_parts(cli, repo: Repo) -> None:
    capsule = json.loads(build(cli, repo).out)
    notes = capsule["reads"][1]
    assert notes["heading"] is None
    assert notes["lines"] == [1, 3]
    assert notes["text"] == "# Notes\n\nSome notes.\n"
    packet_bytes = (repo.path / PACKET).read_bytes()
    assert capsule["packet"]["text"].encode() == packet_bytes
    assert capsule["packet"]["sha256"] == sha256_hex(packet_bytes)
    assert capsule["context"]["path"] == "packets/P-1/context.md"
    assert capsule["policy"]["path"] == "policies/capsule.yml"
    assert capsule["policy"]["target_tokens"] == 12000
    assert "untrusted" in capsule["trust"]


def test_crlf_source_keeps_its_bytes(cli, repo: Repo) -> None:
    repo.write("docs/roadmap.md", "# A\r\n\r\n## Phase 2\r\n\r\nbody\r\n## Next\r\n")
    repo.commit()
    read = json.loads(build(cli, repo).out)["reads"][0]
    assert read["text"] == "## Phase 2\r\n\r\nbody\r\n"
    assert read["lines"] == [3, 5]


def test_same_bytes_from_root_and_subfolder(cli, repo: Repo) -> None:
    from_root = build(cli, repo).out
    from_sub = cli(["build", "../packets/P-1/packet.yml"], cwd=repo.path / "docs").out
    assert from_root == from_sub


def test_output_writes_file_and_nothing_on_stdout(cli, repo: Repo, tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    result = build(cli, repo, "--output", str(target))
    assert result.code == 0
    assert result.out == ""
    assert json.loads(target.read_bytes())["id"] == "P-1"


def test_output_json_summary(cli, repo: Repo, tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    result = build(cli, repo, "--output", str(target), "--json")
    summary = json.loads(result.out)
    assert summary["sha256"] == sha256_hex(target.read_bytes())
    assert summary["bytes"] == target.stat().st_size


def test_failed_build_leaves_existing_output_untouched(cli, repo: Repo, tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"previous")
    repo.write("docs/notes.md", "dirty\n")
    result = build(cli, repo, "--output", str(target))
    assert result.code == 3
    assert target.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".capsule-")) == []


def test_failed_build_creates_no_output(cli, repo: Repo, tmp_path: Path) -> None:
    target = tmp_path / "new.json"
    repo.write("docs/notes.md", "dirty\n")
    assert build(cli, repo, "--output", str(target)).code == 3
    assert not target.exists()


# --- --at -------------------------------------------------------------------


def test_at_full_id_and_prefix_build_the_old_commit(cli, repo: Repo) -> None:
    first = repo.head()
    repo.write("docs/notes.md", "# Notes\n\nChanged.\n")
    repo.commit()
    old = json.loads(build(cli, repo, "--at", first).out)
    assert old["commit"] == first
    assert old["reads"][1]["text"] == "# Notes\n\nSome notes.\n"
    assert build(cli, repo, "--at", first[:8]).out == build(cli, repo, "--at", first).out


def test_at_commit_ignores_dirty_working_tree(cli, repo: Repo) -> None:
    repo.write("docs/notes.md", "uncommitted\n")
    result = build(cli, repo, "--at", repo.head())
    assert result.code == 0
    assert json.loads(result.out)["reads"][1]["text"] == "# Notes\n\nSome notes.\n"


@pytest.mark.parametrize("rev", ["main", "HEAD~1", "HEAD^", "v1", "abc", "zzzzzzz", "@"])
def test_at_refuses_names_and_expressions(cli, repo: Repo, rev: str) -> None:
    repo.commit("second")
    repo.git("tag", "v1")
    result = build(cli, repo, "--at", rev, "--json")
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "invalid_revision"


def test_at_unknown_commit(cli, repo: Repo) -> None:
    result = build(cli, repo, "--at", "0" * 40, "--json")
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "invalid_revision"


def test_at_ambiguous_prefix(cli, repo: Repo) -> None:
    # Make enough objects that two share a 4-hex prefix.
    for i in range(1000):
        repo.write(f"blobs/{i}.txt", f"{i}\n")
    repo.commit("many objects")
    ids = repo.git("rev-list", "--all", "--objects").split("\n")
    prefixes: dict[str, int] = {}
    for line in ids:
        prefixes[line[:4]] = prefixes.get(line[:4], 0) + 1
    shared = next(p for p, n in prefixes.items() if n > 1)
    result = build(cli, repo, "--at", shared, "--json")
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["code"] == "invalid_revision"
    assert "ambiguous" in error["message"]


def test_at_names_a_tree_not_a_commit(cli, repo: Repo) -> None:
    tree = repo.git("rev-parse", "HEAD^{tree}")
    result = build(cli, repo, "--at", tree, "--json")
    assert json.loads(result.out)["error"]["code"] == "invalid_revision"


# --- fail closed: exit 3, one named test per rule ---------------------------


def fail(cli, repo: Repo, code: str, *args: str) -> dict[str, Any]:
    result = build(cli, repo, "--json", *args)
    assert result.code == 3, result
    error = json.loads(result.out)["error"]
    assert error["code"] == code, error
    return error


def set_reads(repo: Repo, reads: list[str], commit: bool = True) -> None:
    repo.write(PACKET, packet_yaml("P-1", reads))
    if commit:
        repo.commit()


def test_fail_missing_file(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/absent.md"])
    error = fail(cli, repo, "source_missing")
    assert "docs/absent.md" in error["message"]


def test_fail_missing_heading(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/roadmap.md#phase-9"])
    error = fail(cli, repo, "heading_missing")
    assert error["locator"] == "docs/roadmap.md#phase-9"


def test_fail_ambiguous_heading_names_every_line(cli, repo: Repo) -> None:
    repo.write("docs/dup.md", "# Top\n\n## Notes\n\na\n\n## Other\n\n## Notes\n\nb\n")
    set_reads(repo, ["docs/dup.md#notes"])
    error = fail(cli, repo, "heading_ambiguous")
    assert error["lines"] == [3, 9]
    assert "line 3" in error["message"]
    assert "line 9" in error["message"]


def test_fail_ambiguous_even_by_github_suffix(cli, repo: Repo) -> None:
    # GitHub would call the second one notes-1; that selector depends on position.
    repo.write("docs/dup.md", "## Notes\n\n## Notes\n")
    set_reads(repo, ["docs/dup.md#notes-1"])
    assert fail(cli, repo, "heading_ambiguous")["lines"] == [1, 3]


def test_fail_suffix_that_could_mean_a_repeat_or_a_heading(cli, repo: Repo) -> None:
    # "notes-1" is GitHub's anchor of the second "Notes", and also the slug of
    # "Notes 1": never silently pick one.
    repo.write("docs/dup.md", "# Doc\n\n## Notes\n\na\n\n## Notes\n\nb\n\n## Notes 1\n\nc\n")
    set_reads(repo, ["docs/dup.md#notes-1"])
    assert fail(cli, repo, "heading_ambiguous")["lines"] == [3, 7, 11]


def test_numbered_heading_without_repeats_is_not_ambiguous(cli, repo: Repo) -> None:
    repo.write("docs/num.md", "# Doc\n\n## Step 1\n\ngo\n\n## Notes\n")
    set_reads(repo, ["docs/num.md#step-1", "docs/num.md#notes"])
    result = build(cli, repo)
    assert result.code == 0, result.err
    assert json.loads(result.out)["reads"][0]["lines"] == [3, 6]


def test_fail_symlink(cli, repo: Repo) -> None:
    os.symlink("roadmap.md", repo.path / "docs/link.md")
    set_reads(repo, ["docs/link.md"])
    fail(cli, repo, "source_symlink")


def test_fail_symlinked_folder(cli, repo: Repo) -> None:
    os.symlink("docs", repo.path / "alias")
    set_reads(repo, ["alias/roadmap.md"])
    fail(cli, repo, "source_symlink")


def test_fail_symlink_below_a_folder_already_walked(cli, repo: Repo) -> None:
    # The snapshot keeps each folder it has walked; a link under that folder,
    # reached by a later read, still fails closed.
    (repo.path / "docs/sub").mkdir()
    (repo.path / "docs/sub/real.md").write_text("# Real\n")
    os.symlink("sub", repo.path / "docs/linked")
    set_reads(repo, ["docs/roadmap.md", "docs/sub/real.md", "docs/linked/real.md"])
    error = fail(cli, repo, "source_symlink")
    assert "docs/linked" in error["message"]


def test_fail_submodule(cli, repo: Repo, tmp_path: Path) -> None:
    inner = Repo(tmp_path / "inner")
    inner.write("README.md", "# inner\n")
    inner.commit()
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner.path), "sub")
    set_reads(repo, ["sub/README.md"])
    fail(cli, repo, "source_submodule")
    set_reads(repo, ["sub"])
    fail(cli, repo, "source_submodule")


@pytest.mark.parametrize(
    "locator",
    ["../outside.md", "docs/../docs/notes.md", "/etc/passwd", ".git/config", "docs/.GIT/x",
     "docs\\notes.md", "docs//notes.md", "./docs/notes.md", "docs/notes.md/"],
)  # fmt: skip
def test_fail_unsafe_path(cli, repo: Repo, locator: str) -> None:
    set_reads(repo, [locator])
    error = fail(cli, repo, "unsafe_path")
    assert error["locator"] == locator


def test_fail_nul_in_path(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/a\x00b.md"])
    fail(cli, repo, "unsafe_path")


@pytest.mark.parametrize("char", ["\x01", "\t", "\n", "\r", "\x1b", "\x1f", "\x7f"])
def test_every_c0_control_and_del_in_a_path_is_unsafe(char: str) -> None:
    with pytest.raises(SourceError) as info:
        check_path(f"docs/a{char}b.md")
    assert info.value.code == "unsafe_path"
    assert "control character" in info.value.message


@pytest.mark.parametrize("char", [" ", "\x80", "\x9b", "\u202e", "\u00e9"])
def test_what_is_not_a_c0_control_or_del_stays_in_a_path(char: str) -> None:
    assert check_path(f"docs/a{char}b.md") == f"docs/a{char}b.md"


def test_fail_non_utf8_source(cli, repo: Repo) -> None:
    repo.write("docs/latin1.md", "caf\xe9\n".encode("latin-1"))
    set_reads(repo, ["docs/latin1.md"])
    fail(cli, repo, "source_not_utf8")


def test_fail_untracked_source(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/new.md"])
    repo.write("docs/new.md", "# New\n")
    fail(cli, repo, "source_untracked")


def test_fail_dirty_source(cli, repo: Repo) -> None:
    repo.write("docs/roadmap.md", "# Roadmap\n\n## Phase 2\n\nedited\n")
    error = fail(cli, repo, "source_dirty")
    assert error["locator"] == "docs/roadmap.md#phase-2"


def test_fail_dirty_same_size(cli, repo: Repo) -> None:
    original = (repo.path / "docs/notes.md").read_bytes()
    repo.write("docs/notes.md", original.replace(b"Some", b"Same"))
    fail(cli, repo, "source_dirty")


def test_fail_deleted_in_worktree(cli, repo: Repo) -> None:
    (repo.path / "docs/notes.md").unlink()
    fail(cli, repo, "source_dirty")


def test_fail_dirty_packet_and_context(cli, repo: Repo) -> None:
    repo.write("packets/P-1/context.md", "changed\n")
    fail(cli, repo, "source_dirty")


def test_fail_staged_but_uncommitted_is_dirty(cli, repo: Repo) -> None:
    repo.write("docs/notes.md", "# Notes\n\nstaged\n")
    repo.git("add", "docs/notes.md")
    fail(cli, repo, "source_dirty")


def test_fail_staged_only_change_is_dirty(cli, repo: Repo) -> None:
    # The working tree matches the commit again, but the index does not.
    original = (repo.path / "docs/notes.md").read_bytes()
    repo.write("docs/notes.md", "# Notes\n\nstaged\n")
    repo.git("add", "docs/notes.md")
    repo.write("docs/notes.md", original)
    assert "staged" in fail(cli, repo, "source_dirty")["message"]


def test_fail_removed_from_index_is_dirty(cli, repo: Repo) -> None:
    repo.git("rm", "-q", "--cached", "docs/notes.md")
    fail(cli, repo, "source_dirty")


def test_fail_line_ending_conversion_names_the_cause(cli, repo: Repo) -> None:
    repo.write(".gitattributes", "*.md text eol=crlf\n")
    repo.commit()
    (repo.path / "docs/notes.md").unlink()
    repo.git("checkout", "--", "docs/notes.md")
    assert repo.git("status", "--porcelain") == ""
    message = fail(cli, repo, "source_dirty")["message"]
    assert "line-ending conversion" in message
    assert "--at" in message
    assert build(cli, repo, "--at", repo.head()).code == 0


def test_fail_too_many_reads_names_the_limit(cli, repo: Repo) -> None:
    reads = [f"docs/f{i}.md" for i in range(9)]
    for read in reads:
        repo.write(read, "x\n")
    set_reads(repo, reads)
    error = fail(cli, repo, "too_many_reads")
    assert error["limit"] == 8
    assert "max_required_reads (8)" in error["message"]


def test_too_many_reads_follows_the_policy(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", "max_required_reads: 1\n")
    repo.commit()
    assert fail(cli, repo, "too_many_reads")["limit"] == 1


def test_fail_missing_context(cli, repo: Repo) -> None:
    (repo.path / "packets/P-1/context.md").unlink()
    repo.commit()
    fail(cli, repo, "source_missing")


def test_fail_missing_policy(cli, repo: Repo) -> None:
    (repo.path / "policies/capsule.yml").unlink()
    repo.commit()
    error = fail(cli, repo, "source_missing")
    assert "policies/capsule.yml" in error["message"]


def test_fail_packet_is_symlink(cli, repo: Repo) -> None:
    repo.write("packets/P-2/context.md", "c\n")
    os.symlink("../P-1/packet.yml", repo.path / "packets/P-2/packet.yml")
    repo.commit()
    result = cli(["build", "packets/P-2/packet.yml", "--json"], cwd=repo.path)
    assert result.code == 3
    assert json.loads(result.out)["error"]["code"] == "source_symlink"


def test_fail_packet_through_symlinked_folder(cli, repo: Repo) -> None:
    os.symlink("P-1", repo.path / "packets/P-2")
    repo.commit()
    result = cli(["build", "packets/P-2/packet.yml", "--json"], cwd=repo.path)
    assert result.code == 3, result
    assert json.loads(result.out)["error"]["code"] == "source_symlink"


def test_packet_outside_packets_folder_is_refused(cli, repo: Repo) -> None:
    repo.write("docs/P-9/packet.yml", packet_yaml("P-9", []))
    repo.write("docs/P-9/context.md", "c\n")
    repo.commit()
    result = cli(["build", "docs/P-9/packet.yml", "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "invalid_packet_path"


def test_fail_empty_slug(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/roadmap.md#"])
    fail(cli, repo, "invalid_locator")


# --- malformed input: exit 2 -------------------------------------------------


def malformed(cli, repo: Repo, packet_text: str, code: str = "packet_malformed") -> str:
    repo.write(PACKET, packet_text)
    repo.commit()
    result = build(cli, repo, "--json")
    assert result.code == 2, result
    error = json.loads(result.out)["error"]
    assert error["code"] == code
    return str(error["message"])


def test_malformed_unknown_key(cli, repo: Repo) -> None:
    message = malformed(cli, repo, packet_yaml("P-1", [], extra_field="x"))
    assert "extra_field" in message


def test_malformed_missing_field(cli, repo: Repo) -> None:
    text = packet_yaml("P-1", []).replace("objective: Carry the work forward.\n", "")
    assert "objective" in malformed(cli, repo, text)


def test_malformed_id_differs_from_folder(cli, repo: Repo) -> None:
    assert "folder" in malformed(cli, repo, packet_yaml("P-2", []))


def test_malformed_yaml(cli, repo: Repo) -> None:
    malformed(cli, repo, "id: [unclosed\n")


def test_malformed_duplicate_yaml_key(cli, repo: Repo) -> None:
    text = packet_yaml("P-1", ["docs/notes.md"]) + "required_reads: []\n"
    assert "duplicate" in malformed(cli, repo, text)


def test_malformed_wrong_type(cli, repo: Repo) -> None:
    malformed(cli, repo, packet_yaml("P-1", []).replace("scope: docs", "scope: 3"))


def test_malformed_policy(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", "target_tokens: 100\nsurprise: 1\n")
    repo.commit()
    result = build(cli, repo, "--json")
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "policy_malformed"


def test_malformed_policy_reserve_above_hard_limit(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", "hard_limit_tokens: 100\nreserve_tokens: 100\n")
    repo.commit()
    assert json.loads(build(cli, repo, "--json").out)["error"]["code"] == "policy_malformed"


def test_not_a_packet_path(cli, repo: Repo) -> None:
    result = cli(["build", "docs/notes.md", "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "invalid_packet_path"


def test_not_a_repository(cli, tmp_path: Path) -> None:
    result = cli(["build", PACKET, "--json"], cwd=tmp_path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "not_a_repository"


def test_errors_are_one_line_text_without_traceback(cli, repo: Repo) -> None:
    set_reads(repo, ["docs/absent.md"])
    result = build(cli, repo)
    assert result.code == 3
    assert result.out == ""
    assert result.err.startswith("capsule: error [source_missing]: ")
    assert "Traceback" not in result.err


# --- budget: exit 4 ----------------------------------------------------------


def test_over_budget_packet_target(cli, repo: Repo) -> None:
    repo.write("docs/big.md", "word " * 3000)
    repo.write(PACKET, packet_yaml("P-1", ["docs/big.md"], budget="{target_tokens: 1000}"))
    repo.commit()
    result = build(cli, repo, "--json")
    assert result.code == 4
    error = json.loads(result.out)["error"]
    assert error["code"] == "over_budget"
    assert error["target_tokens"] == 1000
    parts = {p["part"]: p for p in error["parts"]}
    assert parts["docs/big.md"]["bytes"] == 15000
    assert "(packet)" in error["message"]


def test_over_budget_after_escaping(cli, repo: Repo) -> None:
    # Raw bytes fit, but JSON escaping of control characters pushes it over.
    repo.write("policies/capsule.yml", "target_tokens: 3000\nhard_limit_tokens: 9000\n")
    repo.write("docs/ctl.md", "\x01" * 6000)
    set_reads(repo, ["docs/ctl.md"])
    result = build(cli, repo, "--json")
    assert result.code == 4
    error = json.loads(result.out)["error"]
    parts = {p["part"]: p for p in error["parts"]}
    assert parts["docs/ctl.md"]["bytes"] > 36000  # \u0001 is six bytes
    assert any(p["part"] == "(capsule envelope)" for p in error["parts"])


def test_over_budget_hard_limit_with_reserve(cli, repo: Repo) -> None:
    repo.write("policies/capsule.yml", "target_tokens: 3500\nhard_limit_tokens: 5000\n")
    repo.write("docs/big.md", "x" * 12000)
    set_reads(repo, ["docs/big.md"])
    result = build(cli, repo, "--json")
    assert result.code == 4
    assert "reserve" in json.loads(result.out)["error"]["message"]


def test_over_budget_context_refused_before_reading(cli, repo: Repo) -> None:
    repo.write("packets/P-1/context.md", "x" * 60000)
    repo.commit()
    result = build(cli, repo, "--json")
    assert result.code == 4
    error = json.loads(result.out)["error"]
    assert error["parts"] == [
        {"part": "packets/P-1/context.md", "bytes": 60000, "estimated_tokens": 20000}
    ]
    assert "at least" in error["message"]


def test_over_budget_heading_section_stops_before_later_reads(cli, repo: Repo) -> None:
    repo.write("docs/big.md", "# Top\n\n" + "word " * 9000 + "\n")
    set_reads(repo, ["docs/big.md#top", "docs/notes.md"])
    repo.write("docs/notes.md", "dirty, but never reached\n")
    result = build(cli, repo, "--json")
    assert result.code == 4
    error = json.loads(result.out)["error"]
    assert [p["part"] for p in error["parts"]][-1] == "docs/big.md#top"
    assert "at least" in error["message"]


def test_budget_fits_exactly_at_target(cli, repo: Repo) -> None:
    def with_target(tokens: int) -> str:
        return packet_yaml("P-1", ["docs/notes.md"], budget=f"{{target_tokens: {tokens}}}")

    # The packet's own size depends on its target: iterate to the fixpoint.
    target = 1000
    for _ in range(5):
        repo.write(PACKET, with_target(target))
        repo.commit()
        tokens = json.loads(build(cli, repo, "--at", repo.head()).out)["budget"]["estimated_tokens"]
        if tokens == target:
            break
        target = tokens
    exact = build(cli, repo)
    assert exact.code == 0
    assert json.loads(exact.out)["budget"]["estimated_tokens"] == target
    repo.write(PACKET, with_target(target - 1))
    repo.commit()
    assert build(cli, repo).code == 4


def test_unreadable_working_tree_file_is_a_clean_error(cli, repo: Repo) -> None:
    if os.geteuid() == 0:
        # root reads through mode bits: make the path a directory instead,
        # which the same comparison must report, not crash on.
        (repo.path / "docs/notes.md").unlink()
        (repo.path / "docs/notes.md").mkdir()
        fail(cli, repo, "source_dirty")
        return
    (repo.path / "docs/notes.md").chmod(0)
    result = build(cli, repo, "--json")
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "io_error"


def test_corrupt_object_database_is_a_clean_error(cli, repo: Repo) -> None:
    blob = repo.git("rev-parse", "HEAD:docs/notes.md")
    obj = repo.path / ".git/objects" / blob[:2] / blob[2:]
    obj.chmod(0o644)
    obj.write_bytes(b"not zlib data")
    result = build(cli, repo, "--json")
    assert result.code == 2, result
    assert "Traceback" not in result.err
    error = json.loads(result.out)["error"]
    assert error["code"] == "git_error"
    assert blob in error["message"]


def test_a_file_entry_naming_a_tree_object_is_git_s_error(cli, repo: Repo) -> None:
    """A tree entry written as a file (mode 100644) whose id names a tree (only a
    hand-made or corrupt object says so): a git error, never a crash."""
    set_reads(repo, ["docs/notes.md"])
    commit = commit_with_a_tree_for_a_file(repo)
    result = build(cli, repo, "--json", "--at", str(commit))
    assert result.code == 2, result  # git's errors exit 2, as everywhere
    error = json.loads(result.out)["error"]
    assert error["code"] == "git_error"
    assert "docs/notes.md" in error["message"]
    assert "is not a blob" in error["message"]
