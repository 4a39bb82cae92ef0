"""Results do not depend on the locale, and nothing crashes printing a line
(issue 9, item 10). The CLI runs as a subprocess under each environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.gitrepo import Repo, packet_yaml

PACKET = "packets/P-1/packet.yml"


@pytest.fixture(scope="module")
def latin1_locale(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ISO-8859-1 locale compiled into a temp folder (LOCPATH), from the
    locale sources .ci/run installs (Debian's locales package)."""
    where = tmp_path_factory.mktemp("locales")
    done = subprocess.run(
        ["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(where / "en_US.ISO-8859-1")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (where / "en_US.ISO-8859-1").exists(), done.stderr
    return where


def environments(latin1: Path) -> dict[str, dict[str, str]]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8"))}
    return {
        "c-ascii": {**base, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
        "latin-1": {**base, "LOCPATH": str(latin1), "LC_ALL": "en_US.ISO-8859-1"},
        "utf-8": {**base, "LC_ALL": "C.UTF-8"},
    }


def capsule(repo: Repo, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "governance", *argv], cwd=repo.path, env=env,
        capture_output=True, check=False,
    )  # fmt: skip


@pytest.fixture
def accented(repo: Repo) -> Repo:
    repo.write("docs/ré/sumé.md", "# Sumé\n\n## Partie é\n\nTexte 日本.\n")
    repo.write(PACKET, packet_yaml("P-1", ["docs/ré/sumé.md#partie-é", "docs/notes.md"]))
    repo.commit("accented paths")
    return repo


def test_the_locale_interpreter_is_really_not_utf8(latin1_locale: Path) -> None:
    # Otherwise the tests below would prove nothing.
    probe = "import sys; print(sys.getfilesystemencoding())"
    for name, env in environments(latin1_locale).items():
        if name == "utf-8":
            continue
        done = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() in ("ascii", "iso8859-1"), name


def test_build_gives_the_same_bytes_under_every_locale(accented: Repo, latin1_locale) -> None:
    outputs = {}
    for name, env in environments(latin1_locale).items():
        done = capsule(accented, env, "build", PACKET)
        assert done.returncode == 0, (name, done.stderr)
        assert b"Traceback" not in done.stderr
        outputs[name] = done.stdout
    assert len(set(outputs.values())) == 1, sorted(outputs)
    assert "docs/ré/sumé.md#partie-é".encode() in outputs["utf-8"]


def test_check_prints_a_failure_line_under_every_locale(accented: Repo, latin1_locale) -> None:
    accented.write(PACKET, packet_yaml("P-1", ["docs/ré/日本.md"]))
    accented.commit("a read that is missing, with characters Latin-1 cannot encode")
    for name, env in environments(latin1_locale).items():
        done = capsule(accented, env, "check", "--all")
        assert b"Traceback" not in done.stderr, (name, done.stderr)
        assert done.returncode == 3, (name, done.stderr)
        assert b"source_missing" in done.stdout, name
    # The --json answer is exact UTF-8, whatever the locale.
    for env in environments(latin1_locale).values():
        done = capsule(accented, env, "check", "--all", "--json")
        assert "docs/ré/日本.md".encode() in done.stdout


def test_verify_and_replay_under_a_latin1_locale(accented: Repo, latin1_locale, tmp_path) -> None:
    env = environments(latin1_locale)["latin-1"]
    built = capsule(accented, env, "build", PACKET)
    path = tmp_path / "c.json"
    path.write_bytes(built.stdout)
    assert capsule(accented, env, "verify", str(path)).returncode == 0
    assert capsule(accented, env, "replay", str(path)).returncode == 0
