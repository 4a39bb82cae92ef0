"""``capsule completion``: scripts generated from the parser, loaded by the
real shells (bash, zsh, fish; `.ci/run` and `make tools` install them as root)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from governance.cli import COMMANDS, build_parser

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent


def shell(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is not installed: `make tools` (as root) or your package manager adds it"
    return found


def script(shell_name: str) -> str:
    # The installed console script, as a user runs it.
    done = subprocess.run(
        [str(BIN / "capsule"), "completion", shell_name],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


def bash_candidates(tmp_path: Path, *words: str) -> list[str]:
    source = tmp_path / "capsule.bash"
    source.write_text(script("bash"))
    line = " ".join(words)
    program = (
        f"source {source}\n"
        f"COMP_WORDS=({line})\nCOMP_CWORD={len(words) - 1}\n"
        f'COMP_LINE="{line}"\nCOMP_POINT=${{#COMP_LINE}}\n'
        '_shtab_capsule capsule "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"\n'
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        [shell("bash"), "--norc", "--noprofile", "-c", program],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def fish_candidates(tmp_path: Path, line: str) -> dict[str, str]:
    source = tmp_path / "capsule.fish"
    source.write_text(script("fish"))
    done = subprocess.run(
        [shell("fish"), "--no-config", "-c", f"source {source}; complete -C '{line}'"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(row.partition("\t")[::2] for row in done.stdout.splitlines())


def test_bash_completes_commands_options_and_subcommands(tmp_path: Path) -> None:
    assert bash_candidates(tmp_path, "capsule", "bu") == ["build"]
    assert set(bash_candidates(tmp_path, "capsule", "")) >= set(COMMANDS)
    assert bash_candidates(tmp_path, "capsule", "build", "--ex") == ["--exact-tokens"]
    assert bash_candidates(tmp_path, "capsule", "continuation", "") == ["verify", "run", "prompt"]
    assert bash_candidates(tmp_path, "capsule", "completion", "") == ["bash", "zsh", "fish"]


def test_fish_completes_commands_with_their_help_line(tmp_path: Path) -> None:
    assert fish_candidates(tmp_path, "capsule bu") == {"build": COMMANDS["build"]}
    assert set(fish_candidates(tmp_path, "capsule ")) >= set(COMMANDS)
    assert "--exact-tokens" in fish_candidates(tmp_path, "capsule build --ex")
    assert set(fish_candidates(tmp_path, "capsule continuation ")) == {"verify", "run", "prompt"}


def test_zsh_finds_and_loads_the_completion_in_fpath(tmp_path: Path) -> None:
    folder = tmp_path / "zfunc"
    folder.mkdir()
    (folder / "_capsule").write_text(script("zsh"))
    program = (
        f"fpath=({folder} $fpath)\n"
        f"autoload -Uz compinit && compinit -u -d {tmp_path / 'zcompdump'}\n"
        'print -r -- "registered=${_comps[capsule]}"\n'
        # Load the function's definition without running it (it completes only
        # inside a completion widget).
        "autoload +X _capsule\n"
        "functions _capsule >/dev/null && print loaded\n"
    )
    done = subprocess.run(
        [shell("zsh"), "-f", "-c", program], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines() == ["registered=_capsule", "loaded"]
    syntax = subprocess.run(
        [shell("zsh"), "-n", str(folder / "_capsule")], capture_output=True, text=True, check=False
    )
    assert syntax.returncode == 0, syntax.stderr


def _options(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Every subcommand's long options, from the parser itself."""
    found: dict[str, list[str]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = [o for a in sub._actions for o in a.option_strings if "--" in o]
                found.update(_options(sub))
    return found


@pytest.mark.parametrize("shell_name", ["bash", "zsh", "fish"])
def test_each_script_has_every_command_and_option(shell_name: str) -> None:
    text = script(shell_name)
    for name in COMMANDS:
        assert name in text, name
    for command, options in _options(build_parser()).items():
        for option in options:
            assert option.lstrip("-") in text, (command, option)


def test_an_unknown_shell_is_a_usage_error() -> None:
    done = subprocess.run(
        [str(BIN / "capsule"), "completion", "tcsh"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "error [usage]: completion: argument SHELL: invalid choice: 'tcsh'" in done.stderr
