"""Python symbols as selectors: ``path.py#py:Class.method`` names the lines of
one ``def``, ``async def`` or ``class`` by its dotted qualified name, from its
first decorator to its last line, read through the standard library's ``ast``.

The name is the chain of enclosing classes and functions, as ``__qualname__``
gives it without ``<locals>``: ``outer.inner`` is a function defined in
``outer``. Two definitions of one name (a property's setter, a redefinition)
make it ambiguous: refused, never the first or the last.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

from governance.errors import (
    INVALID_LOCATOR,
    PYTHON_INVALID,
    SYMBOL_AMBIGUOUS,
    SYMBOL_MISSING,
    SourceError,
)

PREFIX = "py:"
# A dotted name of Python identifiers (ASCII letters, digits, underscores,
# and any other letter Python allows: \w), none starting with a digit.
_NAME = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
# ast.parse of 1 MB of Python takes about 2 s and 96 MB: larger sources are
# refused from their object header before any parse.
MAX_PYTHON_BYTES = 1 << 20
# How many of a refusal's candidates a message lists.
_LISTED = 20

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Symbol:
    """One definition: its qualified name, kind, and whole lines (1-based,
    inclusive, from the first decorator)."""

    name: str
    kind: str  # "def", "async def" or "class"
    first_line: int
    last_line: int


def parse_symbol(locator: str, fragment: str) -> str:
    """The qualified name of a ``py:`` fragment, or ``invalid_locator``."""
    name = fragment[len(PREFIX) :]
    if not _NAME.fullmatch(name):
        raise SourceError(
            f"{locator}: {fragment[:80]!r} is not a Python name; write py:function, py:Class "
            "or py:Class.method",
            code=INVALID_LOCATOR,
            locator=locator,
        )
    return name


def symbols(text: str, *, locator: str) -> list[Symbol]:
    """Every definition of the module ``text``, outermost first, in source order."""
    try:
        with warnings.catch_warnings():
            # An invalid escape in a string is a SyntaxWarning, printed: not ours to show.
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except SyntaxError as exc:
        raise SourceError(
            f"{locator}: not Python this ast can parse: {exc.msg} (line {exc.lineno})",
            code=PYTHON_INVALID,
            locator=locator,
        ) from None
    except (RecursionError, MemoryError, ValueError):
        raise SourceError(
            f"{locator}: the source nests too deeply (or holds a NUL byte) to parse",
            code=PYTHON_INVALID,
            locator=locator,
        ) from None
    return list(_walk(tree, ""))


def _walk(node: ast.AST, prefix: str) -> Iterator[Symbol]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _DEFINITIONS):
            name = f"{prefix}{child.name}"
            first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
            kind = {ast.ClassDef: "class", ast.AsyncFunctionDef: "async def"}.get(
                type(child), "def"
            )
            assert child.end_lineno is not None
            yield Symbol(name, kind, first, child.end_lineno)
            yield from _walk(child, f"{name}.")
        else:
            # Definitions inside if/try/with/for blocks keep their enclosing name.
            yield from _walk(child, prefix)


def find(found: list[Symbol], name: str, *, locator: str, path: str) -> Symbol:
    """The one definition named ``name``, failing closed."""
    named = [symbol for symbol in found if symbol.name == name]
    if len(named) == 1:
        return named[0]
    if named:
        lines = ", ".join(f"{s.first_line}-{s.last_line}" for s in named[:_LISTED])
        raise SourceError(
            f"{locator}: {path} defines {name} {len(named)} times (lines {lines}); select "
            "the lines of the one meant with #L<first>-L<last>",
            code=SYMBOL_AMBIGUOUS,
            locator=locator,
            count=len(named),
            lines=[[s.first_line, s.last_line] for s in named[:_LISTED]],
        )
    tops = sorted({s.name for s in found if "." not in s.name})
    shown = ", ".join(tops[:_LISTED]) + (
        f" and {len(tops) - _LISTED} more" if len(tops) > _LISTED else ""
    )
    raise SourceError(
        f"{locator}: {path} defines no {name}" + (f" (top level: {shown})" if tops else ""),
        code=SYMBOL_MISSING,
        locator=locator,
        symbols=len(found),
    )
