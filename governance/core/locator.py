"""Locators (``path``, ``path#heading-slug``, ``path#parent-slug/.../heading-slug``,
the structural ``path#parent>child``, ``path#>top``, ``path#twin@2``,
``path#L10-L40``, or a Python symbol ``path.py#py:Class.method``) and the
path-safety rules."""

from __future__ import annotations

import re
from dataclasses import dataclass

from governance.core.symbols import PREFIX, parse_symbol
from governance.errors import INVALID_LOCATOR, LINE_RANGE_INVALID, UNSAFE_PATH, SourceError

# C0 controls and DEL (check_path names NUL on its own, before these).
_CONTROL = re.compile("[\x00-\x1f\x7f]")
# Paths already found safe (whether a path is safe depends on the path alone;
# the locator only words a refusal): a build checks the same few paths a
# dozen times. Bounded in count and in each path's length, since a hostile
# history may hold millions of distinct paths of up to 64 KiB: when full it
# starts again (a whole-set operation, safe should threads share it). Plain
# str only: a subclass could hash or compare as another path.
_SAFE: set[str] = set()
_SAFE_MAX = 4096
_SAFE_LONGEST = 1024


@dataclass(frozen=True)
class Step:
    """One heading of a structural selector: its slug (empty only beside an
    ordinal), the ordinal among its siblings of that slug (``@2``), and
    whether it is a direct child of the step before it (``>``), or, for the
    first step, a heading no other encloses (a leading ``>``)."""

    slug: str
    ordinal: int | None = None
    child: bool = False


@dataclass(frozen=True)
class Selector:
    locator: str
    path: str
    slug: str | None
    # Slugs of enclosing headings, outermost first: ``a/b/c`` is slug ``c``
    # with parents ``("a", "b")``. Slugs never contain ``/``.
    parents: tuple[str, ...] = ()
    # ``#L10-L40``: the first and last line, 1-based and inclusive (``#L10``
    # is ``(10, 10)``). A slug is never uppercase, so never ``L...``.
    lines: tuple[int, int] | None = None
    # A structural selector (``a>b``, ``>a``, ``a@2``): every step, outermost
    # first; empty for the other forms (``a/b`` keeps its own meaning).
    steps: tuple[Step, ...] = ()
    # ``#py:Class.method``: the dotted name of a Python definition (core.symbols).
    # A slug never holds ``:``, so never reads as one.
    symbol: str | None = None

    @property
    def whole(self) -> bool:
        """The locator names the whole file (no fragment)."""
        return self.slug is None and self.lines is None and self.symbol is None

    @property
    def slugs(self) -> tuple[str, ...]:
        """Every slug of the fragment, outermost first, the heading's own last."""
        assert self.slug is not None
        return (*self.parents, self.slug)


def check_path(path: str, *, locator: str | None = None) -> str:
    """Refuse any path that is not a plain, normalised, repository-relative POSIX path."""
    if type(path) is str and path in _SAFE:
        return path
    shown = locator if locator is not None else path

    def unsafe(why: str) -> SourceError:
        return SourceError(f"{shown}: unsafe path: {why}", code=UNSAFE_PATH, locator=shown)

    if not path:
        raise unsafe("empty")
    if "\x00" in path:
        raise unsafe("contains NUL")
    if _CONTROL.search(path):
        raise unsafe("contains a control character")
    if "\\" in path:
        raise unsafe("contains a backslash")
    if path.startswith("/"):
        raise unsafe("absolute")
    for part in path.split("/"):
        if part == "":
            raise unsafe("empty component (double or trailing slash)")
        if part in (".", ".."):
            raise unsafe(f"'{part}' component")
        # Case-insensitive: .GIT is .git on the file systems most people use.
        if part.lower() == ".git":
            raise unsafe("'.git' component")
    if type(path) is str and len(path) <= _SAFE_LONGEST:
        if len(_SAFE) >= _SAFE_MAX:
            _SAFE.clear()
        _SAFE.add(path)
    return path


# Locators already parsed, to their (immutable) selectors, bounded as _SAFE
# is: a build parses each of its reads' locators again to rebuild.
_PARSED: dict[str, Selector] = {}


def parse_locator(locator: str) -> Selector:
    if type(locator) is str:
        known = _PARSED.get(locator)
        if known is not None:
            return known
    selector = _parse_locator(locator)
    if type(locator) is str and len(locator) <= _SAFE_LONGEST:
        if len(_PARSED) >= _SAFE_MAX:
            _PARSED.clear()
        _PARSED[locator] = selector
    return selector


