"""The hooks under the real pre-commit framework.

A temp git copy of this project is the hook repository; a consumer repository
points its .pre-commit-config.yaml at it. pre-commit installs ``language:
python`` hooks by pip-installing the hook repository (and its dependencies)
into a virtualenv: that happens once per session, in a shared PRE_COMMIT_HOME.
"""

from __future__ import annotations

import os
import secrets
import shutil
import string
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from support.gitrepo import Repo, packet_yaml
from support.history import record

pytestmark = [pytest.mark.integration, pytest.mark.slow]

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
        for key in ("files", "types", "types_or", "always_run", "require_serial", "pass_filenames"):
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


def test_a_staged_secret_is_refused_by_the_hook_as_installed(consumer) -> None:
    # The hook's environment is what the manifest installs: detect-secrets
    # comes with it (additional_dependencies), so the scan runs.
    repo, run = consumer
    key = "AKIA" + "".join(secrets.choice(string.ascii_uppercase + "234567") for _ in range(16))
    repo.write("docs/notes.md", f"# Notes\n\naws_access_key_id = {key}\n")
    repo.git("add", "docs/notes.md")
    done = run()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "docs/notes.md: source_secret: line 3 (AWS Access Key)" in done.stdout
    assert "secret_scan_unavailable" not in done.stdout + done.stderr
    assert key not in done.stdout + done.stderr


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


# --- issue 9, items 11 to 13: every commit, every push, no file names ----------------


def test_every_hook_takes_no_file_names_and_runs_on_every_commit() -> None:
    hooks = {hook["id"]: hook for hook in manifest()}
    assert sorted(hooks) == ["capsule-packets", "capsule-push", "capsule-records"]
    for hook in hooks.values():
        assert hook["always_run"] is True, hook["id"]
        assert hook["pass_filenames"] is False, hook["id"]
        assert "files" not in hook, hook["id"]
        assert "types" not in hook, hook["id"]
    assert hooks["capsule-push"]["stages"] == ["pre-push"]


@pytest.fixture
def installed(repo: Repo, hook_repo: tuple[Path, str], pre_commit_home: Path):
    """A consumer repository with all three hooks installed by pre-commit as git
    hooks (pre-commit, pre-merge-commit, pre-push), and a bare remote."""
    path, rev = hook_repo
    ids = ["capsule-packets", "capsule-records", "capsule-push"]
    config = {"repos": [{"repo": str(path), "rev": rev, "hooks": [{"id": i} for i in ids]}]}
    repo.write(".pre-commit-config.yaml", yaml.safe_dump(config, sort_keys=False))
    repo.commit("use the capsule hooks")
    env = {**os.environ, "PRE_COMMIT_HOME": str(pre_commit_home), "PRE_COMMIT_COLOR": "never"}
    for hook_type in ("pre-commit", "pre-merge-commit", "pre-push"):
        done = pre_commit("install", "--hook-type", hook_type, cwd=repo.path, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    remote = repo.path.parent / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo.git("remote", "add", "origin", str(remote))

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", *args], cwd=repo.path, env=env, capture_output=True, text=True, check=False
        )

    return repo, git, remote


def test_a_forged_record_beside_a_resolved_merge_conflict_is_refused(installed, cli) -> None:
    repo, git, _ = installed
    repo.git("checkout", "-q", "-b", "side")
    repo.write("docs/notes.md", "# Notes\n\nSide.\n")
    repo.git("commit", "-q", "--no-verify", "-am", "side")
    repo.git("checkout", "-q", "main")
    repo.write("docs/notes.md", "# Notes\n\nMain.\n")
    repo.git("commit", "-q", "--no-verify", "-am", "main")
    assert git("merge", "side").returncode != 0  # conflict in docs/notes.md
    repo.write("docs/notes.md", "# Notes\n\nBoth.\n")
    record = f"packets/P-1/capsules/{repo.head()[:12]}.json"
    (repo.path / record).parent.mkdir(parents=True)
    assert cli(["build", PACKET, "--at", repo.head(), "-o", record], cwd=repo.path).code == 0
    genuine = (repo.path / record).read_bytes()
    (repo.path / record).write_bytes(genuine.replace(b'"question":"', b'"question":"Now: ', 1))
    repo.git("add", "-A")
    done = git("commit", "--no-edit")
    assert done.returncode != 0, done.stdout + done.stderr
    assert "- hook id: capsule-records" in done.stdout + done.stderr
    assert f"{record}: " in done.stdout + done.stderr


