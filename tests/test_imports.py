"""Import discipline: what ``capsule --help``, ``capsule build``, ``verify``,
``audit`` and each hook import on their success path, listed and checked, so a later
change cannot silently add tens of milliseconds to every call (issue 13)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from governance.cli import COMMANDS
from support.gitrepo import Repo

# Run in a fresh interpreter: what a process imports, not what this one has.
PROBE = r"""
import io, sys
argv = sys.argv[2:]
if sys.argv[1] == "capsule":
    from governance.cli import main
else:
    main = __import__(f"capsule_hooks.{sys.argv[1]}", fromlist=["main"]).main
class Sink(io.StringIO):
    buffer = io.BytesIO()
out, err = sys.stdout, sys.stderr
sys.stdout, sys.stderr = Sink(), Sink()
try:
    code = main(argv)
except SystemExit as exc:
    code = exc.code
sys.stdout, sys.stderr = out, err
# Nothing imported for the report itself: one name a line, the exit code first.
print(code)
print("\n".join(sorted(sys.modules)))
"""

# Top-level packages a build may load besides the standard library: pygit2 (with
# its cffi backend), markdown-it-py (with mdurl, for a file the heading scan
# declines or a heading with inline markup) and PyYAML.
GIT_AND_TEXT = {"governance", "pygit2", "markdown_it", "mdurl", "yaml"}
# The secret scan's detector (the secrets extra, docs/secrets.md): detect-secrets
# and the requests stack it imports, loaded by every command that builds (some
# 40 ms a process, bench/bench_secrets.py).
SCAN = {"detect_secrets", "requests", "urllib3", "charset_normalizer", "idna", "certifi"}
NEVER = {"jsonschema", "referencing", "rpds", "attrs", "mcp", "tiktoken", "pydantic", "anyio"}


def _modules(entry: str, argv: list[str], cwd: Path) -> set[str]:
    return set(_run(entry, argv, cwd)["modules"])


def _run(entry: str, argv: list[str], cwd: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {
        "HOME": os.environ["HOME"],
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE, entry, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    code, *modules = done.stdout.splitlines()
    return {"code": int(code), "modules": modules}


def _probe(entry: str, argv: list[str], cwd: Path) -> tuple[int, set[str], set[str]]:
    report = _run(entry, argv, cwd)
    return (report["code"], *_sorted_out(set(report["modules"])))


def _sorted_out(modules: set[str]) -> tuple[set[str], set[str]]:
    """The top-level packages of ``modules`` that are not the standard library's,
    and the command modules among them."""
    # Interpreter and packaging helpers (site hooks, C-extension runtimes) are not ours to list.
    third_party = {
        name.split(".")[0]
        for name in modules
        if name.split(".")[0] not in sys.stdlib_module_names
        and not name.startswith(("_", "cython_runtime"))
    }
    commands = {name for name in modules if name.startswith("governance.commands.")}
    return third_party, commands


SHARED = {"governance.commands._args", "governance.commands._boundary"}


def _detector_modules() -> set[str]:
    """What loading the secret scan's detector imports, in a fresh interpreter."""
    probe = (
        "import sys; from governance.core.secretscan import detector; "
        "assert detector().available; print('\\n'.join(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(done.stdout.splitlines())


def test_help_imports_no_command_and_no_library(repo: Repo) -> None:
    code, third_party, commands = _probe("capsule", ["--help"], repo.path)
    assert code == 0
    assert third_party == {"governance"}
    assert commands == SHARED


def test_help_imports_none_of_the_costly_standard_modules(repo: Repo) -> None:
    # Each of these costs milliseconds; a --help needs none of them.
    modules = _modules("capsule", ["--help"], repo.path)
    assert not modules & {"dataclasses", "inspect", "tempfile", "json", "importlib.resources"}


@pytest.mark.parametrize("command", ["verify", "audit", "check", "continuation"])
def test_a_command_help_imports_that_command_alone(repo: Repo, command: str) -> None:
    code, third_party, commands = _probe("capsule", [command, "--help"], repo.path)
    assert code == 0
    assert third_party == {"governance"}
    assert commands == SHARED | {f"governance.commands.{command}"}


def test_build_imports_git_markdown_and_yaml_only(repo: Repo, tmp_path: Path) -> None:
    out = tmp_path / "capsule.json"
    code, third_party, commands = _probe(
        "capsule", ["build", "packets/P-1/packet.yml", "-o", str(out)], repo.path
    )
    assert code == 0
    assert out.is_file()
    # markdown-it-py only when a file's headings need it: the line scan settles plain ones.
    assert {"governance", "pygit2", "yaml", "detect_secrets"} <= third_party <= GIT_AND_TEXT | SCAN
    assert commands == SHARED | {"governance.commands.build", "governance.commands._secrets"}


def test_verify_imports_no_schema_library(repo: Repo, tmp_path: Path) -> None:
    out = tmp_path / "capsule.json"
    assert _probe("capsule", ["build", "packets/P-1/packet.yml", "-o", str(out)], repo.path)[0] == 0
    code, third_party, commands = _probe("capsule", ["verify", str(out)], repo.path)
    assert code == 0
    assert third_party <= GIT_AND_TEXT
    assert not third_party & NEVER
    assert commands == SHARED | {"governance.commands.verify"}


# What a successful audit never needs: the wording of a refusal (advice on an
# over-budget read, overlap warnings, the field-by-field record reader the
# byte-identical shortcut makes unneeded, did-you-mean's difflib and fractions),
# markdown-it's logging for files the line scan settles, signatures, and the
# other commands' packages; with --jobs 1, no second process.
AUDIT_NEVER = {
    "governance.core.advice",
    "governance.core.overlap",
    "governance.core.reader",
    "governance.history.signatures",
    "governance.history.signed_audit",
    "governance.history.workers",
    "difflib",
    "fractions",
    "decimal",
    "logging",
    "tempfile",
    "subprocess",
    "multiprocessing",
    "concurrent.futures",
}
AUDIT_PACKAGES = {"governance.core", "governance.history", "governance.commands"}


@pytest.mark.parametrize("jobs", [["--jobs", "1"], []])
def test_audit_imports_none_of_the_paths_a_clean_audit_never_takes(
    cli, repo: Repo, jobs: list[str]
) -> None:
    # The default, auto, replays one record blob in this process too.
    assert cli(["build", "packets/P-1/packet.yml", "--record"], cwd=repo.path).code == 0
    repo.commit("record P-1")
    report = _run("capsule", ["audit", "--json", *jobs], repo.path)
    assert report["code"] == 0
    modules = set(report["modules"])
    third_party, commands = _sorted_out(modules)
    assert {"governance", "pygit2", "yaml", "detect_secrets"} <= third_party <= GIT_AND_TEXT | SCAN
    assert not third_party & NEVER
    assert commands == SHARED | {"governance.commands.audit", "governance.commands._secrets"}
    # Whatever the detector itself loads (logging, multiprocessing...) is its own.
    assert not modules & (AUDIT_NEVER - _detector_modules())
    packages = {name.rsplit(".", 1)[0] for name in modules if name.count(".") == 2}
    assert {p for p in packages if p.startswith("governance.")} <= AUDIT_PACKAGES


@pytest.mark.parametrize("hook", ["packets", "records"])
def test_hooks_import_no_schema_library_and_no_command(cli, repo: Repo, hook: str) -> None:
    # Something for each hook to check: a packet's source changed, a record added.
    repo.write("docs/roadmap.md", (repo.path / "docs/roadmap.md").read_text() + "\nMore.\n")
    repo.commit("edit the roadmap")
    assert cli(["build", "packets/P-1/packet.yml", "--record"], cwd=repo.path).code == 0
    repo.write("docs/notes.md", "# Notes\n\nSome notes, edited.\n")
    repo.git("add", "-A")
    assert "/capsules/" in repo.git("diff", "--cached", "--name-only")
    code, third_party, commands = _probe(hook, [], repo.path)
    assert code == 0
    assert third_party <= GIT_AND_TEXT | SCAN | {"capsule_hooks"}
    assert not third_party & NEVER
    assert commands <= SHARED | {"governance.commands._hooks", "governance.commands._secrets"}


def test_every_module_help_line_is_the_one_the_parser_lists() -> None:

    for name, help_line in COMMANDS.items():
        module = importlib.import_module(f"governance.commands.{name.replace('-', '_')}")
        assert help_line == module.HELP, name


def test_outline_of_a_plain_file_imports_no_markdown_or_yaml_parser(repo: Repo) -> None:
    # The heading scan settles the file and the policy is plain: neither
    # markdown-it-py nor PyYAML is loaded (issue 21 item 5).
    code, third_party, commands = _probe("capsule", ["outline", "docs/roadmap.md"], repo.path)
    assert code == 0
    assert third_party == {"governance", "pygit2"}
    assert commands == SHARED | {"governance.commands.outline"}


def test_outline_of_headings_with_code_spans_imports_no_markdown_it(repo: Repo) -> None:
    # Code spans, the markup most headings have, are rendered without it.
    repo.write("docs/api.md", "# The `capsule` API\n\n## `outline --json`\n\nText.\n")
    repo.commit("headings with code spans")
    code, third_party, _ = _probe("capsule", ["outline", "docs/api.md"], repo.path)
    assert code == 0
    assert third_party == {"governance", "pygit2"}


def test_outline_imports_markdown_it_where_the_scan_declines(repo: Repo) -> None:
    # A carriage return is one thing the scan leaves to the parse.
    repo.write("docs/crlf.md", "# Title\r\n\r\nText.\r\n")
    repo.commit("a file with CRLF line ends")
    code, third_party, _ = _probe("capsule", ["outline", "docs/crlf.md"], repo.path)
    assert code == 0
    assert third_party == {"governance", "pygit2", "markdown_it", "mdurl"}


def test_a_policy_that_is_not_plain_is_read_by_the_yaml_loader(repo: Repo) -> None:
    repo.write("policies/capsule.yml", "target_tokens: 12000  \t# a tab: not plain\n")
    repo.commit("a policy the plain reading leaves to the loader")
    code, third_party, _ = _probe("capsule", ["outline", "docs/roadmap.md"], repo.path)
    assert code == 0
    assert third_party == {"governance", "pygit2", "yaml"}
