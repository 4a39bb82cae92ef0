"""Git pathspecs, matched as ``git ls-files -- PATHSPEC ...`` run at the top of
the work tree matches them.

Without magic a pathspec names a path and everything under it (``docs``,
``docs/``), and from its first ``*``, ``?``, ``[`` or backslash on it is also a
pattern over the whole path, in which ``*`` and ``?`` match ``/`` as well.
Magic, long (``:(glob,icase)docs/**``) or short (``:/docs``, ``:!docs``,
``:^docs``): ``top`` (pathspecs are read from the top already), ``exclude``,
``glob`` (``*``, ``?`` and ``[...]`` stop at ``/``; ``**`` between slashes
spans folders), ``icase`` (ASCII letters fold, as git folds them) and
``literal``. Any other magic is refused, never guessed at.

Git's matcher backtracks; here a pattern is compiled to a position automaton
run as a bit set, one byte of the path at a time, so matching is linear in the
path for any pattern. A walk keeps the automaton's state at each folder for
the entries inside it, and never enters a folder below which nothing can match.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from governance.core.wildmatch import Token, compile_pattern
from governance.errors import (
    INVALID_PATHSPEC,
    PATHSPEC_NO_MATCH,
    PATHSPEC_TOO_LONG,
    TOO_MANY_PATHSPECS,
    UsageError,
)

# Bounds on what one command line (or one MCP call) may ask: matching costs at
# most the pathspecs' bytes per byte of a path.
MAX_PATHSPECS = 64
MAX_PATHSPEC_BYTES = 4096  # all of them together, as UTF-8

MAGIC_WORDS = ("top", "exclude", "glob", "icase", "literal")
# Git's short magic is any of this punctuation after the leading ':'; it
# implements only '/' (top) and '!' or '^' (exclude), and so do we.
_SHORT_MAGIC = frozenset(b"!\"#%&',-/:;<=>@_`~")
_GLOB_SPECIAL = frozenset(b"*?[\\")
_SLASH, _COLON = b"/:"


@dataclass(frozen=True)
class Pathspec:
    """One pathspec as given, and what it matches."""

    text: str
    match: bytes  # the path part, normalised (ASCII lower case under icase)
    exclude: bool
    icase: bool
    tokens: tuple[Token, ...] | None  # the pattern, when it has one that can match

    def names(self, path: bytes) -> bool:
        """``path`` is this pathspec's path or lies under it (git's literal test,
        made whatever the pattern)."""
        m = self.match
        if len(m) > len(path) or not path.startswith(m):
            return False
        return not m or len(m) == len(path) or m[-1] == _SLASH or path[len(m)] == _SLASH


def _bad(text: str, why: str) -> UsageError:
    return UsageError(f"--paths {text!r}: {why}", code=INVALID_PATHSPEC, pathspec=text)


def _magic(text: str, raw: bytes) -> tuple[set[str], bytes]:
    """The magic words of ``raw`` and the path part after them."""
    if not raw.startswith(b":"):
        return set(), raw
    words: set[str] = set()
    if raw.startswith(b":("):
        end = raw.find(b")", 2)
        if end < 0:
            raise _bad(text, "its magic has no closing ')'")
        for word in raw[2:end].split(b","):
            name = word.decode("utf-8", "replace")
            if name and name not in MAGIC_WORDS:
                raise _bad(text, f"magic {name!r} is not supported (only {', '.join(MAGIC_WORDS)})")
            if name:
                words.add(name)
        return words, raw[end + 1 :]
    k = 1
    while k < len(raw) and raw[k] != _COLON:
        ch = raw[k]
        if ch in b"!^":
            words.add("exclude")
        elif ch == _SLASH:
            words.add("top")
        elif ch in _SHORT_MAGIC:
            raise _bad(text, f"short magic {chr(ch)!r} is not supported (only '/', '!' and '^')")
        else:
            break
        k += 1
    if k < len(raw) and raw[k] == _COLON:
        k += 1
    return words, raw[k:]


def _normalise(text: str, path: bytes) -> bytes:
    """``path`` with '.' and empty segments dropped and '..' applied, as git
    reads a pathspec typed at the top of its work tree."""
    if path.startswith(b"/"):
        raise _bad(text, "a pathspec is a repository path, without a leading '/'")
    kept: list[bytes] = []
    segments = path.split(b"/")
    for segment in segments:
        if segment == b"..":
            if not kept:
                raise _bad(text, "'..' leads outside the repository")
            kept.pop()
        elif segment not in (b"", b"."):
            kept.append(segment)
    folder = segments[-1] in (b"", b".", b"..")
    return b"/".join(kept) + (b"/" if kept and folder else b"")


def parse(text: str) -> Pathspec:
    """One pathspec, or ``invalid_pathspec`` for what git refuses or we do not
    implement."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise _bad(text, "it is not UTF-8 text") from None
    if not raw:
        raise _bad(text, "an empty pathspec names nothing ('.' names every file)")
    if b"\x00" in raw:
        raise _bad(text, "a NUL is never part of a path")
    words, path = _magic(text, raw)
    if "literal" in words and "glob" in words:
        raise _bad(text, "'literal' and 'glob' magic exclude each other")
    icase = "icase" in words
    # Git takes a pathspec with 'top' magic as it is, without normalising it.
    match = path if "top" in words else _normalise(text, path)
    plain = next((k for k, byte in enumerate(match) if byte in _GLOB_SPECIAL), len(match))
    tokens = None
    if "literal" not in words and plain < len(match):
        compiled = compile_pattern(match, plain, glob="glob" in words, icase=icase)
        tokens = None if compiled is None else tuple(compiled)
    return Pathspec(text, match.lower() if icase else match, "exclude" in words, icase, tokens)


