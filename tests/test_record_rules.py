"""One catalogue of hostile records through every surface that judges a
record: ``capsule replay`` of the file, ``capsule audit`` of the history and
the ``capsule-records`` hook. The record rules live in one module, so each
record must get the same code from all three."""

from __future__ import annotations

import json
import resource
import subprocess
import sys

import pytest

from capsule_hooks import records
from governance.history.record_rules import MAX_RECORD_BYTES
from governance.history.replay import rebuild_hint
from support.gitrepo import Repo, clean_environ, commit_with_a_tree_for_a_file
from support.history import audit, forge_target, record, record_on_a_deleted_branch
from support.hostile import catalogue
from support.signing import make_key


def _replay_code(cli, repo: Repo, path: str) -> str | None:
    result = cli(["replay", path, "--json"], cwd=repo.path)
    report = json.loads(result.out)
    if "error" in report:
        return str(report["error"]["code"])
    return None if report["identical"] else "replay_differs"


def _hook_codes(repo: Repo, paths: list[str], capsys, monkeypatch) -> dict[str, str]:
    monkeypatch.chdir(repo.path)
    capsys.readouterr()
    code = records.main(paths)
    out = capsys.readouterr().out
    assert code != 0
    codes: dict[str, str] = {}
    for line in out.splitlines():
        path, _locator, failure, _rest = line.split(": ", 3)
        codes.setdefault(path, failure)
    return codes


@pytest.fixture
def hostile(cli, repo: Repo) -> dict[str, tuple[str, str]]:
    """Every hostile record of the catalogue committed on main: name -> (path,
    the code every surface must give)."""
    head = repo.head()
    path = repo.path / record(cli, repo)
    genuine = path.read_bytes()
    path.unlink()
    written = {}
    for entry in catalogue(head):
        written[entry.name] = (entry.write(cli, repo, genuine), entry.code)
    repo.commit("every kind of hostile record")
    assert len({path for path, _ in written.values()}) == len(written)
    return written


def test_the_catalogue_names_every_kind_the_issue_lists(hostile) -> None:
    assert set(hostile) >= {
        "forged text", "misplaced copy", "unreachable commit", "corrupt", "non-canonical",
        "oversized", "symlink", "unsupported schema",
    }  # fmt: skip


def test_replay_audit_and_the_hook_give_each_hostile_record_the_same_code(
    cli, repo: Repo, hostile, capsys, monkeypatch
) -> None:
    expected = {path: code for path, code in hostile.values()}
    replayed = {path: _replay_code(cli, repo, path) for path in expected}
    audited = {}
    for jobs in ("1", "2"):  # two jobs: every outcome crosses a process boundary
        code, report = audit(cli, repo, "--jobs", jobs)
        assert code == 1
        rows = {row["path"]: row for row in report["results"]}
        assert set(rows) == set(expected), jobs
        audited[jobs] = {path: row["code"] for path, row in rows.items()}
        assert all(row["result"] != "identical" for row in rows.values())
    hooked = _hook_codes(repo, sorted(expected), capsys, monkeypatch)
    assert replayed == expected
    assert audited["1"] == audited["2"] == expected
    assert hooked == expected


def test_a_record_that_fails_two_rules_gets_the_first(cli, repo: Repo, capsys, monkeypatch) -> None:
    # Misplaced and forged at once: placement (rule 3) comes before replay (6),
    # and before the commit's reachability (5), on every surface.
    path, _side = record_on_a_deleted_branch(cli, repo)
    data = (repo.path / path).read_bytes()
    both = "packets/P-1/capsules/both.json"
    repo.write(both, forge_target(data))
    # Unreachable and forged: reachability (5) comes before replay (6).
    repo.write(path, forge_target(data))
    repo.commit("two records failing two rules each")
    expected = {both: "record_misplaced", path: "commit_unreachable"}
    assert {p: _replay_code(cli, repo, p) for p in expected} == expected
    _, report = audit(cli, repo)
    latest = {
        row["path"]: row["code"] for row in report["results"] if row["introduced"] == repo.head()
    }
    assert latest == expected
    assert _hook_codes(repo, sorted(expected), capsys, monkeypatch) == expected


