"""Documentation that cannot fall behind: hook ids in the README and the guards
page, the failure lines the docs show, and the CI workflow example."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from governance.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]
GUARDS = ROOT / "docs/guards.md"
WORKFLOW = ROOT / "hooks/github-workflow.yml"


def hook_ids() -> list[str]:
    return [hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())]


def test_every_hook_id_is_in_the_readme() -> None:
    readme = ROOT / "README.md"
    if not readme.exists():
        pytest.skip("README.md is not written yet")
    text = readme.read_text()
    assert [i for i in hook_ids() if i not in text] == []


def test_every_hook_and_guard_command_is_in_the_guards_page() -> None:
    text = GUARDS.read_text()
    for name in [*hook_ids(), "capsule check", "capsule install-hook", "hooks/github-workflow.yml"]:
        assert name in text, name


@pytest.mark.parametrize("name", ["HEADING_LINE", "DELETION_LINE", "RECORD_LINE", "POLICY_LINE"])
def test_the_failure_lines_shown_are_the_ones_printed(name: str) -> None:
    # The lines tests/test_hooks.py gets from the hooks, for the same scenarios.
    import test_hooks

    assert getattr(test_hooks, name) in GUARDS.read_text()


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def runs(job: dict) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def test_workflow_checks_every_packet() -> None:
    assert "capsule check --all" in runs(workflow()["jobs"]["check"])


def test_workflow_audit_shards_cover_the_matrix() -> None:
    audit = workflow()["jobs"]["audit"]
    shards = audit["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    assert audit["strategy"]["fail-fast"] is False
    [command] = [r for r in runs(audit) if r.startswith("capsule audit")]
    assert command == f"capsule audit --shard ${{{{ matrix.shard }}}}/{len(shards)}"
    # Records replay at their own commits: the whole history must be fetched.
    checkout = next(s for s in audit["steps"] if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0


def test_workflow_commands_parse() -> None:
    for job in workflow()["jobs"].values():
        for command in runs(job):
            argv = shlex.split(command.replace("${{ matrix.shard }}", "1"))
            if argv[0] != "capsule":
                continue
            if argv[1] not in COMMANDS:
                # capsule audit arrives with the history work; parsed once it is here.
                assert argv[1] == "audit"
                continue
            build_parser().parse_args(argv[1:])