class Place(NamedTuple):
    """Where a walk stands: a folder's path (with its '/'), the automaton's state
    there, and the pathspecs whose path part is still in reach (a bit each)."""

    prefix: bytes
    state: int
    reach: int


class Pathspecs:
    """Pathspecs a path matches as ``git ls-files`` would have it: by one that is
    not an exclusion and by no exclusion (only exclusions: by every path)."""

    def __init__(self, texts: Sequence[str]) -> None:
        if not texts:
            raise UsageError("--paths needs at least one pathspec", code=INVALID_PATHSPEC)
        if len(texts) > MAX_PATHSPECS:
            raise UsageError(
                f"--paths got {len(texts)} pathspecs, more than {MAX_PATHSPECS}",
                code=TOO_MANY_PATHSPECS,
            )
        size = sum(len(text.encode("utf-8", "surrogatepass")) for text in texts)
        if size > MAX_PATHSPEC_BYTES:
            raise UsageError(
                f"--paths got pathspecs of {size:,} bytes, more than {MAX_PATHSPEC_BYTES:,} in all",
                code=PATHSPEC_TOO_LONG,
            )
        self.items = [parse(text) for text in texts]
        self.texts = list(texts)
        self._given = (1 << len(self.items)) - 1
        if all(item.exclude for item in self.items):
            # Git's rule: exclusions alone are taken from every path.
            self.items.append(Pathspec(":/", b"", False, False, None))
        self.positive = sum(1 << k for k, item in enumerate(self.items) if not item.exclude)
        self.negative = sum(1 << k for k, item in enumerate(self.items) if item.exclude)
        self._build()

    def _build(self) -> None:
        single = [0] * 256
        stars_any = stars_slash = skips = start = live = 0
        self._accepts: list[tuple[int, int]] = []  # (accept bit, item bit)
        offset = 0
        for k, item in enumerate(self.items):
            if item.tokens is None:
                continue
            start |= 1 << offset
            for position, token in enumerate(item.tokens, offset):
                bit = 1 << position
                if not item.exclude:
                    live |= bit
                if token.skip:
                    skips |= bit
                if token.star:
                    stars_any |= bit
                    if _SLASH in token.accepts:
                        stars_slash |= bit
                else:
                    for byte in token.accepts:
                        single[byte] |= bit
            offset += len(item.tokens)
            self._accepts.append((1 << offset, 1 << k))
            offset += 1
        self._single = single
        self._stars = stars_any  # every star matches any byte but '/'
        self._stars_slash = stars_slash  # these match '/' too
        self._skips = skips
        self._live = live
        self._accept_all = sum(bit for bit, _ in self._accepts)
        self.start = Place(b"", self._close(start), (1 << len(self.items)) - 1)

    def _close(self, state: int) -> int:
        # A star may match nothing; a glob '**/' may match nothing, '/' and all.
        while True:
            forks = state & self._skips
            more = state | ((state & self._stars | forks) << 1) | (forks << 3)
            if more == state:
                return state
            state = more

    def _run(self, state: int, data: bytes) -> int:
        single = self._single
        for byte in data:
            if not state:
                return 0
            stars = self._stars_slash if byte == _SLASH else self._stars
            state = self._close(((state & single[byte]) << 1) | (state & stars))
        return state

    def _reach(self, reach: int, prefix: bytes) -> int:
        kept = 0
        folded = None
        for k, item in enumerate(self.items):
            if not reach >> k & 1:
                continue
            path = prefix
            if item.icase:
                folded = prefix.lower() if folded is None else folded
                path = folded
            if item.match[: len(path)] == path[: len(item.match)]:
                kept |= 1 << k
        return kept

    def enter(self, at: Place, name: str) -> Place | None:
        """The place inside folder ``name`` of ``at``; None when no file below it
        can match."""
        data = name.encode("utf-8", "surrogateescape") + b"/"
        prefix = at.prefix + data
        state = self._run(at.state, data)
        reach = self._reach(at.reach, prefix)
        if not (state & self._live or reach & self.positive):
            return None
        return Place(prefix, state, reach)

    def test(self, at: Place, name: str) -> tuple[bool, int]:
        """Whether file ``name`` of ``at`` is matched, and the pathspecs given that
        name it (a bit each, exclusions left out), matched or excluded."""
        data = name.encode("utf-8", "surrogateescape")
        path = at.prefix + data
        hits = 0
        state = self._run(at.state, data)
        if state & self._accept_all:
            for accept, bit in self._accepts:
                if state & accept:
                    hits |= bit
        for k, item in enumerate(self.items):
            if (
                at.reach >> k & 1
                and not hits >> k & 1
                and item.names(path.lower() if item.icase else path)
            ):
                hits |= 1 << k
        chosen = bool(hits & self.positive) and not hits & self.negative
        return chosen, hits & self.positive & self._given

    @property
    def every(self) -> int:
        """The bits of every pathspec given that is not an exclusion."""
        return self.positive & self._given

    def require(self, seen: int, commit_id: str) -> None:
        """``pathspec_no_match`` naming each pathspec (not an exclusion) that
        matched no file, as ``git ls-files --error-unmatch`` does."""
        wanted = self.every & ~seen
        missing = [text for k, text in enumerate(self.texts) if wanted >> k & 1]
        if missing:
            listed = ", ".join(repr(text) for text in missing)
            verb = "matches" if len(missing) == 1 else "match"
            raise UsageError(
                f"--paths {listed} {verb} no file at {commit_id[:12]}",
                code=PATHSPEC_NO_MATCH,
                pathspecs=missing,
            )