def test_capsule_sign_reads_a_record_by_the_same_rules(cli, repo: Repo, hostile, tmp_path) -> None:
    # Nobody signs what the record rules refuse to read: the same code as above.
    key = make_key(tmp_path / "keys", "alice")
    for name in ("oversized", "symlink", "corrupt", "non-canonical"):
        path, code = hostile[name]
        result = cli(["sign", path, "--key", str(key.private), "--json"], cwd=repo.path)
        assert json.loads(result.out)["error"]["code"] == code, name
        assert not (repo.path / f"{path}.sig").exists()


def test_the_rebuild_hint_of_a_canonical_record_is_what_json_reads(cli, repo: Repo) -> None:
    data = (repo.path / record(cli, repo)).read_bytes()
    document = json.loads(data)
    assert rebuild_hint(data) == (document["commit"], document["packet"]["path"])


def test_the_rebuild_hint_of_a_rewritten_record_comes_from_the_json_parse(cli, repo: Repo) -> None:
    document = json.loads((repo.path / record(cli, repo)).read_bytes())
    # Keys out of order: the commit is no longer where a canonical capsule has it.
    shuffled = json.dumps(dict(reversed(list(document.items())))).encode()
    assert rebuild_hint(shuffled) == (document["commit"], document["packet"]["path"])
    assert rebuild_hint(b'{"schema":"capsule/2"}') is None
    assert rebuild_hint(b"[" * 100_000) is None


def test_the_rebuild_hint_decodes_the_path_as_json_does() -> None:
    data = (
        b'{"budget":{"bytes":1,"estimator":"x"},"commit":"' + b"a" * 40 + b'","context":{},'
        b'"id":"P","packet":{"blob":"ab","path":"p\\"q\\u00e9/\\\\x\xc3\xa9","text":""}}\n'
    )
    assert rebuild_hint(data) == ("a" * 40, 'p"q\u00e9/\\x\u00e9')


def test_a_record_failing_its_pre_checks_is_not_judged_by_a_rebuild_git_cannot_make(
    cli, repo: Repo, capsys, monkeypatch
) -> None:
    # The replay shortcut rebuilds before the pre-checks; git's error in that
    # rebuild must not stand in for the pre-check that fails first.
    genuine = (repo.path / record(cli, repo)).read_bytes()
    forged = commit_with_a_tree_for_a_file(repo)
    at_forged = genuine.replace(repo.head().encode(), forged.encode())
    folder = "packets/P-1/capsules"
    expected = {
        f"{folder}/twice.json": "capsule_malformed",
        f"{folder}/indented.json": "non_canonical",
    }
    repo.write(f"{folder}/twice.json", b'{"id":"P-0",' + at_forged[1:])
    repo.write(f"{folder}/indented.json", (json.dumps(json.loads(at_forged), indent=1)).encode())
    repo.commit("records declaring a commit git cannot build")
    assert {p: _replay_code(cli, repo, p) for p in expected} == expected
    _, report = audit(cli, repo)
    assert {row["path"]: row["code"] for row in report["results"] if row["path"] in expected} == (
        expected
    )
    assert _hook_codes(repo, sorted(expected), capsys, monkeypatch) == expected


def test_a_record_of_16_mib_with_an_open_path_string_is_judged_in_bounded_memory(
    repo: Repo,
) -> None:
    # The replay shortcut read the packet path with a regular expression
    # whose repeated alternation keeps state per character: over 2 GiB for a
    # record at the size limit. Judged within 1 GiB of address space, it is
    # the strict parse's capsule_malformed.
    head = f'{{"budget":{{}},"commit":"{repo.head()}","packet":{{"blob":"a","path":"'.encode()
    path = f"packets/P-1/capsules/{repo.head()[:12]}.json"
    repo.write(path, head + b"x" * (MAX_RECORD_BYTES - len(head)))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    script = "import sys; from governance.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", script, "replay", path, "--json"],
        cwd=repo.path,
        preexec_fn=limit,
        capture_output=True,
        text=True,
        env=clean_environ(),
        check=False,
    )
    assert done.stdout, done.stderr[-2000:]
    assert json.loads(done.stdout)["error"]["code"] == "capsule_malformed"
