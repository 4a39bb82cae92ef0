"""The registry of error codes (governance/errors.py) against the package's
source and the documentation: every code raised or reported is registered
with the class it is raised as, every registered code is in docs/errors.md
with its exit code, and no library code compares codes as string literals."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import governance
from governance import errors
from governance.errors import REGISTRY, CapsuleError, SourceError

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(ROOT / "governance").rglob("*.py"), *(ROOT / "hooks").rglob("*.py")])
DOC = ROOT / "docs" / "errors.md"


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT).as_posix()}:{getattr(node, 'lineno', 0)}"


def _error_classes() -> dict[str, type[CapsuleError]]:
    """Every CapsuleError subclass of the package, by name."""
    for module in pkgutil.walk_packages(governance.__path__, "governance."):
        if not module.name.endswith(".__main__"):  # it runs the command line
            importlib.import_module(module.name)
    found: dict[str, type[CapsuleError]] = {}
    todo = [CapsuleError]
    while todo:
        cls = todo.pop()
        found[cls.__name__] = cls
        todo += cls.__subclasses__()
    return found


ERRORS_PY = ROOT / "governance" / "errors.py"
# The codes by the name of their constant in governance/errors.py.
CONSTANTS = {
    name: value
    for name, value in vars(errors).items()
    if name.isupper() and isinstance(value, str) and value in REGISTRY
}


def _code_of(value: ast.expr) -> tuple[str, bool] | None:
    """The code ``value`` gives, and whether it is written as a string literal:
    ``"source_missing"`` or ``SOURCE_MISSING`` (``errors.SOURCE_MISSING``)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value:
        return value.value, True
    name = value.id if isinstance(value, ast.Name) else None
    if isinstance(value, ast.Attribute) and ast.unparse(value.value) == "errors":
        name = value.attr
    if name in CONSTANTS:
        return CONSTANTS[name], False
    return None


