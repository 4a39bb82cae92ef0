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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

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
_SLASH, _STAR, _BACKSLASH, _OPEN, _CLOSE = b"/*\\[]"
_COLON, _DASH, _QUESTION = b":-?"

_ANY = frozenset(range(256))
_NOT_SLASH = _ANY - {_SLASH}


def _fold(byte: int) -> int:
    return byte + 32 if 65 <= byte <= 90 else byte


def _lower(byte: int) -> bool:
    return 97 <= byte <= 122


def _upper(byte: int) -> bool:
    return 65 <= byte <= 90


def _digit(byte: int) -> bool:
    return 48 <= byte <= 57


# The bracket classes, with git's own ctype (ASCII only; its space is
# space, tab, LF and CR).
_CLASSES: dict[bytes, Callable[[int], bool]] = {
    b"alnum": lambda t: _lower(t) or _upper(t) or _digit(t),
    b"alpha": lambda t: _lower(t) or _upper(t),
    b"blank": lambda t: t in (9, 32),
    b"cntrl": lambda t: t < 32 or t == 127,
    b"digit": _digit,
    b"graph": lambda t: 33 <= t <= 126,
    b"lower": _lower,
    b"print": lambda t: 32 <= t <= 126,
    b"punct": lambda t: 33 <= t <= 126 and not (_lower(t) or _upper(t) or _digit(t)),
    b"space": lambda t: t in (9, 10, 13, 32),
    b"upper": _upper,
    b"xdigit": lambda t: _digit(t) or 97 <= _fold(t) <= 102,
}


@dataclass(frozen=True)
class _Token:
    accepts: frozenset[int]  # the path bytes it matches (before folding)
    star: bool = False  # matches any run of them, the empty one included
    # Matches nothing itself: the way into a glob '**/', which may match nothing,
    # its '/' included (the star after it, and the '/', are skipped).
    skip: bool = False


def _literal(byte: int, *, escaped: bool, icase: bool) -> frozenset[int]:
    if not icase:
        return frozenset({byte})
    # Git folds the path byte, and the pattern byte unless it was escaped:
    # an escaped capital letter matches nothing under icase.
    target = byte if escaped else _fold(byte)
    return frozenset(t for t in (target, target - 32) if t >= 0 and _fold(t) == target)


class _Members:
    """What one ``[...]`` holds: bytes, ranges and named classes."""

    def __init__(self) -> None:
        self.singles: set[int] = set()
        self.ranges: list[tuple[int, int]] = []
        self.classes: list[Callable[[int], bool]] = []

    def has(self, t: int, icase: bool) -> bool:
        if t in self.singles or any(test(t) for test in self.classes):
            return True
        return any(
            low <= t <= high or (icase and _lower(t) and low <= t - 32 <= high)
            for low, high in self.ranges
        )


def _escaped(p: bytes, i: int) -> tuple[int, int] | None:
    """The byte at ``p[i]``, or the one after it when it is a backslash, and its
    index; None past the end."""
    if i < len(p) and p[i] == _BACKSLASH:
        i += 1
    return (p[i], i) if i < len(p) else None


def _named_class(p: bytes, i: int, members: _Members, icase: bool) -> tuple[int, int] | None:
    """A ``[:name:]`` at ``p[i]``: (0, the index of its ']') once added to
    ``members``; a plain ``[`` member when no ':]' closes it; None when no ']'
    comes or the name is no class (git gives up on the whole pattern then)."""
    start = i + 2
    end = p.find(b"]", start)
    if end < 0:
        return None
    if end - start - 1 < 0 or p[end - 1] != _COLON:
        members.singles.add(_OPEN)  # and on from the ':'
        return _OPEN, i
    test = _CLASSES.get(p[start : end - 1])
    if test is None:
        return None
    if test is _upper and icase:
        test = _CLASSES[b"alpha"]  # a folded letter is lower case
    members.classes.append(test)
    return 0, end


def _bracket(p: bytes, i: int, icase: bool) -> tuple[frozenset[int], int] | None:
    """The bytes ``[...]`` starting at ``p[i]`` (just past the ``[``) matches, and
    the index past its ``]``; None when it is not closed or names no class (then
    git's matcher gives up on the whole pattern)."""
    n = len(p)
    negated = i < n and p[i] in b"!^"
    if negated:
        i += 1
    members = _Members()
    prev = 0
    while True:
        if i >= n:
            return None
        c = p[i]
        got: tuple[int, int] | None
        if c == _BACKSLASH:
            got = _escaped(p, i)
            if got is not None:
                members.singles.add(got[0])
        elif c == _DASH and prev and i + 1 < n and p[i + 1] != _CLOSE:
            got = _escaped(p, i + 1)
            if got is not None:
                members.ranges.append((prev, got[0]))
                got = (0, got[1])
        elif c == _OPEN and i + 1 < n and p[i + 1] == _COLON:
            got = _named_class(p, i, members, icase)
        else:
            members.singles.add(c)
            got = (c, i)
        if got is None:
            return None
        prev, i = got
        i += 1
        if i < n and p[i] == _CLOSE:
            break
    fold = _fold if icase else int
    return frozenset(t for t in range(256) if members.has(fold(t), icase) != negated), i + 1


def _compile(p: bytes, rest: int, *, glob: bool, icase: bool) -> list[_Token] | None:
    """The tokens of pattern ``p``, whose wildcard part starts at ``rest``; None
    when it can match no path (an unclosed ``[``, a trailing backslash)."""
    tokens: list[_Token] = []
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == _STAR:
            j = i
            while j < n and p[j] == _STAR:
                j += 1
            if not glob:
                tokens.append(_Token(_ANY, star=True))
            elif (
                j - i >= 2
                and (i == rest or p[i - 1] == _SLASH)
                and (j == n or p[j] == _SLASH or p[j : j + 2] == b"\\/")
            ):
                if j < n and p[j] == _SLASH:
                    if len(tokens) >= 3 and tokens[-3].skip and p[i - 1] == _SLASH:
                        # '**/**/' is '**/': drop the second, and the '/' after it.
                        i = j + 1
                        continue
                    tokens.append(_Token(frozenset(), skip=True))
                tokens.append(_Token(_ANY, star=True))
            else:
                tokens.append(_Token(_NOT_SLASH, star=True))
            i = j
            continue
        if c == _QUESTION:
            tokens.append(_Token(_NOT_SLASH if glob else _ANY))
        elif c == _OPEN:
            parsed = _bracket(p, i + 1, icase)
            if parsed is None:
                return None
            accepts, i = parsed
            tokens.append(_Token(accepts - {_SLASH} if glob else accepts))
            continue
        elif c == _BACKSLASH:
            if i + 1 == n:
                return None
            i += 1
            tokens.append(_Token(_literal(p[i], escaped=True, icase=icase)))
        else:
            tokens.append(_Token(_literal(c, escaped=False, icase=icase)))
        i += 1
    return tokens


@dataclass(frozen=True)
class Pathspec:
    """One pathspec as given, and what it matches."""

    text: str
    match: bytes  # the path part, normalised (ASCII lower case under icase)
    exclude: bool
    icase: bool
    tokens: tuple[_Token, ...] | None  # the pattern, when it has one that can match

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
        compiled = _compile(match, plain, glob="glob" in words, icase=icase)
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
