"""One guarded runner for ``capsule`` and the hooks: the same line for an
error, the same exit for ^C and a closed pipe; library code neither prints
nor exits, and no command imports the CLI back."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from capsule_hooks import packets, records
from governance.cli import main
from governance.commands._boundary import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, run_guarded
from governance.errors import SOURCE_MISSING, SourceError
from support.gitrepo import Repo, packet_yaml

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "governance"


def _run(capsys: pytest.CaptureFixture[str], entry, argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = entry(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("entry", "prog"),
    [(main, "capsule"), (packets.main, "capsule-packets"), (records.main, "capsule-records")],
)
def test_an_error_is_worded_alike_by_the_cli_and_both_hooks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry, prog
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys, entry, ["check", "--all"] if entry is main else [])
    assert (code, out) == (2, "")
    assert err == f"{prog}: error [not_a_repository]: {tmp_path}: not inside a git repository\n"


@pytest.mark.parametrize(
    ("entry", "prog"),
    [(main, "capsule"), (packets.main, "capsule-packets"), (records.main, "capsule-records")],
)
def test_a_bad_option_is_a_usage_line_from_the_cli_and_both_hooks(
    capsys: pytest.CaptureFixture[str], entry, prog: str
) -> None:
    argv = ["check", "--bogus"] if entry is main else ["--bogus"]
    code, out, err = _run(capsys, entry, argv)
    assert (code, out) == (2, "")
    # One prefix: the program's name is not said twice.
    assert err == f"{prog}: error [usage]: unrecognized arguments: --bogus\n"


def test_interrupt_is_one_line_and_exit_130(capsys: pytest.CaptureFixture[str]) -> None:
    def body() -> int:
        raise KeyboardInterrupt

    assert run_guarded("capsule-packets", body, lambda: False) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "capsule-packets: interrupted\n"


def test_an_error_message_over_several_lines_cannot_forge_a_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A path quoted in a message may hold a newline: what follows it is indented,
    # so it cannot pass for a line of its own.
    def body() -> int:
        raise SourceError(
            "docs/a\ncapsule: error [none]: all is well\x1b[2J.md: missing", code=SOURCE_MISSING
        )

    assert run_guarded("capsule", body, lambda: False) == 3
    assert capsys.readouterr().err.splitlines() == [
        "capsule: error [source_missing]: docs/a",
        "  capsule: error [none]: all is well\\x1b[2J.md: missing",
    ]


def test_the_packets_hook_exits_quietly_into_a_closed_pipe(repo: Repo) -> None:
    # Like `capsule-packets | head -c0`: the reader is gone before the hook writes.
    repo.write("packets/P-1/packet.yml", packet_yaml("P-1", ["docs/gone.md"]))
    repo.git("add", "-A")
    script = (
        "import os, sys; from capsule_hooks.packets import main; "
        "r, w = os.pipe(); os.close(r); os.dup2(w, 1); sys.exit(main([]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=repo.path, capture_output=True, text=True, check=False
    )
    assert done.returncode == EXIT_BROKEN_PIPE
    assert "Traceback" not in done.stderr


def test_commands_do_not_import_the_cli_back() -> None:
    for path in sorted((PACKAGE / "commands").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module is not None
        } | {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        assert "governance.cli" not in imported, f"{path.name} imports governance.cli"
    assert os.path.exists(PACKAGE / "commands" / "_args.py")


def _library_modules() -> list[Path]:
    """Every module of governance/ that is library code: all but the command
    line (cli.py, commands/, the ``python -m`` entry) and output.py, the one
    writer the commands print through."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in ("cli.py", "output.py", "__main__.py") or relative.startswith("commands/"):
            continue
        out.append(path)
    return out


def _writes_or_exits(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in ("print", "sys.exit", "exit", "quit", "os._exit"):
                found.append((node.lineno, name))
        elif isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if ast.unparse(exc) == "SystemExit":
                found.append((node.lineno, "raise SystemExit"))
        elif isinstance(node, ast.Attribute) and ast.unparse(node) in ("sys.stdout", "sys.stderr"):
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_library_code_neither_prints_nor_exits() -> None:
    offenders = [
        f"governance/{path.relative_to(PACKAGE).as_posix()}:{line}: {what}"
        for path in _library_modules()
        for line, what in _writes_or_exits(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert offenders == [], (
        "library code must return values (or take a callback) and leave printing to "
        "governance/commands/ through governance.output:\n" + "\n".join(offenders)
    )


def test_the_scan_finds_a_print_and_an_exit() -> None:
    # The scan above can fail: it sees each way of writing or exiting.
    source = (
        "import sys\nprint('x')\nsys.stderr.write('x')\nstream = sys.stdout\n"
        "sys.exit(1)\nraise SystemExit(2)\n"
    )
    assert [what for _, what in _writes_or_exits(ast.parse(source))] == [
        "print",
        "sys.stderr",
        "sys.stdout",
        "sys.exit",
        "raise SystemExit",
    ]


def test_every_import_inside_a_function_says_what_cost_it_defers() -> None:
    # ruff's PLC0415 refuses an import inside a function without a noqa; the

    bare = [
        f"{path.relative_to(ROOT).as_posix()}:{number}"
        for path in sorted([*PACKAGE.rglob("*.py"), *(ROOT / "hooks").rglob("*.py")])
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "noqa: PLC0415" in line and not re.search(r"noqa: PLC0415 \([^)]{4,}\)", line)
    ]
    assert bare == []


def test_commands_print_lines_only_through_output() -> None:
    # output.out and output.err make every human-readable line printable; a
    # bare print() in a command would let repository text reach the terminal raw.
    found = [
        f"governance/{path.relative_to(PACKAGE).as_posix()}:{line}: use governance.output.out "
        "or err instead of print()"
        for path in [PACKAGE / "cli.py", *sorted((PACKAGE / "commands").glob("*.py"))]
        for line, what in _writes_or_exits(ast.parse(path.read_text(encoding="utf-8")))
        if what == "print"
    ]
    assert found == [], "\n".join(found)