def _parse_locator(locator: str) -> Selector:
    path, hash_, fragment = locator.partition("#")
    if hash_ and not fragment:
        raise SourceError(
            f"{locator}: empty heading slug after '#'", code=INVALID_LOCATOR, locator=locator
        )
    check_path(path, locator=locator)
    if not hash_:
        return Selector(locator=locator, path=path, slug=None)
    if fragment.startswith(PREFIX):
        if not path.endswith(".py"):
            raise SourceError(
                f"{_shown(locator)}: a py: selector names a definition of a Python file "
                "(.py); select lines with #L10-L40",
                code=INVALID_LOCATOR,
                locator=locator,
            )
        symbol = parse_symbol(_shown(locator), fragment)
        return Selector(locator=locator, path=path, slug=None, symbol=symbol)
    if _LINE_FORM.match(fragment):
        return Selector(locator=locator, path=path, slug=None, lines=_line_range(locator, fragment))
    if ">" in fragment or "@" in fragment:
        steps = _steps(locator, fragment)
        return Selector(
            locator=locator,
            path=path,
            slug=steps[-1].slug,
            parents=tuple(step.slug for step in steps[:-1]),
            steps=steps,
        )
    *parents, slug = fragment.split("/")
    if "" in parents or not slug:
        raise SourceError(
            f"{locator}: empty heading slug in '#{fragment}' (write parent-slug/child-slug)",
            code=INVALID_LOCATOR,
            locator=locator,
        )
    return Selector(locator=locator, path=path, slug=slug, parents=tuple(parents))


# A structural fragment: an optional leading ``>``, then steps joined by
# ``/`` (enclosing, at any depth) or ``>`` (enclosing directly), each a slug
# with an optional ``@N``. GitHub's slugs never hold ``>``, ``@`` or ``/``
# (ASCII punctuation is deleted), so no slug reads as one, and no locator a
# build ever accepted holds ``>`` or ``@``.
_STEP = re.compile(r"([^/>@]*)(?:@([0-9]+))?")
_SEPARATOR = re.compile(r"[/>]")


def _steps(locator: str, fragment: str) -> tuple[Step, ...]:
    def invalid(why: str) -> SourceError:
        return SourceError(
            f"{_shown(locator)}: {why}; write parent>child for a direct child, >slug for a "
            "heading nothing encloses, slug@2 for the second of identical sibling headings",
            code=INVALID_LOCATOR,
            locator=locator,
        )

    child = fragment.startswith(">")
    body = fragment[1:] if child else fragment
    parts = _SEPARATOR.split(body)
    separators = _SEPARATOR.findall(body)
    steps: list[Step] = []
    for index, part in enumerate(parts):
        found = _STEP.fullmatch(part)
        if found is None:
            raise invalid(f"'@' is followed by a number, once a step, in {_shown(part)!r}")
        slug, number = found.group(1), found.group(2)
        ordinal = None
        if number is not None:
            if len(number) > _LINE_DIGITS:
                raise invalid(f"an ordinal has at most {_LINE_DIGITS} digits")
            if number.startswith("0"):
                raise invalid("ordinals count from 1" if set(number) == {"0"} else "a leading zero")
            ordinal = int(number)
        if not slug and ordinal is None:
            raise invalid(f"empty heading slug in '#{_shown(fragment)}'")
        steps.append(Step(slug, ordinal, child if index == 0 else separators[index - 1] == ">"))
    return tuple(steps)


# A fragment that starts as GitHub's line anchor does: ``L`` and a digit. No
# slug can (slugs are lowercase), so no heading locator changes meaning.
_LINE_FORM = re.compile(r"L[0-9]")
_LINE_RANGE = re.compile(r"L([0-9]+)(?:-L([0-9]+))?")
_COLUMNS = re.compile(r"L[0-9]+C[0-9]+(?:-L[0-9]+C[0-9]+)?")
# Line numbers of at most this many digits: int() of a long one costs time,
# and no source a capsule could hold has a billion lines.
_LINE_DIGITS = 9


def _line_range(locator: str, fragment: str) -> tuple[int, int]:
    def invalid(why: str) -> SourceError:
        return SourceError(
            f"{_shown(locator)}: {why}; write #L10-L40 for lines 10 to 40, or #L10 for one line",
            code=LINE_RANGE_INVALID,
            locator=locator,
        )

    found = _LINE_RANGE.fullmatch(fragment)
    if found is None:
        if _COLUMNS.fullmatch(fragment):
            raise invalid("a line range selects whole lines: columns (GitHub's C) are not read")
        raise invalid("not a line range")
    numbers = [found.group(1), found.group(2) or found.group(1)]
    for number in numbers:
        if len(number) > _LINE_DIGITS:
            raise invalid(f"line numbers have at most {_LINE_DIGITS} digits")
        if number.startswith("0"):
            raise invalid("lines are numbered from 1" if set(number) == {"0"} else "a leading zero")
    first, last = int(numbers[0]), int(numbers[1])
    if last < first:
        raise invalid(f"the range is reversed (line {first} after line {last})")
    return first, last


def _shown(locator: str) -> str:
    # A hostile locator may be long: its message quotes a bounded part.
    return locator if len(locator) <= 120 else locator[:100] + "..."
