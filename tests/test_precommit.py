"""The hooks under the real pre-commit framework.

A temp git copy of this project is the hook repository; a consumer repository
points its .pre-commit-config.yaml at it. pre-commit installs ``language:
python`` hooks by pip-installing the hook repository (and its dependencies)
into a virtualenv: that happens once per session, in a shared PRE_COMMIT_HOME.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from support.gitrepo import Repo, packet_yaml

ROOT = Path(__file__).resolve().parents[1]
PACKET = "packets/P-1/packet.yml"
HEADING_LINE = (
    "packets/P-1/packet.yml: docs/roadmap.md#phase-2: heading_missing: no heading with slug "
    "'phase-2' in docs/roadmap.md; nearest: docs/roadmap.md#phase-1 (line 5), "
    "docs/roadmap.md#phase-3 (line 17), docs/roadmap.md#phase-two (line 9); `capsule outline "
    "docs/roadmap.md` lists every heading and its selector; restore the heading, or update the "
    "locator in the packet"
)


def pre_commit(*args: str, cwd: Path, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


# --- this repository's own files -------------------------------------------------


def manifest() -> list[dict]:
    return yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())


def test_validate_manifest() -> None:
    done = pre_commit("validate-manifest", ".pre-commit-hooks.yaml", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_validate_our_own_config() -> None:
    done = pre_commit("validate-config", ".pre-commit-config.yaml", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_hook_is_a_console_script_and_runs_on_our_own_packets() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    local = {
        h["id"]: h for repo in config["repos"] if repo["repo"] == "local" for h in repo["hooks"]
    }
    for hook in manifest():
        assert hook["language"] == "python"
        assert hook["entry"] in scripts
        # This repository runs the same hook, from its own .venv.
        ours = local[hook["id"]]
        assert ours["entry"] == f".venv/bin/{hook['entry']}"
        for key in ("files", "types", "types_or", "always_run", "require_serial"):
            assert ours.get(key) == hook.get(key), (hook["id"], key)


# --- a consumer repository -----------------------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Hook Repo",
        "GIT_AUTHOR_EMAIL": "hooks@example.invalid",
        "GIT_COMMITTER_NAME": "Hook Repo",
        "GIT_COMMITTER_EMAIL": "hooks@example.invalid",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A git copy of this project as it is now (uncommitted edits included)."""
    copy = tmp_path_factory.mktemp("hook-repo")
    junk = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("pyproject.toml", ".pre-commit-hooks.yaml", "README.md"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, copy / name)
    for folder in ("governance", "hooks"):
        shutil.copytree(ROOT / folder, copy / folder, ignore=junk)
    _git(copy, "init", "-q", "-b", "main")
    _git(copy, "add", "-A")
    _git(copy, "commit", "-q", "-m", "hooks")
    return copy, _git(copy, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Shared by the module's tests, so the hook environment is built once.
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def consumer(repo: Repo, hook_repo: tuple[Path, str], pre_commit_home: Path):
    path, rev = hook_repo
    config = {
        "repos": [
            {
                "repo": str(path),
                "rev": rev,
                "hooks": [{"id": "capsule-packets"}, {"id": "capsule-records"}],
            }
        ]
    }
    repo.write(".pre-commit-config.yaml", yaml.safe_dump(config, sort_keys=False))
    repo.commit("use the capsule hooks")
    env = {**os.environ, "PRE_COMMIT_HOME": str(pre_commit_home), "PRE_COMMIT_COLOR": "never"}

    def run(*args: str):
        return pre_commit("run", *args, cwd=repo.path, env=env)

    return repo, run


def test_a_staged_heading_rename_fails_and_fixing_the_locator_passes(consumer) -> None:
    repo, run = consumer
    roadmap = repo.path / "docs/roadmap.md"
    roadmap.write_text(roadmap.read_text().replace("## Phase 2", "## Phase Two"))
    repo.git("add", "docs/roadmap.md")
    done = run()
    assert done.returncode == 1, done.stdout + done.stderr
    assert HEADING_LINE in done.stdout.splitlines()
    assert "capsule packets still build" in done.stdout
    assert "- hook id: capsule-packets" in done.stdout
    assert "- exit code: 3" in done.stdout

    repo.write(PACKET, packet_yaml("P-1", ["docs/roadmap.md#phase-two", "docs/notes.md"]))
    repo.git("add", PACKET)
    done = run()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "capsule packets still build" in done.stdout


def test_a_staged_deletion_fails_though_pre_commit_passes_no_file(consumer) -> None:
    repo, run = consumer
    repo.git("rm", "-q", "docs/notes.md")
    done = run()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "docs/notes.md: source_missing: docs/notes.md does not exist in the index" in (
        done.stdout
    )


def test_all_files_reads_the_index_and_records_are_replayed(consumer, cli) -> None:
    repo, run = consumer
    record = f"packets/P-1/capsules/{repo.head()[:12]}.json"
    (repo.path / record).parent.mkdir(parents=True)
    assert cli(["build", PACKET, "-o", record], cwd=repo.path).code == 0
    repo.git("add", record)
    done = run("--all-files")
    assert done.returncode == 0, done.stdout + done.stderr
    # A forged record is refused.
    genuine = (repo.path / record).read_bytes()
    (repo.path / record).write_bytes(genuine.replace(b'"question":"', b'"question":"Now: ', 1))
    repo.git("add", record)
    done = run()
    assert done.returncode == 1
    assert f"{record}: " in done.stdout
    assert "- hook id: capsule-records" in done.stdout
    # A record staged as a symbolic link reaches the hook, which refuses it.
    (repo.path / record).unlink()
    (repo.path / "docs/genuine.json").write_bytes(genuine)
    (repo.path / record).symlink_to("../../../docs/genuine.json")
    repo.git("add", "-A")
    done = run()
    assert done.returncode == 1
    assert f"{record}: $: record_not_file: " in done.stdout
