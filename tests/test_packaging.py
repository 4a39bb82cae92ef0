"""pyproject lists packages by hand (hooks/ installs as capsule_hooks): keep the
list complete, or a wheel would silently lack a package."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped = config["package-dir"]
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "governance").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    on_disk |= {name for name, folder in mapped.items() if (ROOT / folder / "__init__.py").exists()}
    assert set(config["packages"]) == on_disk


def test_console_scripts_point_at_listed_packages() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = set(project["tool"]["setuptools"]["packages"])
    scripts = project["project"]["scripts"]
    assert {"capsule", "capsule-packets", "capsule-records"} <= set(scripts)
    for target in scripts.values():
        module = target.split(":")[0]
        assert module.rpartition(".")[0] in packages
