"""Locators (``path``, ``path#heading-slug`` or ``path#parent-slug/.../heading-slug``)
and the path-safety rules."""

from __future__ import annotations

import re
from dataclasses import dataclass

from governance.errors import SourceError

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
class Selector:
    locator: str
    path: str
    slug: str | None
    # Slugs of enclosing headings, outermost first: ``a/b/c`` is slug ``c``
    # with parents ``("a", "b")``. Slugs never contain ``/``.
    parents: tuple[str, ...] = ()

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
        return SourceError(f"{shown}: unsafe path: {why}", code="unsafe_path", locator=shown)

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
            f"{locator}: empty heading slug after '#'", code="invalid_locator", locator=locator
        )
    check_path(path, locator=locator)
    if not hash_:
        return Selector(locator=locator, path=path, slug=None)
    *parents, slug = fragment.split("/")
    if "" in parents or not slug:
        raise SourceError(
            f"{locator}: empty heading slug in '#{fragment}' (write parent-slug/child-slug)",
            code="invalid_locator",
            locator=locator,
        )
    return Selector(locator=locator, path=path, slug=slug, parents=tuple(parents))
