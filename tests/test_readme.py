"""The README cannot fall behind the code."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from governance.cli import COMMANDS, EXIT_CODES

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_command_is_documented() -> None:
    for name in COMMANDS:
        assert f"### `capsule {name}" in README, name


def test_setup_commands_exist_in_makefile() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, re.MULTILINE), target


def test_ci_runs_the_readme_test_command() -> None:
    assert "make test" in (ROOT / ".ci/run").read_text(encoding="utf-8")


def test_demo_packet_exists() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(r"^DEMO_PACKET \?= (\S+)$", makefile, re.MULTILINE)
    assert match
    assert (ROOT / match.group(1)).is_file()
    assert match.group(1) in README


def test_exit_codes_table_matches_cli_help() -> None:
    for code in range(5):
        assert f"| {code} |" in README
        assert f"  {code}  " in EXIT_CODES


def test_contributing_names_what_exists() -> None:
    # Every make target, marker and file CONTRIBUTING.md names is real.
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in sorted(set(re.findall(r"`make (\w+)", contributing))):
        assert re.search(rf"^{target}:", makefile, re.MULTILINE), target
    for variable in ("ARGS", "JOBS", "COVERAGE_FLOOR"):
        assert re.search(rf"^{variable} [:?]=", makefile, re.MULTILINE), variable
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    markers = {m.split(":")[0] for m in pyproject["tool"]["pytest"]["ini_options"]["markers"]}
    for marker in re.findall(r"^- `(\w+)`:", contributing, re.MULTILINE):
        assert marker in markers, marker
    named = r"`((?:tests|scripts|governance|docs)/[\w/.-]+\.(?:py|md))`"
    for path in re.findall(named, contributing):
        if "NAME" not in path:  # the placeholder of "Adding a command"
            assert (ROOT / path).is_file(), path
    assert "CONTRIBUTING.md" in README
