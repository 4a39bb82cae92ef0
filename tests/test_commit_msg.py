"""The commit message convention (CONTRIBUTING.md): a subject of at most 72
characters, then a blank line and the body, checked at commit-msg by the
project's own .pre-commit-config.yaml."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from support.gitrepo import Repo

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check_commit_msg.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_commit_msg", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHECK = load()

CASES = [
    ("a subject alone", "Fix the walk\n", []),
    ("subject and body", "Fix the walk\n\nThe detail, with figures.\n", []),
    ("72 characters exactly", "x" * 72 + "\n", []),
    ("73 characters", "x" * 73 + "\n", ["the subject is 73 characters"]),
    ("no blank line", "Fix the walk\nThe detail.\n", ["the second line is not blank"]),
    (
        "both",
        "y" * 100 + "\nbody\n",
        ["the subject is 100 characters", "the second line is not blank"],
    ),
    ("empty", "\n\n", ["the message is empty"]),
    ("only comments", "# Please enter the commit message\n#\n", ["the message is empty"]),
    ("comments after the body", "Fix\n\nBody.\n# a comment git strips\n", []),
    ("leading blank lines", "\n\nFix the walk\n\nBody.\n", []),
    (
        "the diff below the scissors of commit -v",
        "Fix\n\nBody.\n# ------------------------ >8 ------------------------\n"
        + "diff --git a/x b/x\n"
        + "+"
        + "z" * 200
        + "\n",
        [],
    ),
    ("a long body line is fine", "Fix\n\n" + "w" * 300 + "\n", []),
    ("a non-ASCII subject counts characters", "é" * 72 + "\n", []),
]


@pytest.mark.parametrize(("why", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_problems(why: str, text: str, expected: list[str]) -> None:
    found = CHECK.problems(text)
    assert len(found) == len(expected), (why, found)
    for problem, start in zip(found, expected, strict=True):
        assert problem.startswith(start), (why, problem)


@pytest.mark.parametrize(("why", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_script_exits_by_the_same_table(
    why: str, text: str, expected: list[str], tmp_path: Path
) -> None:
    message = tmp_path / "COMMIT_EDITMSG"
    message.write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(message)], capture_output=True, text=True, check=False
    )
    assert done.returncode == (1 if expected else 0), (why, done.stderr)
    assert done.stdout == ""
    for start in expected:
        assert f"commit message: {start}" in done.stderr


def test_a_usage_error_exits_2() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "usage" in done.stderr


def our_hook() -> dict:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    assert "commit-msg" in config["default_install_hook_types"]
    (hook,) = [
        h for repo in config["repos"] for h in repo["hooks"] if h.get("stages") == ["commit-msg"]
    ]
    return hook


def test_our_config_runs_the_script_at_commit_msg() -> None:
    hook = our_hook()
    assert hook["entry"] == ".venv/bin/python scripts/check_commit_msg.py"
    assert hook["language"] == "system"


@pytest.mark.integration
def test_git_commit_refuses_a_long_subject_through_pre_commit(tmp_path: Path) -> None:
    # Our hook as configured, under the real pre-commit framework and a real
    # `git commit`; only the interpreter and the script's path are this
    # checkout's, since the temp repository has no .venv of its own.
    hook = {**our_hook(), "entry": f"{sys.executable} {SCRIPT}"}
    repo = Repo(tmp_path / "repo")
    config = {"repos": [{"repo": "local", "hooks": [hook]}]}
    repo.write(".pre-commit-config.yaml", yaml.safe_dump(config))
    installed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install", "--hook-type", "commit-msg"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    repo.git("add", "-A")
    refused = subprocess.run(
        ["git", "commit", "-q", "-m", "s" * 80, "-m", "body"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode != 0
    assert "the subject is 80 characters" in refused.stdout + refused.stderr
    assert repo.git("rev-list", "--all") == ""
    taken = subprocess.run(
        ["git", "commit", "-q", "-m", "Add the config", "-m", "Why, with figures."],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert taken.returncode == 0, taken.stdout + taken.stderr
    assert repo.git("log", "-1", "--format=%B") == "Add the config\n\nWhy, with figures."
