"""docs/architecture.md against the package: every module of governance/ is
named in its folder's section, and no module imports a stage the document's
table does not allow it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

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
    """(folder, module file name) of every module of governance/."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if path.name == "__init__.py" or "__pycache__" in relative.parts:
            continue
        folder = relative.parts[0] if len(relative.parts) > 1 else ""
        out.append((folder, path.name))
    return out


def test_every_module_is_named_in_its_folders_section() -> None:
    sections = _sections()
    missing = []
    for folder, name in _modules():
        where = f"governance/{folder}/{name}" if folder else f"governance/{name}"
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
        f"governance/{folder + '/' if folder else ''}{name}: add it to the Layout tree of "
        "docs/architecture.md, under " + (f"'  {folder}/'" if folder else "'governance/'")
        for folder, name in _modules()
        if not re.search(rf"^\s+{re.escape(name)}\s", tree, re.M)
    ]
    assert missing == [], "\n".join(missing)


def _allowed() -> dict[str, set[str] | None]:
    """stage -> the stages and top-level modules it may import (None: all but cli),
    read from the table "Who may import whom"."""
    table = DOC.read_text(encoding="utf-8").split("## Who may import whom", 1)[1]
    allowed: dict[str, set[str] | None] = {}
    for line in table.split("\n## ", 1)[0].splitlines():
        row = re.fullmatch(r"\| `([a-z_]+)/` \| (.*) \|", line)
        if row:
            names = set(re.findall(r"`([a-z_]+)`", row[2]))
            allowed[row[1]] = None if row[2].startswith("everything") else names
    return allowed


def _imported_stages(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "governance" and len(parts) > 1:
                found.append((node.lineno, parts[1]))
    return found


def test_no_stage_imports_what_the_table_does_not_allow() -> None:
    allowed = _allowed()
    assert set(allowed) >= {"core", "history", "guards", "continuation", "commands"}
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if len(relative.parts) < 2 or relative.parts[0] == "__pycache__":
            continue
        stage = relative.parts[0]
        may = allowed.get(stage, set())
        for line, target in _imported_stages(path):
            if target == stage:
                continue
            if (may is None and target != "cli") or (may is not None and target in may):
                continue
            wrong.append(
                f"governance/{relative.as_posix()}:{line} imports governance.{target}, which "
                f"{stage}/ may not (docs/architecture.md, 'Who may import whom')"
            )
    assert wrong == [], "\n".join(wrong)
