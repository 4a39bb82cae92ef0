"""A throwaway "user install" of this tree, for the benchmarks' processes.

Usage::

    .venv/bin/python bench/user_install.py [--runs N] [--smoke]

The development venv (``make test``: ``pip install -e``) holds an editable
install: its ``__editable__`` .pth file imports a finder (pathlib,
importlib.util, fnmatch, urllib.parse...) at every interpreter start, about
10 ms a process that a user who ran ``pip install git-capsule`` never pays.
So every benchmark that times a process runs it from here instead:

* a venv of the running interpreter's base Python (``venv``, no pip), made
  once per benchmark run in a temp folder and removed at exit;
* its site-packages links this tree's top-level packages under the names a
  wheel installs them by (``governance``, and ``hooks/`` as
  ``capsule_hooks``: pyproject's ``packages`` and ``package-dir``), so the
  measured code is this tree's files, with a ``dist-info`` of its own; the
  ``.pyc`` files are compiled first (pip compiles at install time), and the
  measured environment drops ``PYTHONDONTWRITEBYTECODE``;
* the dependencies are the ones installed beside the running interpreter: a
  ``.pth`` file here names the development site-packages as a path line,
  which puts it on ``sys.path`` without processing the ``.pth`` files in it
  (``site`` runs those of a site directory only), so no editable finder and
  no ``distutils-precedence`` hook runs;
* the console scripts of pyproject's ``[project.scripts]``, written as pip
  writes them.

Run as a script it makes one, checks it and times ``python -c pass`` and
``capsule --help`` from the development venv and from it, interleaved.
"""

from __future__ import annotations

import argparse
import atexit
import compileall
import functools
import importlib.util
import json
import os
import shutil
import site
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import tomllib
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The line a benchmark prints once: where its processes come from.
NOTE = (
    "processes run from a regular install of this tree (no editable finder; bench/user_install.py)"
)

# Set in some shells and CI images, never in a user's: without .pyc files every
# run recompiles the package (15-19 ms a run that no user pays).
BYTECODE_VARIABLES = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")

# The libraries a command imports, compiled as pip compiles them at install.
LIBRARIES = ("pygit2", "markdown_it", "mdurl", "yaml", "jsonschema")

# pip's console-script template (the development venv's ``capsule`` is one).
SCRIPT = """\
#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from {module} import {attribute}
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit({attribute}())
"""

# What the check asks the installed interpreter.
PROBE = """\
import json, sys
import governance, capsule_hooks
print(json.dumps({
    "finders": [type(f).__module__ + "." + type(f).__qualname__ for f in sys.meta_path],
    "governance": governance.__file__,
    "capsule_hooks": capsule_hooks.__file__,
    "modules": sorted(sys.modules),
}))
"""


@dataclass(frozen=True)
class UserInstall:
    """A venv in ``root`` that has this tree as a regular install has it."""

    root: Path
    python: str
    site_packages: Path
    dependencies: tuple[Path, ...]

    def script(self, name: str) -> str:
        """The path of the console script ``name`` (``capsule``, ``capsule-packets``...)."""
        path = self.root / "bin" / name
        if not path.exists():
            raise SystemExit(f"bench: the user install has no console script {name!r}")
        return str(path)

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a measured process: ``base`` (the caller's by default)
        without the variables that stop Python from using its .pyc files, with the
        user install's scripts first on PATH."""
        env = {k: v for k, v in (os.environ if base is None else base).items()}
        for name in BYTECODE_VARIABLES:
            env.pop(name, None)
        env["PATH"] = f"{self.root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env.pop("VIRTUAL_ENV", None)
        return env


def project() -> dict[str, object]:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)


def top_level_packages(pyproject: dict[str, object]) -> dict[str, Path]:
    """Each top-level package a wheel of this tree installs, by its installed name,
    and the folder of this tree that holds it."""
    tool = pyproject["tool"]
    assert isinstance(tool, dict)
    setuptools = tool["setuptools"]
    folders = setuptools.get("package-dir", {})
    return {
        name: ROOT / folders.get(name, name) for name in setuptools["packages"] if "." not in name
    }


def dependency_folders() -> tuple[Path, ...]:
    """The running interpreter's site-packages, where the dependencies are."""
    seen: list[Path] = []
    for folder in site.getsitepackages():
        path = Path(folder)
        if path.is_dir() and path not in seen:
            seen.append(path)
    return tuple(seen)


