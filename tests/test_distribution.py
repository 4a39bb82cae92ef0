"""Installable by someone else (issue 9, items 16 and 17): the wheel and sdist
carry what a user and the tests need, the metadata matches the LICENSE, and
pip installs from the repository pinned by commit id.

Builds run with pip's build isolation against the configured package index,
as any user's would; the hook repository is a git copy of this checkout."""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]


def _copy_as_git(where: Path) -> tuple[Path, str]:
    """This checkout's files (uncommitted edits included) as a fresh git repository."""
    copy = where / "git-capsule"
    junk = shutil.ignore_patterns(
        "__pycache__", "*.pyc", ".venv", "*.egg-info", ".git", "node_modules"
    )
    shutil.copytree(ROOT, copy, ignore=junk)
    env = {
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(where), "PATH": "/usr/bin:/bin",
    }  # fmt: skip
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "copy"]):
        subprocess.run(["git", *argv], cwd=copy, env=env, check=True, capture_output=True)
    sha = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=copy, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    return copy, sha


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    # `python -m build`: the sdist, then the wheel built from that sdist, each in
    # an isolated environment with the declared build requirement.
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [wheel] = out.glob("*.whl")
    [sdist] = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def test_license_file_matches_the_spdx_metadata(built: dict[str, Path]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    with zipfile.ZipFile(built["wheel"]) as wheel:
        names = wheel.namelist()
        [meta] = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(wheel.read(meta))
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("Project-URL")
    classifiers = metadata.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers)  # the expression says it


def test_build_requirement_supports_the_license_expression() -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    assert requires == ["setuptools>=77"]


def test_the_wheel_ships_the_agent_adapter_example(built: dict[str, Path]) -> None:
    with zipfile.ZipFile(built["wheel"]) as wheel:
        names = set(wheel.namelist())
    assert "governance/examples/continuation-llm.sh" in names
    assert "governance/examples/cgp-session.ndjson" in names
    assert "continuation-llm.sh" in (ROOT / "docs/continuation.md").read_text()


def test_the_sdist_carries_what_its_tests_need(built: dict[str, Path]) -> None:
    with tarfile.open(built["sdist"]) as sdist:
        names = {"/".join(n.split("/")[1:]) for n in sdist.getnames()}
    for needed in ["LICENSE", "README.md", "Makefile", ".pre-commit-hooks.yaml",
                   "tests/conftest.py", "tests/support/gitrepo.py", "tests/golden/make_golden.py",
                   "tests/data/github-slugger-fixtures.json", "docs/format.md",
                   "tests/data/rfcs/LICENSE-MIT", "tests/data/rfcs/LICENSE-APACHE",
                   "tests/data/rfcs/text/3935-Project-Goals-2026.md",
                   "policies/capsule.yml", "packets/GC-003/packet.yml",
                   "scripts/generate_validators.py", "hooks/github-workflow.yml",
                   "governance/examples/continuation-llm.sh",
                   "tests/mcp_client/package-lock.json", "tests/mcp_client/client.mjs",
                   "tests/mcp_client/.npmrc"]:  # fmt: skip
        assert needed in names, needed
    assert not any("node_modules" in name for name in names)


def test_tests_pass_from_an_unpacked_sdist(built: dict[str, Path], tmp_path: Path) -> None:
    # The tests that need no git history of this repository (its own records'
    # audit does), run against the sdist's own code.
    with tarfile.open(built["sdist"]) as sdist:
        sdist.extractall(tmp_path, filter="data")
    [root] = tmp_path.iterdir()
    tests = ["tests/test_golden.py", "tests/test_yaml_limits.py", "tests/test_heading_limit.py",
             "tests/test_declared_commit.py", "tests/test_output_targets.py",
             "tests/test_schemas.py", "tests/test_validators.py"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "HOME": str(tmp_path)},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert str(root) in subprocess.run(
        [sys.executable, "-c", "import governance; print(governance.__file__)"],
        cwd=root, env={"PYTHONPATH": str(root)}, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def test_pip_installs_from_the_repository_pinned_by_commit_id(tmp_path: Path) -> None:
    copy, sha = _copy_as_git(tmp_path)
    target = tmp_path / "site"
    # What the README documents, with this copy in place of the published repository.
    spec = f"git-capsule @ git+file://localhost{copy}@{sha}"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), spec],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (target / "governance" / "cli.py").is_file()
    assert (target / "governance" / "examples" / "continuation-llm.sh").is_file()
    [dist_info] = target.glob("git_capsule-*.dist-info")
    assert sha in (dist_info / "direct_url.json").read_text()
