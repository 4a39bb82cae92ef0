"""Files the tool writes (issue 9, items 4 and 5): only a regular file (or
nothing) is ever replaced, and no temp file is left where a commit picks it up."""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from capsule_hooks import records
from governance.errors import CapsuleError
from governance.output import write_atomic
from support.gitrepo import Repo, Result

PACKET = "packets/P-1/packet.yml"


def make_fifo(path: Path) -> None:
    os.mkfifo(path)


def make_symlink(path: Path) -> None:
    victim = path.parent / "victim.txt"
    victim.write_text("precious\n")
    path.symlink_to(victim)


def make_device(path: Path) -> None:
    # The major and minor numbers of /dev/null: the kind of node `-o /dev/full` replaced.
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))


def make_directory(path: Path) -> None:
    path.mkdir()
    (path / "inside.txt").write_text("kept\n")


KINDS: dict[str, tuple[Callable[[Path], None], Callable[[int], bool]]] = {
    "fifo": (make_fifo, stat.S_ISFIFO),
    "symlink": (make_symlink, stat.S_ISLNK),
    "char-device": (make_device, stat.S_ISCHR),
    "directory": (make_directory, stat.S_ISDIR),
}


def untouched(path: Path, kind: str) -> None:
    assert KINDS[kind][1](os.lstat(path).st_mode)
    if kind == "symlink":
        assert (path.parent / "victim.txt").read_text() == "precious\n"
    if kind == "directory":
        assert (path / "inside.txt").read_text() == "kept\n"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_write_atomic_refuses_what_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "target"
    KINDS[kind][0](target)
    with pytest.raises(CapsuleError) as caught:
        write_atomic(str(target), b"data\n")
    assert caught.value.code == "output_not_file"
    untouched(target, kind)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["target", *(["victim.txt"] if kind == "symlink" else [])]
    )


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_build_output_refuses_what_is_not_a_regular_file(
    cli, repo: Repo, tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "out" / "capsule.json"
    target.parent.mkdir()
    KINDS[kind][0](target)
    result = cli(["build", PACKET, "-o", str(target), "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "output_not_file"
    untouched(target, kind)


def test_build_output_replaces_a_regular_file(cli, repo: Repo, tmp_path: Path) -> None:
    target = tmp_path / "capsule.json"
    target.write_text("old\n")
    assert cli(["build", PACKET, "-o", str(target)], cwd=repo.path).code == 0
    assert target.read_bytes().startswith(b'{"budget":')


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_install_hook_force_refuses_what_is_not_a_regular_file(cli, repo: Repo, kind: str) -> None:
    hooks = repo.path / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    target = hooks / "pre-commit"
    KINDS[kind][0](target)
    result = cli(["install-hook", "--force", "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "output_not_file"
    untouched(target, kind)
    # All or nothing: the other hook was not written either.
    assert not (hooks / "pre-merge-commit").exists()


def _killed_mid_write(repo: Repo, *argv: str) -> subprocess.CompletedProcess[str]:
    # RLIMIT_FSIZE kills the writer with SIGXFSZ partway through its first
    # write: what `kill -9` during a write leaves behind, deterministically.
    # (Python ignores SIGXFSZ at start; the wrapper restores the default.)
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))

    script = (
        "import signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_DFL); "
        "from governance.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    return subprocess.run(
        [sys.executable, "-c", script, *argv],
        cwd=repo.path,
        preexec_fn=limit,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_record_write_killed_midway_leaves_nothing_to_commit(repo: Repo) -> None:
    done = _killed_mid_write(repo, "build", PACKET, "--record")
    assert done.returncode == -signal.SIGXFSZ
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""


def test_an_output_write_killed_midway_leaves_nothing_to_commit(repo: Repo) -> None:
    done = _killed_mid_write(repo, "build", PACKET, "-o", "docs/capsule.json")
    assert done.returncode == -signal.SIGXFSZ
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""


@pytest.fixture
def records_hook(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[[Repo], Result]:
    def run(repo: Repo) -> Result:
        monkeypatch.chdir(repo.path)
        capsys.readouterr()
        code = records.main([])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.mark.parametrize(
    "name",
    [".capsule-k2j3h4.tmp", "notes.txt", "e6e3918d4eee.json.tmp", "sub/e6e3918d4eee.json",
     "E6E3918D4EEE.json.sig", "e6e3918d4eee.sig"],
)  # fmt: skip
def test_records_hook_refuses_what_is_not_a_record(records_hook, repo: Repo, name: str) -> None:
    path = f"packets/P-1/capsules/{name}"
    repo.write(path, "left behind\n")
    repo.git("add", "-A")
    result = records_hook(repo)
    assert result.code == 2
    assert f"{path}: {path}: not_a_record: " in result.out


def test_records_hook_allows_a_signature_beside_a_record(cli, records_hook, repo: Repo) -> None:
    built = cli(["build", PACKET, "--record", "--json"], cwd=repo.path)
    record = json.loads(built.out)["record"]
    repo.write(record + ".sig", "-----BEGIN SSH SIGNATURE-----\n")
    repo.git("add", "-A")
    result = records_hook(repo)
    assert "not_a_record" not in result.out
    assert result.code == 0, result.out
