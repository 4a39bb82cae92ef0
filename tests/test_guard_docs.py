"""Documentation that cannot fall behind: hook ids in the README and the guards
page, the failure lines the docs show, and the CI workflow example."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import test_hooks
import yaml

from governance import __version__
from governance.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]
GUARDS = ROOT / "docs/guards.md"
WORKFLOW = ROOT / "hooks/github-workflow.yml"


def hook_ids() -> list[str]:
    return [hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())]


def test_every_hook_has_a_readme_section() -> None:
    headings = {
        line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("#")
    }
    assert [i for i in hook_ids() if f"### `{i}`" not in headings] == []


def test_every_hook_and_guard_command_is_in_the_guards_page() -> None:
    text = GUARDS.read_text()
    for name in [*hook_ids(), "capsule check", "capsule install-hook", "hooks/github-workflow.yml"]:
        assert name in text, name


@pytest.mark.parametrize("name", ["HEADING_LINE", "DELETION_LINE", "RECORD_LINE", "POLICY_LINE"])
def test_the_failure_lines_shown_are_the_ones_printed(name: str) -> None:
    # The lines tests/test_hooks.py gets from the hooks, for the same scenarios.

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
    parsed = 0
    for job in workflow()["jobs"].values():
        for command in runs(job):
            argv = shlex.split(command.replace("${{ matrix.shard }}", "1"))
            if argv[0] != "capsule":
                continue
            assert argv[1] in COMMANDS
            build_parser().parse_args(argv[1:])
            parsed += 1
    assert parsed == 2


def test_workflow_pins_this_version() -> None:
    installs = [r for job in workflow()["jobs"].values() for r in runs(job) if "pip install" in r]
    assert installs
    assert all(r == f"python -m pip install git-capsule=={__version__}" for r in installs)