def test_all_files_in_a_large_repository_reports_each_failure_once(consumer) -> None:
    repo, run = consumer
    # More file names than pre-commit passes in one command line (128 KiB).
    for n in range(1500):
        repo.write(f"docs/filler/{n:04d}-{'x' * 90}.md", f"# Filler {n}\n")
    roadmap = repo.path / "docs/roadmap.md"
    roadmap.write_text(roadmap.read_text().replace("## Phase 2", "## Phase Two"))
    repo.git("add", "-A")
    done = run("--all-files")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines().count(HEADING_LINE) == 1


def test_pre_push_refuses_a_heading_renamed_without_the_commit_hooks(installed) -> None:
    repo, git, remote = installed
    pushed = git("push", "-q", "origin", "main")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    # As a rebase's conflict resolution, an amend or --no-verify would land it.
    roadmap = repo.path / "docs/roadmap.md"
    roadmap.write_text(roadmap.read_text().replace("## Phase 2", "## Phase Two"))
    repo.git("commit", "-q", "--no-verify", "-am", "rename, unchecked")
    done = git("push", "origin", "main")
    assert done.returncode != 0
    assert "- hook id: capsule-push" in done.stdout + done.stderr
    assert (
        "packets/P-1/packet.yml: docs/roadmap.md#phase-2: heading_missing: "
        in done.stdout + done.stderr
    )
    remote_main = subprocess.run(
        ["git", "--git-dir", str(remote), "rev-parse", "main"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert remote_main != repo.head()


def test_pre_push_refuses_a_record_whose_commit_was_rebased_away(installed, cli) -> None:
    repo, git, _ = installed
    assert git("push", "-q", "origin", "main").returncode == 0
    repo.git("checkout", "-q", "-b", "side")
    repo.write("docs/notes.md", "# Notes\n\nOn the side branch.\n")
    repo.git("commit", "-q", "--no-verify", "-am", "side work")
    side = repo.head()
    data = (repo.path / record(cli, repo)).read_bytes()
    repo.git("checkout", "-q", "-f", "main")
    repo.git("clean", "-q", "-fd")
    path = f"packets/P-1/capsules/{side[:12]}.json"
    repo.write(path, data)
    repo.git("add", "-A")
    repo.git("commit", "-q", "--no-verify", "-m", "the record, without its commit")
    done = git("push", "origin", "main")
    assert done.returncode != 0
    assert f"{path}: $: commit_unreachable: " in done.stdout + done.stderr


def test_install_hook_pre_push_checks_what_is_pushed(repo: Repo, cli) -> None:
    assert cli(["install-hook"], cwd=repo.path).code == 0
    remote = repo.path.parent / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo.git("remote", "add", "origin", str(remote))
    roadmap = repo.path / "docs/roadmap.md"
    roadmap.write_text(roadmap.read_text().replace("## Phase 2", "## Phase Two"))
    repo.git("commit", "-q", "--no-verify", "-am", "rename, unchecked")
    done = subprocess.run(
        ["git", "push", "origin", "main"], cwd=repo.path, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert (
        "packets/P-1/packet.yml: docs/roadmap.md#phase-2: heading_missing: "
        in done.stdout + done.stderr
    )
    # The summary names what it read: the pushed commit, not the index.
    assert (
        "capsule-push: 1 failure in 1 of 1 packet or record checked against the pushed "
        f"refs/heads/main at {repo.head()[:12]}\n"
    ) in done.stderr
    # A clean push passes.
    roadmap.write_text(roadmap.read_text().replace("## Phase Two", "## Phase 2"))
    repo.git("commit", "-q", "--no-verify", "-am", "renamed back")
    done = subprocess.run(
        ["git", "push", "origin", "main"], cwd=repo.path, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
