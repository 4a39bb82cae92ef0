"""Documentation that cannot fall behind: hook ids in the README and the guards
page, the failure lines the docs show, and the CI workflow example."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import test_hooks
import yaml

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
    # The matrix is the shard list alone, so strategy.job-total is its length.
    assert list(audit["strategy"]["matrix"]) == ["shard"]
    steps = [s for s in audit["steps"] if s.get("run", "").startswith("capsule audit")]
    shard = '--shard "${SHARD}/${SHARDS}"'
    # The full history, and a pull request's own range with its base's waivers.
    pull_request = f'capsule audit "origin/${{BASE_REF}}..HEAD" {shard}'
    assert [s["run"] for s in steps] == [f"capsule audit {shard}", pull_request]
    # The shard and the count come from the matrix, through the environment.
    for step in steps:
        assert step["env"]["SHARD"] == "${{ matrix.shard }}"
        assert step["env"]["SHARDS"] == "${{ strategy.job-total }}"
    # Records replay at their own commits: the whole history must be fetched.
    checkout = next(s for s in audit["steps"] if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0


def test_workflow_reports_stale_records() -> None:
    status = workflow()["jobs"]["status"]
    assert status["name"]
    assert runs(status)[-1] == "capsule status"
    # The newest record is found walking history; each is checked at its commit.
    checkout = next(s for s in status["steps"] if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0


def test_workflow_commands_parse() -> None:
    parsed = 0
    for job in workflow()["jobs"].values():
        for command in runs(job):
            filled = command.replace("${SHARD}", "1").replace("${SHARDS}", "4")
            argv = shlex.split(filled.replace("${BASE_REF}", "main"))
            if argv[0] != "capsule":
                continue
            assert argv[1] in COMMANDS
            build_parser().parse_args(argv[1:])
            parsed += 1
    assert parsed == 4


def test_workflow_installs_git_capsule_pinned_by_commit_id() -> None:
    # Issue 9 item 16: never a package name anyone could register, never a tag.
    env = workflow()["env"]
    assert re.fullmatch(r"[0-9a-f]{40}", env["GIT_CAPSULE_COMMIT"])
    assert env["GIT_CAPSULE_REPO"].startswith("https://")
    installs = [r for job in workflow()["jobs"].values() for r in runs(job) if "pip install" in r]
    assert len(installs) == 3
    expected = 'python -m pip install "git-capsule @ git+${GIT_CAPSULE_REPO}@${GIT_CAPSULE_COMMIT}"'
    assert all(r == expected for r in installs)


def test_workflow_actions_are_pinned_by_full_commit_id() -> None:
    steps = [step for job in workflow()["jobs"].values() for step in job["steps"]]
    uses = [step["uses"] for step in steps if "uses" in step]
    assert len(uses) == 6
    for use in uses:
        assert re.fullmatch(r"actions/(checkout|setup-python)@[0-9a-f]{40}", use), use
    # Each pin names its release beside it, for the reader who updates it.
    for line in WORKFLOW.read_text().splitlines():
        if "uses: " in line:
            assert re.search(r"@[0-9a-f]{40} # v\d+\.\d+\.\d+$", line), line


def test_workflow_checkout_keeps_no_credentials() -> None:
    checkouts = [
        step
        for job in workflow()["jobs"].values()
        for step in job["steps"]
        if step.get("uses", "").startswith("actions/checkout@")
    ]
    assert len(checkouts) == 3
    assert all(step["with"]["persist-credentials"] is False for step in checkouts)
