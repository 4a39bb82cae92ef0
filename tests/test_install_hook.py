from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from governance.guards.githook import HOOKS, MARKER, hook_script
from support.gitrepo import Repo, packet_yaml

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


def test_installs_executable_pre_commit_and_pre_merge_commit_hooks(cli, repo: Repo) -> None:
    assert HOOKS == ("pre-commit", "pre-merge-commit", "pre-push")
    result = install(cli, repo)
    hooks = [git_hooks_dir(repo) / name for name in HOOKS]
    assert result.code == 0
    assert result.err == "".join(f"capsule: installed {hook}\n" for hook in hooks)
    for hook in hooks:
        assert hook.read_text() == hook_script()
        assert MARKER in hook.read_text()
        assert sys.executable in hook.read_text()
        assert executable(hook)


def test_installing_again_changes_nothing(cli, repo: Repo) -> None:
    install(cli, repo)
    hooks = [git_hooks_dir(repo) / name for name in HOOKS]
    before = [hook.stat() for hook in hooks]
    result = install(cli, repo, "--json")
    assert result.code == 0
    assert json.loads(result.out) == {
        "hooks": [
            {"action": "unchanged", "hook": name, "path": str(hook)}
            for name, hook in zip(HOOKS, hooks, strict=True)
        ]
    }
    assert [hook.stat().st_mtime_ns for hook in hooks] == [b.st_mtime_ns for b in before]


def test_a_missing_pre_merge_commit_hook_is_added(cli, repo: Repo) -> None:
    # As after installing with a version that wrote only the pre-commit hook.
    install(cli, repo)
    (git_hooks_dir(repo) / "pre-merge-commit").unlink()
    result = install(cli, repo, "--json")
    assert [h["action"] for h in json.loads(result.out)["hooks"]] == [
        "unchanged",
        "installed",
        "unchanged",
    ]


def test_an_identical_but_not_executable_hook_is_made_executable(cli, repo: Repo) -> None:
    hook = git_hooks_dir(repo) / "pre-commit"
    hook.write_text(hook_script())
    hook.chmod(0o644)
    assert install(cli, repo).code == 0
    assert executable(hook)


@pytest.mark.parametrize("name", HOOKS)
@pytest.mark.parametrize(
    ("existing", "said"),
    [
        ("#!/bin/sh\nexec make lint\n", "a different hook"),
        (hook_script("/elsewhere/bin/python"), "a git-capsule hook written for another"),
    ],
)
def test_refuses_a_different_hook_without_force(cli, repo: Repo, name, existing, said) -> None:
    hook = git_hooks_dir(repo) / name
    hook.write_text(existing)
    result = install(cli, repo, "--json")
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["code"] == "hook_exists"
    assert error["path"] == str(hook)
    assert said in error["message"]
    assert "--force" in error["message"]
    assert hook.read_text() == existing
    # Refused as a whole: neither hook is written.
    assert [p.name for p in git_hooks_dir(repo).iterdir() if p.name in HOOKS] == [name]
    forced = install(cli, repo, "--force")
    assert forced.code == 0
    assert f"capsule: replaced the previous hook with {hook}\n" in forced.err
    assert hook.read_text() == hook_script()


def test_a_symlinked_hook_is_never_replaced_even_with_force(cli, repo, tmp_path) -> None:
    shared = tmp_path / "shared-hook"
    shared.write_text("#!/bin/sh\n")
    hook = git_hooks_dir(repo) / "pre-commit"
    hook.symlink_to(shared)
    assert install(cli, repo).code == 2
    result = install(cli, repo, "--force", "--json")
    assert result.code == 2
    assert '"output_not_file"' in result.out
    assert hook.is_symlink()
    assert shared.read_text() == "#!/bin/sh\n"


@pytest.mark.parametrize("configured", [".githooks", "tools/hooks", "ABSOLUTE"])
def test_respects_core_hooks_path(cli, repo: Repo, tmp_path: Path, configured: str) -> None:
    if configured == "ABSOLUTE":
        configured = str(tmp_path / "central-hooks")
    repo.git("config", "core.hooksPath", configured)
    result = install(cli, repo, cwd=repo.path / "docs")  # from a subfolder too
    assert result.code == 0
    for name in HOOKS:
        assert (git_hooks_dir(repo) / name).read_text() == hook_script()


