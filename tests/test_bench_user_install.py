"""The benchmarks' user install (bench/user_install.py) is what it says: a venv
whose interpreter starts as a bare venv's does (no editable finder, none of
the development venv's .pth files run), imports this tree's packages and the
installed libraries, and has pip's console scripts. A real venv in a temp
folder, real processes."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_helper() -> ModuleType:
    path = ROOT / "bench" / "user_install.py"
    spec = importlib.util.spec_from_file_location("bench_user_install", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


helper = load_helper()

STARTED = """\
import json, sys
print(json.dumps({
    "finders": [type(f).__module__ + "." + type(f).__qualname__ for f in sys.meta_path],
    "modules": sorted(sys.modules),
    "path": sys.path,
}))
"""


def started(python: str, env: dict[str, str], cwd: Path) -> dict[str, list[str]]:
    """What an interpreter holds once started, before any import of ours."""
    done = subprocess.run(
        [python, "-c", STARTED], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    found: dict[str, list[str]] = json.loads(done.stdout)
    return found


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return helper.make(tmp_path_factory.mktemp("user") / "venv")


def test_the_interpreter_starts_as_a_bare_venv_does(install: Any, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(bare)
    env = install.env()
    user = started(install.python, env, tmp_path)
    plain = started(str(bare / "bin" / "python"), env, tmp_path)
    assert user["modules"] == plain["modules"]
    assert user["finders"] == plain["finders"]
    assert not [f for f in user["finders"] if "editable" in f.lower()]
    # The development site-packages is on the path (the libraries come from
    # there), yet none of its .pth files ran: no editable finder module, no
    # distutils hook.
    for folder in install.dependencies:
        assert str(folder) in user["path"]
    assert not [m for m in user["modules"] if "editable" in m or m == "_distutils_hack"]


def test_this_trees_packages_and_the_libraries_import(install: Any, tmp_path: Path) -> None:
    probe = (
        "import json, governance, capsule_hooks, pygit2, yaml, markdown_it, jsonschema\n"
        "print(json.dumps([governance.__file__, capsule_hooks.__file__]))"
    )
    done = subprocess.run(
        [install.python, "-c", probe],
        cwd=tmp_path,  # not this tree's root, whose governance/ -c would find first
        env=install.env(),
        capture_output=True,
        text=True,
        check=True,
    )
    governance, hooks = (Path(p).resolve() for p in json.loads(done.stdout))
    assert governance == ROOT / "governance" / "__init__.py"
    assert hooks == ROOT / "hooks" / "__init__.py"


def test_every_console_script_of_pyproject_runs(install: Any, tmp_path: Path) -> None:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        scripts = tomllib.load(handle)["project"]["scripts"]
    assert "capsule" in scripts
    for name in scripts:
        done = subprocess.run(
            [install.script(name), "--help"],
            cwd=tmp_path,
            env=install.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, (name, done.stderr)
        assert done.stdout.startswith("usage:"), (name, done.stdout)
    version = subprocess.run(
        [install.script("capsule"), "--version"],
        cwd=tmp_path,
        env=install.env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.strip() == "capsule 0.1.0"


def test_the_measured_environment_uses_bytecode(install: Any) -> None:
    env = install.env({"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/bin"})
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["PATH"].split(":")[0] == str(install.root / "bin")
    # Every module of this tree's packages has its .pyc, current for its source
    # (the header's mtime and size, or a hash-based one), before anything runs.
    for package in ("governance", "hooks"):
        for source in (ROOT / package).rglob("*.py"):
            pyc = Path(importlib.util.cache_from_source(str(source)))
            header = pyc.read_bytes()[:16]
            flags = int.from_bytes(header[4:8], "little")
            if flags == 0:
                stat = source.stat()
                assert int.from_bytes(header[8:12], "little") == int(stat.st_mtime) & 0xFFFFFFFF
                assert int.from_bytes(header[12:16], "little") == stat.st_size & 0xFFFFFFFF


def test_the_check_refuses_an_install_with_an_editable_finder(tmp_path: Path) -> None:
    made = helper.make(tmp_path / "venv")
    # What setuptools' editable install writes: a finder module and a .pth
    # line that installs it at start.
    (made.site_packages / "__editable___probe_finder.py").write_text(
        "import sys\n"
        "class _EditableFinder:\n"
        "    def find_spec(self, *args, **kwargs):\n"
        "        return None\n"
        "def install():\n"
        "    sys.meta_path.append(_EditableFinder())\n"
    )
    (made.site_packages / "__editable__.probe.pth").write_text(
        "import __editable___probe_finder; __editable___probe_finder.install()\n"
    )
    with pytest.raises(SystemExit, match="editable finder"):
        helper.check(made)


def test_the_check_refuses_governance_imported_from_elsewhere(tmp_path: Path) -> None:
    made = helper.make(tmp_path / "venv")
    elsewhere = tmp_path / "elsewhere" / "governance"
    shutil.copytree(ROOT / "governance", elsewhere, ignore=shutil.ignore_patterns("__pycache__"))
    link = made.site_packages / "governance"
    link.unlink()
    link.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(SystemExit, match="imports governance from"):
        helper.check(made)
