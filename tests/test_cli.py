from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from governance import __version__
from governance.cli import COMMANDS, build_parser, main
from support.gitrepo import Repo

EXIT_LINES = ["0  success", "1  a verification", "2  bad usage", "3  a source", "4  over budget"]


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    assert info.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("argv", [[], ["build"], ["verify"]])
def test_help_explains_every_exit_code(argv: list[str], capsys) -> None:
    text = _help(argv, capsys)
    for line in EXIT_LINES:
        assert line in text


def test_every_option_has_help_text(capsys) -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    assert isinstance(subparsers.choices, dict)
    for name, sub in subparsers.choices.items():
        text = _help([name], capsys)
        for action in sub._actions:
            assert action.help, f"{name}: {action.dest} has no help"
            for flag in action.option_strings:
                assert flag in text


@pytest.mark.parametrize("argv", [[], ["--json"]])
def test_a_bare_capsule_lists_every_command(argv: list[str], capsys) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    if argv:
        message = json.loads(captured.out)["error"]["message"]
        lines = f"capsule: error [usage]: {message}".splitlines()
    else:
        lines = captured.err.splitlines()
    assert lines[0] == (
        "capsule: error [usage]: no command given; `capsule COMMAND --help` shows one "
        "command's options:"
    )
    assert [line.split()[0] for line in lines[1:]] == list(COMMANDS)
    for line, help_line in zip(lines[1:], COMMANDS.values(), strict=True):
        assert line.split(maxsplit=1)[1] == help_line
    # One prefix: the program's name appears once, at the start.
    assert captured.err.count("capsule:") == (0 if argv else 1)


def test_a_subcommand_usage_error_names_the_subcommand_once(capsys) -> None:
    assert main(["build"]) == 2
    assert capsys.readouterr().err == (
        "capsule: error [usage]: build: the following arguments are required: PACKET\n"
    )


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(flag: str, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main([flag])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"capsule {__version__}\n"


def test_unknown_option_with_json_is_a_json_error(capsys) -> None:
    assert main(["build", "x", "--bogus", "--json"]) == 2
    assert '"code":"usage"' in capsys.readouterr().out


def test_cli_import_stays_light() -> None:
    # Heavy libraries load only inside the command that needs them.
    code = (
        "import sys, governance.cli; "
        "print(sorted(m for m in ('pygit2', 'jsonschema', 'markdown_it', 'yaml') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def _console_script() -> str:
    found = shutil.which("capsule", path=str(Path(sys.executable).parent))
    assert found, "the capsule console script is not installed next to this Python"
    return found


def test_console_script_end_to_end_is_deterministic(repo: Repo, tmp_path: Path) -> None:
    script = _console_script()
    outputs = []
    variants = [
        ({"TZ": "UTC", "LC_ALL": "C", "PYTHONHASHSEED": "0"}, repo.path),
        ({"TZ": "Asia/Kathmandu", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "12345"}, repo.path),
        ({"TZ": "America/St_Johns", "LANG": "tr_TR.UTF-8", "PYTHONHASHSEED": "random"},
         repo.path / "docs"),
    ]  # fmt: skip
    for extra, cwd in variants:
        env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LANG")}
        env.update(extra)
        packet = os.path.relpath(repo.path / "packets/P-1/packet.yml", cwd)
        done = subprocess.run(
            [script, "build", packet], cwd=cwd, env=env, capture_output=True, check=False
        )
        assert done.returncode == 0, done.stderr
        assert b"capsule: built P-1" in done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == outputs[2]

    capsule = tmp_path / "c.json"
    capsule.write_bytes(outputs[0])
    done = subprocess.run(
        [script, "verify", str(capsule)], cwd=repo.path, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    repo.write("docs/notes.md", "changed\n")
    repo.commit()
    done = subprocess.run(
        [script, "verify", str(capsule)], cwd=repo.path, capture_output=True, check=False
    )
    assert done.returncode == 1


def test_python_dash_m_governance(repo: Repo) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "governance", "build", "packets/P-1/packet.yml", "--at", "zz"],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "invalid_revision" in done.stderr


def test_a_mistyped_command_lists_every_command(capsys) -> None:
    assert main(["bild", "packets/P-1/packet.yml"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'bild'" in err
    assert all(f"'{name}'" in err for name in COMMANDS)


def test_top_level_help_lists_every_command(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS)
