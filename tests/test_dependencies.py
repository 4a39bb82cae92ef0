"""Dependencies are bound (issue 24, item 2): each id in a packet's
``dependencies`` names a packet at the same commit (``dependency_missing``,
from check and the packets hook, never from replay), a cycle is reported
(``dependency_cycle``), and ``check --json`` names each dependency's newest
record and whether it is current, as ``capsule status`` judges it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from capsule_hooks import packets
from governance.agents import tools
from governance.agents.outputs import CheckOut
from governance.agents.summaries import check_text
from support.gitrepo import Repo, packet_yaml
from support.history import audit, record

P1 = "packets/P-1/packet.yml"
P2 = "packets/P-2/packet.yml"


def write_packet(repo: Repo, packet_id: str, reads: list[str], deps: list[str]) -> str:
    path = f"packets/{packet_id}/packet.yml"
    text = packet_yaml(packet_id, reads).replace(
        "dependencies: []", f"dependencies: {json.dumps(deps)}"
    )
    repo.write(path, text)
    repo.write(f"packets/{packet_id}/context.md", f"# {packet_id}\n\nWhy.\n")
    return path


def check_json(cli, repo: Repo, *argv: str) -> tuple[int, dict[str, Any]]:
    result = cli(["check", *argv, "--json"], cwd=repo.path)
    assert "Traceback" not in result.err
    return result.code, json.loads(result.out)


def packet_of(report: dict[str, Any], path: str) -> dict[str, Any]:
    (found,) = [p for p in report["packets"] if p["path"] == path]
    return found


def codes(entry: dict[str, Any]) -> list[str]:
    return [f["code"] for f in entry["failures"]]


def test_a_dependency_on_no_packet_is_dependency_missing(cli, repo: Repo) -> None:
    # Before: `dependencies: [NOPE-9]` checked clean.
    write_packet(repo, "P-1", ["docs/notes.md"], ["NOPE-9"])
    repo.commit()
    code, report = check_json(cli, repo, P1)
    assert code == 3
    entry = packet_of(report, P1)
    assert codes(entry) == ["dependency_missing"]
    (failure,) = entry["failures"]
    assert failure["dependency"] == "NOPE-9"
    assert "NOPE-9" in failure["message"]
    assert "packets/NOPE-9/packet.yml" in failure["message"]
    assert entry["dependencies"] == [
        {"id": "NOPE-9", "path": "packets/NOPE-9/packet.yml", "exists": False, "record": None}
    ]


def test_the_text_line_names_the_dependency(cli, repo: Repo) -> None:
    write_packet(repo, "P-1", ["docs/notes.md"], ["NOPE-9"])
    repo.commit()
    result = cli(["check", P1], cwd=repo.path)
    assert result.code == 3
    assert result.out.startswith(f"{P1}: {P1}: dependency_missing: ")
    assert "NOPE-9" in result.out


def test_every_missing_dependency_is_reported_in_order(cli, repo: Repo) -> None:
    write_packet(repo, "P-2", ["docs/notes.md"], [])
    write_packet(repo, "P-1", ["docs/notes.md"], ["B-2", "P-2", "A-1"])
    repo.commit()
    _, report = check_json(cli, repo, P1)
    entry = packet_of(report, P1)
    assert [f["dependency"] for f in entry["failures"]] == ["B-2", "A-1"]
    assert [d["exists"] for d in entry["dependencies"]] == [False, True, False]


def test_a_dependency_that_exists_passes(cli, repo: Repo) -> None:
    write_packet(repo, "P-2", ["docs/notes.md"], [])
    write_packet(repo, "P-1", ["docs/notes.md"], ["P-2"])
    repo.commit()
    code, report = check_json(cli, repo, "--all")
    assert code == 0, report
    assert packet_of(report, P1)["dependencies"] == [
        {"id": "P-2", "path": P2, "exists": True, "record": None}
    ]
    assert packet_of(report, P2)["dependencies"] == []


def test_a_folder_without_a_packet_file_is_no_packet(cli, repo: Repo) -> None:
    repo.write("packets/P-2/context.md", "# only a context\n")
    write_packet(repo, "P-1", ["docs/notes.md"], ["P-2"])
    repo.commit()
    code, report = check_json(cli, repo, P1)
    assert (code, codes(packet_of(report, P1))) == (3, ["dependency_missing"])


def test_build_is_not_refused_by_a_missing_dependency(cli, repo: Repo) -> None:
    # The binding is check's and the hook's: a build, and so a replay of any
    # record, rebuilds the bytes as they are.
    write_packet(repo, "P-1", ["docs/notes.md"], ["NOPE-9"])
    repo.commit()
    assert cli(["build", P1], cwd=repo.path).code == 0


def test_an_old_record_with_a_dangling_dependency_keeps_replaying(cli, repo: Repo) -> None:
    write_packet(repo, "P-1", ["docs/notes.md"], ["NOPE-9"])
    repo.commit()
    path = record(cli, repo, P1)
    repo.commit("record")
    assert cli(["replay", path], cwd=repo.path).code == 0
    code, report = audit(cli, repo)
    assert code == 0, report


# --- cycles ---------------------------------------------------------------------


def test_a_two_packet_cycle_is_reported_for_each(cli, repo: Repo) -> None:
    write_packet(repo, "P-1", ["docs/notes.md"], ["P-2"])
    write_packet(repo, "P-2", ["docs/notes.md"], ["P-1"])
    repo.commit()
    code, report = check_json(cli, repo, "--all")
    assert code == 2
    first, second = packet_of(report, P1), packet_of(report, P2)
    assert codes(first) == codes(second) == ["dependency_cycle"]
    assert first["failures"][0]["cycle"] == ["P-1", "P-2", "P-1"]
    assert second["failures"][0]["cycle"] == ["P-2", "P-1", "P-2"]
    assert "P-1 -> P-2 -> P-1" in first["failures"][0]["message"]


def test_a_cycle_is_found_from_one_packet_named(cli, repo: Repo) -> None:
    write_packet(repo, "P-1", ["docs/notes.md"], ["P-2"])
    write_packet(repo, "P-2", ["docs/notes.md"], ["P-3"])
    write_packet(repo, "P-3", ["docs/notes.md"], ["P-1"])
    repo.commit()
    code, report = check_json(cli, repo, P1)
    assert code == 2
    (failure,) = packet_of(report, P1)["failures"]
    assert (failure["code"], failure["cycle"]) == ("dependency_cycle", ["P-1", "P-2", "P-3", "P-1"])


def test_a_packet_depending_on_itself_is_a_cycle(cli, repo: Repo) -> None:
    write_packet(repo, "P-1", ["docs/notes.md"], ["P-1"])
    repo.commit()
    code, report = check_json(cli, repo, P1)
    assert code == 2
    (failure,) = packet_of(report, P1)["failures"]
    assert failure["cycle"] == ["P-1", "P-1"]


def test_depending_on_a_cycle_is_not_being_in_one(cli, repo: Repo) -> None:
    write_packet(repo, "P-1", ["docs/notes.md"], ["P-2"])
    write_packet(repo, "P-2", ["docs/notes.md"], ["P-3"])
    write_packet(repo, "P-3", ["docs/notes.md"], ["P-2"])
    repo.commit()
    code, report = check_json(cli, repo, P1)
    assert (code, codes(packet_of(report, P1))) == (0, [])


def test_a_diamond_is_no_cycle(cli, repo: Repo) -> None:
    write_packet(repo, "P-4", ["docs/notes.md"], [])
    write_packet(repo, "P-2", ["docs/notes.md"], ["P-4"])
    write_packet(repo, "P-3", ["docs/notes.md"], ["P-4"])
    write_packet(repo, "P-1", ["docs/notes.md"], ["P-2", "P-3"])
    repo.commit()
    code, report = check_json(cli, repo, "--all")
    assert code == 0, report


# --- records of dependencies --------------------------------------------------------


def test_a_dependencys_record_is_named_and_current(cli, repo: Repo) -> None:
    write_packet(repo, "P-2", ["docs/notes.md"], [])
    write_packet(repo, "P-1", ["docs/roadmap.md"], ["P-2"])
    repo.commit()
    path = record(cli, repo, P2)
    built_at = repo.head()
    repo.commit("record P-2")
    _, report = check_json(cli, repo, P1)
    (dependency,) = packet_of(report, P1)["dependencies"]
    assert dependency["record"] == {
        "path": path,
        "commit": built_at,
        "status": "unchanged",
        "current": True,
    }


def test_a_dependencys_stale_record_is_not_current(cli, repo: Repo) -> None:
    write_packet(repo, "P-2", ["docs/notes.md"], [])
    write_packet(repo, "P-1", ["docs/roadmap.md"], ["P-2"])
    repo.commit()
    path = record(cli, repo, P2)
    repo.commit("record P-2")
    repo.write("docs/notes.md", "# Notes\n\nOther notes now.\n")
    repo.commit("notes change")
    code, report = check_json(cli, repo, P1)
    # A stale dependency is reported, never a failure of the dependent packet.
    assert code == 0
    (dependency,) = packet_of(report, P1)["dependencies"]
    assert dependency["record"]["path"] == path
    assert (dependency["record"]["status"], dependency["record"]["current"]) == ("stale", False)
    status = json.loads(cli(["status", "--json"], cwd=repo.path).out)
    (row,) = [r for r in status["records"] if r["packet"] == "P-2"]
    assert row["status"] == dependency["record"]["status"]


def test_the_newest_record_of_a_dependency_is_the_one_named(cli, repo: Repo) -> None:
    write_packet(repo, "P-2", ["docs/notes.md"], [])
    write_packet(repo, "P-1", ["docs/roadmap.md"], ["P-2"])
    repo.commit()
    record(cli, repo, P2)
    repo.commit("first record")
    repo.write("docs/notes.md", "# Notes\n\nSecond notes.\n")
    repo.commit("notes change")
    newer = record(cli, repo, P2)
    repo.commit("second record")
    _, report = check_json(cli, repo, P1)
    (dependency,) = packet_of(report, P1)["dependencies"]
    assert (dependency["record"]["path"], dependency["record"]["current"]) == (newer, True)


def test_the_text_report_warns_of_a_stale_dependency_record(cli, repo: Repo) -> None:
    # Regression: only --json named a stale dependency; the text report said
    # "1 packet would build" and nothing else.
    write_packet(repo, "P-2", ["docs/notes.md"], [])
    write_packet(repo, "P-1", ["docs/roadmap.md"], ["P-2"])
    repo.commit()
    path = record(cli, repo, P2)
    repo.commit("record P-2")
    repo.write("docs/notes.md", "# Notes\n\nOther notes now.\n")
    repo.commit("notes change")
    result = cli(["check", P1], cwd=repo.path)
    assert result.code == 0
    assert result.out == ""
    assert (
        f"{P1}: dependency P-2: its newest record {path} is stale at HEAD "
        "(capsule status lists it; rebuild it with capsule build --record)"
    ) in result.err.splitlines()
    assert result.err.splitlines()[-1].endswith("1 packet would build, 1 stale dependency record")


def test_a_current_or_unrecorded_dependency_gives_no_warning(cli, repo: Repo) -> None:
    write_packet(repo, "P-3", ["docs/notes.md"], [])
    write_packet(repo, "P-2", ["docs/notes.md"], [])
    write_packet(repo, "P-1", ["docs/roadmap.md"], ["P-2", "P-3"])
    repo.commit()
    record(cli, repo, P2)
    repo.commit("record P-2")
    result = cli(["check", P1], cwd=repo.path)
    assert result.code == 0
    assert "dependency" not in result.err
    assert result.err.splitlines()[-1].endswith("1 packet would build")


def test_the_mcp_check_names_each_dependency_as_check_json_does(cli, repo: Repo) -> None:
    write_packet(repo, "P-2", ["docs/notes.md"], [])
    write_packet(repo, "P-1", ["docs/roadmap.md"], ["P-2", "P-9"])
    repo.commit()
    record(cli, repo, P2)
    repo.commit("record P-2")
    _, report = check_json(cli, repo, P1)
    answer = tools.check(tools.Workspace.open(str(repo.path)), [P1])
    (checked,) = answer["packets"]
    assert checked["dependencies"] == packet_of(report, P1)["dependencies"]
    assert [d["id"] for d in checked["dependencies"]] == ["P-2", "P-9"]
    CheckOut.model_validate(answer)  # the tool's declared output schema holds it


def test_the_mcp_check_text_names_a_stale_dependency_record(cli, repo: Repo) -> None:
    write_packet(repo, "P-2", ["docs/notes.md"], [])
    write_packet(repo, "P-1", ["docs/roadmap.md"], ["P-2"])
    repo.commit()
    path = record(cli, repo, P2)
    repo.commit("record P-2")
    repo.write("docs/notes.md", "# Notes\n\nOther notes now.\n")
    repo.commit("notes change")
    text = check_text(tools.check(tools.Workspace.open(str(repo.path)), [P1]))
    assert f"{P1}: dependency P-2: its newest record {path} is stale at HEAD" in text.splitlines()


# --- the packets hook ----------------------------------------------------------------


@pytest.fixture
def hook(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    def run(repo: Repo, *paths: str) -> tuple[int, str]:
        monkeypatch.chdir(repo.path)
        capsys.readouterr()
        code = packets.main(list(paths))
        return code, capsys.readouterr().out

    return run


def test_the_hook_refuses_a_staged_packet_with_a_missing_dependency(hook, repo: Repo) -> None:
    write_packet(repo, "P-1", ["docs/notes.md"], ["NOPE-9"])
    repo.git("add", "-A")
    code, out = hook(repo, P1)
    assert code == 3
    assert "dependency_missing" in out


def test_the_hook_refuses_deleting_a_packet_another_depends_on(hook, repo: Repo) -> None:
    write_packet(repo, "P-2", ["docs/notes.md"], [])
    write_packet(repo, "P-1", ["docs/roadmap.md"], ["P-2"])
    repo.commit()
    repo.git("rm", "-q", "-r", "packets/P-2")
    code, out = hook(repo)
    assert code == 3
    assert out.startswith(f"{P1}: {P1}: dependency_missing: ")


def test_the_hook_refuses_a_staged_cycle(hook, repo: Repo) -> None:
    write_packet(repo, "P-2", ["docs/notes.md"], [])
    repo.commit()
    write_packet(repo, "P-2", ["docs/notes.md"], ["P-1"])
    write_packet(repo, "P-1", ["docs/roadmap.md"], ["P-2"])
    repo.git("add", "-A")
    code, out = hook(repo)
    assert code == 2
    assert out.count("dependency_cycle") == 2
