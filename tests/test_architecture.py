"""docs/architecture.md against the package: every module of governance/ is
named in its folder's section, and no module imports a stage the document's
table does not allow it."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "governance"
DOC = ROOT / "docs" / "architecture.md"


def _sections() -> dict[str, str]:
    """The text of each ``### `folder/` `` section, by folder ("" for governance/)."""
    found: dict[str, str] = {}
    current = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        heading = re.fullmatch(r"### `([a-z_]+)/`", line)
        if heading:
            current = "" if heading[1] == "governance" else heading[1]
            found[current] = ""
        elif line.startswith(("## ", "### ")):
            current = None
        elif current is not None:
            found[current] += line + "\n"
    return found


def _modules() -> list[tuple[str, str]]:
    """(folder, module file name) of every module of governance/ ("" for its
    top level) and of hooks/ ("hooks")."""
    out = []
    for path in sorted([*PACKAGE.rglob("*.py"), *(ROOT / "hooks").glob("*.py")]):
        relative = path.relative_to(ROOT)
        if path.name == "__init__.py" or "__pycache__" in relative.parts:
            continue
        if relative.parts[0] == "hooks":
            out.append(("hooks", path.name))
        else:
            out.append((relative.parts[1] if len(relative.parts) > 2 else "", path.name))
    return out


def _where(folder: str, name: str) -> str:
    if folder == "hooks":
        return f"hooks/{name}"
    return f"governance/{folder}/{name}" if folder else f"governance/{name}"


def test_every_module_is_named_in_its_folders_section() -> None:
    sections = _sections()
    missing = []
    for folder, name in _modules():
        where = _where(folder, name)
        heading = f"### `{folder or 'governance'}/`"
        if folder not in sections:
            missing.append(f"{where}: add a section {heading} to docs/architecture.md")
        elif f"`{name}`" not in sections[folder]:
            missing.append(
                f"{where}: add a line '- `{name}`: <its job>.' to the section {heading} of "
                "docs/architecture.md (and to the Layout tree)"
            )
    assert missing == [], "\n".join(missing)


def test_the_layout_tree_names_every_module() -> None:
    text = DOC.read_text(encoding="utf-8")
    tree = text.split("## Layout", 1)[1].split("## ", 1)[0]
    missing = [
        f"{_where(folder, name)}: add it to the Layout tree of docs/architecture.md, under "
        + (f"'  {folder}/'" if folder else "'governance/'")
        for folder, name in _modules()
        if not re.search(rf"^\s+{re.escape(name)}\s", tree, re.M)
    ]
    assert missing == [], "\n".join(missing)


STAGES = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
TOP = {path.stem for path in PACKAGE.glob("*.py") if path.name != "__init__.py"}


def _unit(name: str) -> str:
    """How the table names a stage (``core/``) or a top-level module (``cli.py``)."""
    return f"{name}/" if name in STAGES | {"hooks"} else f"{name}.py"


class Rule(NamedTuple):
    ours: set[str] | None  # units it may import (None: every one but cli.py)
    third_party: set[str]  # top-level packages, by import name


def _rules() -> dict[str, Rule]:
    """unit -> what it may import, read from the table "Who may import whom"."""
    table = DOC.read_text(encoding="utf-8").split("## Who may import whom", 1)[1]
    rules: dict[str, Rule] = {}
    for line in table.split("\n## ", 1)[0].splitlines():
        row = re.fullmatch(r"\| `([a-z_]+/|[a-z_]+\.py)` \| (.*) \|", line)
        if not row:
            continue
        names = set(re.findall(r"`([a-z_0-9]+)`", row[2]))
        ours = {_unit(name) for name in names if name in STAGES | TOP}
        third_party = names - STAGES - TOP
        rules[row[1]] = Rule(None if row[2].startswith("everything") else ours, third_party)
    return rules


