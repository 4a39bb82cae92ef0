"""Replay and audit read git objects only: nothing in the repository runs.

The history below is armed: its .gitattributes route every path through a
filter and a textconv driver, the repository config defines them together
with an fsmonitor and hooks, and the commit carries conftest.py,
sitecustomize.py, usercustomize.py and setup.py. Every one of them writes a
file into a sentinel folder if it is ever executed. The last step fires the
traps on purpose, to show they are live.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from support.gitrepo import POLICY, ROADMAP, Repo, packet_yaml
from support.history import record

PYTHON_TRAPS = ("conftest.py", "sitecustomize.py", "usercustomize.py", "setup.py")
HOOKS = ("post-checkout", "post-merge", "pre-commit", "post-commit", "reference-transaction")


def _arm(repo: Repo, sentinels: Path, bin_dir: Path) -> None:
    trap = bin_dir / "trap"
    # Record that it ran, then behave as a pass-through filter.
    trap.write_text(f'#!/bin/sh\ntouch "{sentinels}/$1"\ncat\n')
    trap.chmod(trap.stat().st_mode | stat.S_IXUSR)
    hooks = bin_dir / "hooks"
    hooks.mkdir()
    for name in HOOKS:
        hook = hooks / name
        hook.write_text(f'#!/bin/sh\ntouch "{sentinels}/hook-{name}"\n')
        hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    for key, value in {
        "filter.trap.clean": f"{trap} clean",
        "filter.trap.smudge": f"{trap} smudge",
        "filter.trap.required": "true",
        "diff.trap.textconv": f"{trap} textconv",
        "core.fsmonitor": f"{trap} fsmonitor",
        "core.hooksPath": str(hooks),
    }.items():
        repo.git("config", key, value)


def _history(repo: Repo, sentinels: Path) -> None:
    repo.write(".gitattributes", "* filter=trap diff=trap\n")
    for name in PYTHON_TRAPS:
        repo.write(name, f"open({str(sentinels / name)!r}, 'w').close()\n")
    repo.write("policies/capsule.yml", POLICY)
    repo.write("docs/roadmap.md", ROADMAP)
    repo.write("docs/notes.md", "# Notes\n\nSome notes.\n")
    # The Python files are sources too: replay reads their bytes, never runs them.
    reads = ["docs/roadmap.md#phase-2", "setup.py", "conftest.py"]
    repo.write("packets/P-1/packet.yml", packet_yaml("P-1", reads))
    repo.write("packets/P-1/context.md", "# Context\n")
    repo.commit("an armed history")


def test_replay_and_audit_never_run_anything(cli, tmp_path: Path) -> None:
    sentinels = tmp_path / "sentinels"
    sentinels.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    repo = Repo(tmp_path / "armed")
    _history(repo, sentinels)
    path = record(cli, repo)
    repo.commit("the record")
    # A second, distinct record blob: with two, `--jobs 2` really replays on two
    # worker processes (one record is replayed in the parent process).
    repo.write("setup.py", f"open({str(sentinels / 'setup.py')!r}, 'w').close()  # v2\n")
    repo.commit("setup.py changes")
    second = record(cli, repo)
    repo.commit("the second record")
    _arm(repo, sentinels, bin_dir)
    assert list(sentinels.iterdir()) == []

    # In process.
    assert cli(["replay", path], cwd=repo.path).code == 0
    assert cli(["audit"], cwd=repo.path).code == 0
    assert cli(["audit", "--jobs", "2"], cwd=repo.path).code == 0
    assert cli(["replay", "../" + path], cwd=repo.path / "docs").code == 0
    assert cli(["replay", second], cwd=repo.path).code == 0

    # The installed console script, in a fresh interpreter whose cwd is the repository.
    script = Path(sys.executable).with_name("capsule")
    assert script.exists(), script
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    for argv, cwd in [
        (["replay", path], repo.path),
        (["replay", path, "--json", "--repo", "."], repo.path),
        (["audit"], repo.path),
        (["audit", "--jobs", "2", "--json"], repo.path),
        (["replay", "../" + path], repo.path / "docs"),
    ]:
        done = subprocess.run(
            [str(script), *argv], cwd=cwd, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
        if argv[:3] == ["audit", "--jobs", "2"]:
            report = json.loads(done.stdout)
            assert (report["jobs"], report["counts"]["blobs"]) == (2, 2)
            assert report["counts"]["identical"] == 2

    assert sorted(p.name for p in sentinels.iterdir()) == []

    # The traps are live: git's own checkout and an import from that cwd fire them.
    (repo.path / "docs/notes.md").unlink()
    repo.git("checkout", "--", "docs/notes.md")
    subprocess.run([sys.executable, "-c", "import conftest"], cwd=repo.path, env=env, check=True)
    subprocess.run(
        [sys.executable, "-c", "pass"], cwd=repo.path, env={**env, "PYTHONPATH": "."}, check=True
    )
    fired = {p.name for p in sentinels.iterdir()}
    assert {"smudge", "conftest.py", "sitecustomize.py", "hook-post-checkout"} <= fired, fired