def _code_literals(tree: ast.AST) -> Iterator[tuple[ast.AST, str, str | None, bool]]:
    """(node, code, the called name, written as a literal) of every ``code=``
    keyword of a call, and (node, code, class name, literal) of every
    ``default_code = ...`` of a class."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                found = _code_of(keyword.value) if keyword.arg == "code" else None
                if found:
                    yield node, found[0], ast.unparse(node.func), found[1]
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "default_code" for t in statement.targets
                ):
                    found = _code_of(statement.value)
                    if found:
                        yield statement, found[0], node.name, found[1]


def test_every_code_is_raised_through_its_constant() -> None:
    literal = [
        f"{_where(path, node)}: {code!r} (in {called}): write {code.upper()} "
        "(from governance.errors), not the string"
        for path in SOURCES
        if path != ERRORS_PY
        for node, code, called, is_literal in _code_literals(
            ast.parse(path.read_text(encoding="utf-8"))
        )
        if is_literal
    ]
    assert literal == [], "\n".join(literal)


def test_the_literal_scan_can_fail() -> None:
    source = (
        "raise SourceError('x', code='source_missing')\n"
        "raise SourceError('x', code=SOURCE_MISSING)\n"
        "raise SourceError('x', code=errors.OVER_BUDGET)\n"
        "class E(CapsuleError):\n    default_code = 'usage'\n"
    )
    found = [(code, literal) for _, code, _, literal in _code_literals(ast.parse(source))]
    assert sorted(found) == [
        ("over_budget", False), ("source_missing", False), ("source_missing", True),
        ("usage", True),
    ]  # fmt: skip


def test_every_error_class_lives_in_errors_py() -> None:
    elsewhere = sorted(
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in _error_classes().values()
        if cls.__module__.startswith("governance.") and cls.__module__ != "governance.errors"
    )
    assert elsewhere == [], "move these CapsuleError subclasses to governance/errors.py"


def test_every_constant_is_used() -> None:
    text = "\n".join(path.read_text(encoding="utf-8") for path in SOURCES)
    # Its definition and at least one use, or the class it is registered with
    # raises it by default (RecordConflict: record_conflict).
    unused = sorted(
        name
        for name, code in CONSTANTS.items()
        if len(re.findall(rf"\b{name}\b", text)) < 2
        and getattr(REGISTRY[code].error, "default_code", None) != code
    )
    assert unused == [], f"constants of governance/errors.py nothing uses: {unused}"


def test_every_code_raised_or_reported_is_registered() -> None:
    missing = [
        f"{_where(path, node)}: {code!r} (in {called}): add it to governance/errors.py with "
        f"_code({code!r}, <its class>, ...) and a row to docs/errors.md"
        for path in SOURCES
        for node, code, called, _ in _code_literals(ast.parse(path.read_text(encoding="utf-8")))
        if code not in REGISTRY
    ]
    assert missing == [], "\n".join(missing)


def test_each_code_is_raised_as_its_registered_class() -> None:
    classes = _error_classes()
    wrong = []
    for path in SOURCES:
        for node, code, called, _ in _code_literals(ast.parse(path.read_text(encoding="utf-8"))):
            cls = classes.get(str(called))
            entry = REGISTRY.get(code)
            if cls is None or entry is None:
                continue  # not an error class (a helper passing the code on)
            if entry.error is None or not issubclass(cls, entry.error):
                wrong.append(
                    f"{_where(path, node)}: {code} raised as {cls.__name__}, "
                    f"registered as {entry.error and entry.error.__name__}"
                )
            elif cls.exit_code != entry.exit_code:
                wrong.append(
                    f"{_where(path, node)}: {code} exits {cls.exit_code} as "
                    f"{cls.__name__}, registered with exit {entry.exit_code}"
                )
    assert wrong == [], "\n".join(wrong)


def _compares_a_code(node: ast.Compare) -> bool:
    """``x.code == "..."``, ``code in ("...", ...)``, and the like."""
    sides = [node.left, *node.comparators]

    def is_code(side: ast.AST) -> bool:
        return (isinstance(side, ast.Attribute) and side.attr == "code") or (
            isinstance(side, ast.Name) and side.id == "code"
        )

    def is_literal(side: ast.AST) -> bool:
        if isinstance(side, ast.Constant):
            return isinstance(side.value, str)
        if isinstance(side, ast.Tuple | ast.List | ast.Set):
            return any(is_literal(item) for item in side.elts)
        return False

    return any(is_code(side) for side in sides) and any(is_literal(side) for side in sides)


def _code_comparisons(tree: ast.AST) -> list[ast.Compare]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Compare) and _compares_a_code(n)]


def test_no_code_compares_codes_as_string_literals() -> None:
    found = [
        f"{_where(path, node)}: {ast.unparse(node)}: compare with a constant of "
        "governance/errors.py (SOURCE_MISSING, ...)"
        for path in SOURCES
        for node in _code_comparisons(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == [], "\n".join(found)


def test_the_comparison_scan_can_fail() -> None:
    source = (
        "if exc.code == 'source_missing': pass\n"
        "if code in ('a', 'b'): pass\n"
        "if exc.code == SOURCE_MISSING: pass\n"
        "if name == 'code': pass\n"
    )
    assert [ast.unparse(n) for n in _code_comparisons(ast.parse(source))] == [
        "exc.code == 'source_missing'",
        "code in ('a', 'b')",
    ]


def _documented() -> dict[str, str]:
    """code -> the exit column of its row in docs/errors.md."""
    rows: dict[str, str] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"\| `([a-z0-9_]+)` \| ([^|]+) \|.*\|", line)
        if match:
            assert match[1] not in rows, f"docs/errors.md lists {match[1]} twice"
            rows[match[1]] = match[2].strip()
    return rows


def test_every_registered_code_is_documented_with_its_exit_code() -> None:
    documented = _documented()
    problems = [
        f"docs/errors.md: add a row | `{code}` | {entry.exit_code} | ... |"
        for code, entry in REGISTRY.items()
        if code not in documented
    ]
    problems += [
        f"docs/errors.md: {code} exits {entry.exit_code}, not {documented[code]}"
        for code, entry in REGISTRY.items()
        if code in documented and str(entry.exit_code) not in re.split(r"\D+", documented[code])
    ]
    problems += [
        f"docs/errors.md: {code} is documented but not in the registry"
        for code in documented
        if code not in REGISTRY
    ]
    assert problems == [], "\n".join(problems)


def test_every_constant_names_its_code() -> None:
    constants = {
        name: value
        for name, value in vars(errors).items()
        if name.isupper() and isinstance(value, str) and value in REGISTRY
    }
    assert {name.lower() for name in constants} == set(REGISTRY)
    assert all(name.lower() == value for name, value in constants.items())


def test_an_error_without_a_code_is_a_bug() -> None:
    with pytest.raises(TypeError, match="needs a code"):
        SourceError("no code given")
    assert SourceError("x", code=errors.SOURCE_MISSING).exit_code == 3


def test_failure_lines_take_their_advice_from_the_registry(cli, repo) -> None:
    packet = repo.path / "packets/P-1/packet.yml"
    packet.write_text(packet.read_text().replace("docs/notes.md", "docs/gone.md"))
    repo.commit("a read that is gone")
    result = cli(["check", "packets/P-1/packet.yml"], cwd=repo.path)
    assert result.code == 3
    assert result.out.rstrip().endswith(f"; {REGISTRY[errors.SOURCE_MISSING].advice}")