def _units() -> list[tuple[str, Path]]:
    """(unit, path) of every module of governance/ and hooks/."""
    out = []
    for path in sorted([*PACKAGE.rglob("*.py"), *(ROOT / "hooks").glob("*.py")]):
        if "__pycache__" in path.parts or path == PACKAGE / "__init__.py":
            continue
        relative = path.relative_to(ROOT)
        if relative.parts[0] == "hooks":
            out.append(("hooks/", path))
        elif len(relative.parts) > 2:
            out.append((f"{relative.parts[1]}/", path))
        else:
            out.append((path.name, path))
    return out


def _imported(path: Path) -> list[tuple[int, str]]:
    """(line, module name) of every import of ``path``, in any form: ``import a.b``,
    ``from a import b`` (as ``a.b``), relative imports resolved, and
    ``importlib.import_module`` or ``__import__`` of a literal (an f-string's
    literal start)."""
    package = list(path.relative_to(ROOT).parts[:-1])
    return _imports_of(path.read_text(encoding="utf-8"), package)


def _imports_of(text: str, package: list[str]) -> list[tuple[int, str]]:
    """``_imported`` of ``text``, a module of ``package`` (its folder's parts)."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in (
            "importlib.import_module", "import_module", "__import__"
        ) and node.args:  # fmt: skip
            first = node.args[0]
            if isinstance(first, ast.JoinedStr) and first.values:
                first = first.values[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.append((node.lineno, first.value.rstrip(".")))
    return found


def _target(module: str) -> str | None:
    """The unit or third-party package ``module`` belongs to; None for the
    standard library and for ``governance`` itself (its ``__version__``)."""
    parts = module.split(".")
    if parts[0] == "governance":
        if len(parts) > 1 and parts[1] in STAGES | TOP:
            return _unit(parts[1])
        return None
    if parts[0] in sys.stdlib_module_names or parts[0] == "__future__":
        return None
    return parts[0]


def _violations(unit: str, path: Path, rule: Rule) -> list[str]:
    wrong = []
    for line, module in _imported(path):
        target = _target(module)
        if target is None or target == unit:
            continue
        if not _allowed(target, rule):
            wrong.append(
                f"{path.relative_to(ROOT).as_posix()}:{line} imports {module}, which {unit} "
                "may not (docs/architecture.md, 'Who may import whom')"
            )
    return wrong


def test_no_module_imports_what_the_table_does_not_allow() -> None:
    rules = _rules()
    assert set(rules) >= {"core/", "history/", "commands/", "hooks/", "errors.py", "cli.py"}
    uncovered = sorted({unit for unit, _ in _units()} - set(rules))
    assert uncovered == [], f"no row of 'Who may import whom' for {uncovered}"
    wrong = [line for unit, path in _units() for line in _violations(unit, path, rules[unit])]
    assert wrong == [], "\n".join(wrong)


def test_every_row_of_the_table_names_a_real_unit() -> None:
    units = {unit for unit, _ in _units()}
    assert sorted(set(_rules()) - units) == []


@pytest.mark.parametrize(
    "source",
    [
        "from governance import commands\n",
        "import governance.commands.build\n",
        "from governance.commands import _args\n",
        "from ..commands import build\n",
        "import importlib\nimportlib.import_module('governance.commands.build')\n",
        "import importlib\nimportlib.import_module(f'governance.commands.{name}')\n",
        "import tiktoken\n",
    ],
)
def test_every_import_form_is_judged(source: str) -> None:
    # A module of core/ importing a command, or a package core may not, in any form.
    rule = _rules()["core/"]
    targets = [_target(module) for _, module in _imports_of(source, ["governance", "core"])]
    assert [t for t in targets if t and t != "core/" and not _allowed(t, rule)], source


def _allowed(target: str, rule: Rule) -> bool:
    if target.endswith(("/", ".py")):
        return target != "cli.py" if rule.ours is None else target in rule.ours
    return target in rule.third_party