def compile_bytecode(folders: list[Path]) -> None:
    """Write the .pyc files of this tree's packages and the commands' libraries,
    as pip does at install time, so no measured run compiles anything."""
    for name in LIBRARIES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            folders.extend(Path(p) for p in spec.submodule_search_locations)
    for folder in folders:
        compileall.compile_dir(folder, quiet=1)


def make(root: Path) -> UserInstall:
    """Create the user install in ``root`` (a new or empty folder) and check it."""
    pyproject = project()
    meta = pyproject["project"]
    assert isinstance(meta, dict)
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(root)
    paths = sysconfig.get_paths(scheme="venv", vars={"base": str(root), "platbase": str(root)})
    site_packages = Path(paths["purelib"])
    python = str(Path(paths["scripts"]) / "python")

    packages = top_level_packages(pyproject)
    for name, folder in packages.items():
        (site_packages / name).symlink_to(folder, target_is_directory=True)
    dependencies = dependency_folders()
    (site_packages / "bench-dependencies.pth").write_text(
        "".join(f"{folder}\n" for folder in dependencies)
    )
    dist_info = site_packages / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.4\nName: {meta['name']}\nVersion: {meta['version']}\n"
    )
    (dist_info / "INSTALLER").write_text("bench/user_install.py\n")
    (dist_info / "top_level.txt").write_text("".join(f"{name}\n" for name in packages))
    scripts = meta.get("scripts", {})
    (dist_info / "entry_points.txt").write_text(
        "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())
    )
    for name, target in scripts.items():
        module, attribute = target.split(":")
        path = Path(paths["scripts"]) / name
        path.write_text(SCRIPT.format(python=python, module=module, attribute=attribute))
        path.chmod(0o755)

    compile_bytecode(list(packages.values()))
    install = UserInstall(root, python, site_packages, dependencies)
    check(install)
    return install


def probe(install: UserInstall) -> dict[str, object]:
    # From the install's folder: ``-c`` puts the working folder first on the
    # path, and this tree's root would hold a ``governance`` of its own.
    done = subprocess.run(
        [install.python, "-c", PROBE],
        cwd=install.root,
        env=install.env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench: the user install does not import this tree:\n{done.stderr}")
    result: dict[str, object] = json.loads(done.stdout)
    return result


def check(install: UserInstall) -> None:
    """Refuse to measure from an install that is not what it says: an editable
    finder at start, or ``governance`` imported from anywhere but this tree."""
    found = probe(install)
    finders = found["finders"]
    assert isinstance(finders, list)
    editable = [f for f in finders if "editable" in f.lower()]
    if editable:
        raise SystemExit(f"bench: the user install still has an editable finder: {editable}")
    for name, folder in top_level_packages(project()).items():
        imported = Path(str(found[name])).resolve()
        if imported != (folder / "__init__.py").resolve():
            raise SystemExit(f"bench: the user install imports {name} from {imported}")


@functools.cache
def get() -> UserInstall:
    """The benchmark run's user install: made on first use, removed at exit."""
    root = Path(tempfile.mkdtemp(prefix="capsule-user-install-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return make(root / "venv")


# --------------------------------------------------------------------------- as a script


def wall_ms(argv: list[str], install: UserInstall) -> float:
    start = time.perf_counter()
    subprocess.run(
        argv,
        cwd=install.root,
        env=install.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return (time.perf_counter() - start) * 1000.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=21, help="measured rounds")
    parser.add_argument("--smoke", action="store_true", help="one round")
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs = 1
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    start = time.perf_counter()
    install = get()
    made = time.perf_counter() - start
    print(f"user install made and checked in {made * 1000:.0f} ms")
    print(NOTE)
    dev = Path(sys.executable).parent
    commands = {
        "python -c pass, development venv": [sys.executable, "-c", "pass"],
        "python -c pass, user install": [install.python, "-c", "pass"],
        "capsule --help, development venv": [str(dev / "capsule"), "--help"],
        "capsule --help, user install": [install.script("capsule"), "--help"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(args.runs + 1):  # the first round warms up
        for name, command in commands.items():
            taken = wall_ms(command, install)
            if round_:
                times[name].append(taken)
    print(f"{'':34} {'median ms':>9} {'min':>7} {'max':>7}  ({args.runs} interleaved rounds)")
    for name, values in times.items():
        print(f"{name:34} {statistics.median(values):9.1f} {min(values):7.1f} {max(values):7.1f}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
