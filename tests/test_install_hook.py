from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from gitrepo import Repo, packet_yaml
from governance.githook import MARKER, hook_script

PACKET = "packets/P-1/packet.yml"


def install(cli, repo: Repo, *args: str, cwd: Path | None = None):
    return cli(["install-hook", *args], cwd=cwd or repo.path)


def git_hooks_dir(repo: Repo, cwd: Path | None = None) -> Path:
    """Where git itself looks for hooks."""
    where = Path(cwd or repo.path)
    out = repo.git("-C", str(where), "rev-parse", "--git-path", "hooks")
    return (where / out).resolve()


def executable(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IXUSR)


def test_installs_an_executable_hook(cli, repo: Repo) -> None:
    result = install(cli, repo)
    hook = git_hooks_dir(repo) / "pre-commit"
    assert result.code == 0
    assert result.err == f"capsule: installed {hook}\n"
    assert hook.read_text() == hook_script()
    assert MARKER in hook.read_text()
    assert sys.executable in hook.read_text()
    assert executable(hook)


def test_installing_again_changes_nothing(cli, repo: Repo) -> None:
    install(cli, repo)
    hook = git_hooks_dir(repo) / "pre-commit"
    before = hook.stat()
    result = install(cli, repo, "--json")
    assert result.code == 0
    assert json.loads(result.out) == {"action": "unchanged", "path": str(hook)}
    assert hook.stat().st_mtime_ns == before.st_mtime_ns


def test_an_identical_but_not_executable_hook_is_made_executable(cli, repo: Repo) -> None:
    hook = git_hooks_dir(repo) / "pre-commit"
    hook.write_text(hook_script())
    hook.chmod(0o644)
    assert install(cli, repo).code == 0
    assert executable(hook)


@pytest.mark.parametrize(
    ("existing", "said"),
    [
        ("#!/bin/sh\nexec make lint\n", "a different hook"),
        (hook_script("/elsewhere/bin/python"), "a git-capsule hook written for another"),
    ],
)
def test_refuses_a_different_hook_without_force(cli, repo: Repo, existing, said) -> None:
    hook = git_hooks_dir(repo) / "pre-commit"
    hook.write_text(existing)
    result = install(cli, repo, "--json")
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["code"] == "hook_exists"
    assert said in error["message"]
    assert "--force" in error["message"]
    assert hook.read_text() == existing
    forced = install(cli, repo, "--force")
    assert forced.code == 0
    assert forced.err.startswith("capsule: replaced the previous hook with ")
    assert hook.read_text() == hook_script()


def test_a_symlinked_hook_is_different_and_force_replaces_the_link(cli, repo, tmp_path) -> None:
    shared = tmp_path / "shared-hook"
    shared.write_text("#!/bin/sh\n")
    hook = git_hooks_dir(repo) / "pre-commit"
    hook.symlink_to(shared)
    assert install(cli, repo).code == 2
    assert install(cli, repo, "--force").code == 0
    assert not hook.is_symlink()
    assert shared.read_text() == "#!/bin/sh\n"


@pytest.mark.parametrize("configured", [".githooks", "tools/hooks", "ABSOLUTE"])
def test_respects_core_hooks_path(cli, repo: Repo, tmp_path: Path, configured: str) -> None:
    if configured == "ABSOLUTE":
        configured = str(tmp_path / "central-hooks")
    repo.git("config", "core.hooksPath", configured)
    result = install(cli, repo, cwd=repo.path / "docs")  # from a subfolder too
    assert result.code == 0
    assert (git_hooks_dir(repo) / "pre-commit").read_text() == hook_script()


def test_a_linked_worktree_installs_in_the_shared_hooks(cli, repo: Repo, tmp_path) -> None:
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", str(linked))
    assert install(cli, repo, cwd=linked).code == 0
    assert git_hooks_dir(repo, linked) == git_hooks_dir(repo)
    assert (git_hooks_dir(repo) / "pre-commit").read_text() == hook_script()


# --- end to end: git runs the hook --------------------------------------------------


def commit(repo: Repo, *args: str):
    import subprocess

    return subprocess.run(
        ["git", "commit", "-q", "-m", "change", *args],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )


def test_git_commit_runs_the_checks(cli, repo: Repo) -> None:
    assert install(cli, repo).code == 0
    roadmap = repo.path / "docs/roadmap.md"
    roadmap.write_text(roadmap.read_text().replace("## Phase 2", "## Phase Two"))
    repo.git("add", "docs/roadmap.md")
    done = commit(repo)
    assert done.returncode == 1
    # git sends a hook's stdout to its stderr.
    assert done.stderr.splitlines()[0:1] == [
        "packets/P-1/packet.yml: docs/roadmap.md#phase-2: heading_missing: no heading with "
        "slug 'phase-2' in docs/roadmap.md; restore the heading, or update the locator in "
        "the packet"
    ]
    head = repo.head()
    # `git commit -a` stages into another index: the hook must read that one.
    repo.git("reset", "-q")
    done = commit(repo, "-a")
    assert done.returncode == 1
    assert "heading_missing" in done.stderr
    assert repo.head() == head
    # Fix the locator: the commit goes through.
    repo.write(PACKET, packet_yaml("P-1", ["docs/roadmap.md#phase-two", "docs/notes.md"]))
    done = commit(repo, "-a")
    assert done.returncode == 0, done.stdout + done.stderr
    assert repo.head() != head


def test_a_yaml_py_in_the_repository_does_not_shadow_the_library(cli, repo: Repo) -> None:
    # git runs hooks from the top of the work tree: the hook's Python must not
    # import (and so run) a module of the repository it checks.
    assert install(cli, repo).code == 0
    repo.write("yaml.py", "raise SystemExit('shadowed: yaml.py of the repository ran')\n")
    roadmap = repo.path / "docs/roadmap.md"
    roadmap.write_text(roadmap.read_text().replace("## Phase 2", "## Phase Two"))
    repo.git("add", "docs/roadmap.md")
    done = commit(repo)
    assert done.returncode == 1
    assert "shadowed" not in done.stderr
    assert "docs/roadmap.md#phase-2: heading_missing: " in done.stderr
    # And a good commit goes through, yaml.py and all.
    repo.write(PACKET, packet_yaml("P-1", ["docs/roadmap.md#phase-two", "docs/notes.md"]))
    repo.git("add", "-A")
    done = commit(repo)
    assert done.returncode == 0, done.stdout + done.stderr


def test_git_commit_refuses_a_forged_record(cli, repo: Repo) -> None:
    assert install(cli, repo).code == 0
    record = f"packets/P-1/capsules/{repo.head()[:12]}.json"
    (repo.path / record).parent.mkdir(parents=True)
    assert cli(["build", PACKET, "-o", record], cwd=repo.path).code == 0
    genuine = (repo.path / record).read_bytes()
    (repo.path / record).write_bytes(genuine.replace(b'"question":"', b'"question":"Now: ', 1))
    repo.git("add", record)
    done = commit(repo)
    assert done.returncode == 1
    assert done.stderr.startswith(f"{record}: ")
    (repo.path / record).write_bytes(genuine)
    repo.git("add", record)
    assert commit(repo).returncode == 0


def test_the_hook_says_what_to_do_when_git_capsule_is_gone(repo: Repo, tmp_path) -> None:
    import subprocess

    hook = tmp_path / "pre-commit"
    hook.write_text(hook_script(str(tmp_path / "gone/python")))
    hook.chmod(0o755)
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [str(hook)], cwd=repo.path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert "git-capsule not found" in done.stderr
    assert "capsule install-hook --force" in done.stderr
