"""Git's wildcard patterns (wildmatch) compiled to tokens: one set of path
bytes each, a star where it may repeat, for the position automaton
core/pathspecs.py runs over a path. ``*``, ``?``, ``[...]`` with ranges,
negation and git's ASCII named classes, backslash escapes; under ``glob``
``*``, ``?`` and brackets stop at ``/`` and ``**`` between slashes spans
folders; under ``icase`` ASCII letters fold as git folds them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
class Token:
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


def compile_pattern(p: bytes, rest: int, *, glob: bool, icase: bool) -> list[Token] | None:
    """The tokens of pattern ``p``, whose wildcard part starts at ``rest``; None
    when it can match no path (an unclosed ``[``, a trailing backslash)."""
    tokens: list[Token] = []
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == _STAR:
            j = i
            while j < n and p[j] == _STAR:
                j += 1
            if not glob:
                tokens.append(Token(_ANY, star=True))
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
                    tokens.append(Token(frozenset(), skip=True))
                tokens.append(Token(_ANY, star=True))
            else:
                tokens.append(Token(_NOT_SLASH, star=True))
            i = j
            continue
        if c == _QUESTION:
            tokens.append(Token(_NOT_SLASH if glob else _ANY))
        elif c == _OPEN:
            parsed = _bracket(p, i + 1, icase)
            if parsed is None:
                return None
            accepts, i = parsed
            tokens.append(Token(accepts - {_SLASH} if glob else accepts))
            continue
        elif c == _BACKSLASH:
            if i + 1 == n:
                return None
            i += 1
            tokens.append(Token(_literal(p[i], escaped=True, icase=icase)))
        else:
            tokens.append(Token(_literal(c, escaped=False, icase=icase)))
        i += 1
    return tokens