def test_a_linked_worktree_installs_in_the_shared_hooks(cli, repo: Repo, tmp_path) -> None:
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", str(linked))
    assert install(cli, repo, cwd=linked).code == 0
    assert git_hooks_dir(repo, linked) == git_hooks_dir(repo)
    assert (git_hooks_dir(repo) / "pre-commit").read_text() == hook_script()


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o755), (0o177, 0o700), (0o077, 0o700)])
def test_the_hooks_are_executable_whatever_the_umask(cli, repo: Repo, umask, mode) -> None:
    previous = os.umask(umask)
    try:
        result = install(cli, repo)
        again = install(cli, repo, "--json")
    finally:
        os.umask(previous)
    assert result.code == 0
    for name in HOOKS:
        hook = git_hooks_dir(repo) / name
        # The owner can always run it; others read and run it as the umask allows.
        assert stat.S_IMODE(hook.stat().st_mode) == mode
        assert os.access(hook, os.X_OK)
    assert [h["action"] for h in json.loads(again.out)["hooks"]] == [
        "unchanged",
        "unchanged",
        "unchanged",
    ]


# --- end to end: git runs the hook --------------------------------------------------


def commit(repo: Repo, *args: str):
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
        "slug 'phase-2' in docs/roadmap.md; nearest: docs/roadmap.md#phase-1 (line 5), "
        "docs/roadmap.md#phase-3 (line 17), docs/roadmap.md#phase-two (line 9); `capsule "
        "outline docs/roadmap.md` lists every heading and its selector; restore the heading, or "
        "update the locator in the packet"
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


def merge(repo: Repo, *args: str):
    return subprocess.run(
        ["git", "merge", "-q", "--no-edit", *args],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )


def test_git_merge_runs_the_checks(cli, repo: Repo) -> None:
    # A merge that needs no conflict resolution commits without running the
    # pre-commit hook: pre-merge-commit runs the same checks.
    assert install(cli, repo).code == 0
    repo.git("checkout", "-q", "-b", "side")
    repo.write("docs/side.md", "# Side\n")
    side = repo.commit("side")
    # A genuine record of a commit of the branch being merged passes.
    record = f"packets/P-1/capsules/{side[:12]}.json"
    (repo.path / record).parent.mkdir(parents=True)
    assert cli(["build", PACKET, "-o", record], cwd=repo.path).code == 0
    repo.git("add", record)
    assert commit(repo).returncode == 0
    roadmap = repo.path / "docs/roadmap.md"
    roadmap.write_text(roadmap.read_text().replace("## Phase 2", "## Phase Two"))
    repo.git("add", "docs/roadmap.md")
    assert commit(repo, "--no-verify").returncode == 0  # the branch skipped its hook
    repo.git("checkout", "-q", "main")
    repo.write("docs/main.md", "# Main\n")
    repo.commit("main")
    head = repo.head()
    done = merge(repo, "side")
    assert done.returncode != 0
    assert "docs/roadmap.md#phase-2: heading_missing: " in done.stderr
    assert repo.head() == head
    repo.git("merge", "--abort")
    # Without the broken commit, the merge (and its record) goes through.
    done = merge(repo, "side~1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert repo.git("rev-parse", "HEAD^2") == repo.git("rev-parse", "side~1")


@pytest.mark.parametrize("name", HOOKS)
def test_a_pre_commit_framework_hook_is_refused_with_the_way_to_run_both(
    cli, repo: Repo, name: str
) -> None:
    # The hook `pre-commit install` writes, as the framework writes it:
    # --force would replace it and every other check it runs would stop.
    installed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install", "--hook-type", name],
        cwd=repo.path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    hook = git_hooks_dir(repo) / name
    before = hook.read_bytes()
    result = install(cli, repo, "--json")
    assert result.code == 2
    message = json.loads(result.out)["error"]["message"]
    assert "pre-commit framework hook" in message
    assert ".pre-commit-config.yaml" in message
    assert "--force would replace it" in message
    assert hook.read_bytes() == before
