from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from governance.cli import main
from support.gitrepo import POLICY, ROADMAP, Repo, Result, isolated, packet_yaml
from support.history import History, make_history
from support.signing import Key, make_key

# No deadline and no too-slow health check for any property test: on a loaded
# machine (two cores shared by a CI job, or pytest-xdist's workers) one example
# can take a hundred times its usual time, and a test that fails for that
# judges the machine, not the code. Speed is measured by bench/, never here.
settings.register_profile("capsule", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# `pytest tests/test_fuzz.py --hypothesis-profile=fuzz`: a longer fuzzing run,
# each property test's own example count raised to this one.
settings.register_profile("fuzz", parent=settings.get_profile("capsule"), max_examples=2000)
settings.load_profile("capsule")


@pytest.fixture(autouse=True)
def _isolate(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # No user or system git config, no user HOME: every test sees the same git.
    for name, value in isolated(tmp_path_factory.mktemp("home")).items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """A repository with a policy, docs/roadmap.md and packet P-1 reading it."""
    r = Repo(tmp_path / "repo")
    r.write("policies/capsule.yml", POLICY)
    r.write("docs/roadmap.md", ROADMAP)
    r.write("docs/notes.md", "# Notes\n\nSome notes.\n")
    r.write(
        "packets/P-1/packet.yml", packet_yaml("P-1", ["docs/roadmap.md#phase-2", "docs/notes.md"])
    )
    r.write("packets/P-1/context.md", "# Context\n\nWhy this work exists.\n")
    r.commit("initial")
    return r


@pytest.fixture
def cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Result]:
    def run(argv: Sequence[str], cwd: Path | None = None) -> Result:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = main(list(argv))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def capsule(cli: Callable[..., Result], repo: Repo, tmp_path: Path) -> Path:
    """P-1's capsule, built at HEAD into a file."""
    target = tmp_path / "capsule.json"
    assert cli(["build", "packets/P-1/packet.yml", "-o", str(target)], cwd=repo.path).code == 0
    return target


@pytest.fixture
def history(cli: Callable[..., Result], repo: Repo) -> History:
    """``repo`` with a history of records (support/history.py)."""
    return make_history(cli, repo)


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, Key]:
    """Real ssh-keygen keys of alice, bob and mallory."""
    return {name: make_key(tmp_path / "keys", name) for name in ("alice", "bob", "mallory")}


@pytest.fixture
def trusted(repo: Repo, keys: dict[str, Key]) -> Repo:
    """``repo`` trusting alice's key (policies/allowed_signers), with a second
    packet, P-2, reading docs/notes.md."""
    repo.write("policies/allowed_signers", keys["alice"].signer("alice@example.org"))
    repo.write("packets/P-2/packet.yml", packet_yaml("P-2", ["docs/notes.md"]))
    repo.write("packets/P-2/context.md", "# P-2\n")
    repo.commit("trust alice; add P-2")
    return repo
