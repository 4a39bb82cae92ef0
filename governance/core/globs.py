"""Path globs for finding records in git trees, one path segment at a time.

``*``, ``?`` and ``[...]`` match within one segment (never across ``/``); a
segment that is exactly ``**`` matches zero or more whole segments. Matching
is case-sensitive, like git paths. The matcher is a small automaton over
segments, so a tree walk can tell at each folder whether anything below it
can still match, and look literal segments up directly instead of listing
the folder.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from governance.errors import INVALID_GLOB, UsageError

_MAGIC = frozenset("*?[")

State = frozenset[tuple[int, int]]


def _check(pattern: str) -> tuple[str, ...]:
    def bad(why: str) -> UsageError:
        return UsageError(f"--paths {pattern!r}: {why}", code=INVALID_GLOB, glob=pattern)

    if not pattern:
        raise bad("empty")
    if pattern.startswith("/"):
        raise bad("use a repository-relative path, without a leading '/'")
    if "\\" in pattern or "\x00" in pattern:
        raise bad("backslashes and NUL are not part of git paths")
    segments = tuple(pattern.split("/"))
    for segment in segments:
        if segment in ("", ".", ".."):
            raise bad(f"{segment or 'an empty'!r} segment")
        if "**" in segment and segment != "**":
            raise bad("'**' must be a whole segment, as in 'a/**/b.json'")
    if segments[-1] == "**":
        raise bad("the last segment must name files, as in 'records/**/*.json'")
    return segments


class PathGlobs:
    def __init__(self, patterns: list[str]) -> None:
        if not patterns:
            raise UsageError("--paths needs at least one glob", code=INVALID_GLOB)
        self.patterns = list(patterns)
        self._segments = [_check(pattern) for pattern in patterns]
        self.start = self._closure({(index, 0) for index in range(len(self._segments))})

    def _closure(self, states: set[tuple[int, int]]) -> State:
        # '**' may match no segment at all: also stand just past it.
        todo = list(states)
        while todo:
            index, at = todo.pop()
            segments = self._segments[index]
            if at < len(segments) and segments[at] == "**" and (index, at + 1) not in states:
                states.add((index, at + 1))
                todo.append((index, at + 1))
        return frozenset(states)

    def step(self, state: State, name: str) -> State:
        """The state after descending into (or arriving at) an entry called ``name``."""
        out: set[tuple[int, int]] = set()
        for index, at in state:
            segments = self._segments[index]
            if at == len(segments):
                continue
            segment = segments[at]
            if segment == "**":
                out.add((index, at))
            elif fnmatchcase(name, segment):
                out.add((index, at + 1))
        return self._closure(out)

    def matches(self, state: State) -> bool:
        """A file reached in ``state`` is matched by some glob."""
        return any(at == len(self._segments[index]) for index, at in state)

    def descends(self, state: State) -> bool:
        """Something below a folder reached in ``state`` may still match."""
        return any(at < len(self._segments[index]) for index, at in state)

    def literals(self, state: State) -> frozenset[str] | None:
        """The only names that can advance ``state``, when every live segment is a
        literal (so a folder need not be listed); None when any is a wildcard."""
        names: set[str] = set()
        for index, at in state:
            segments = self._segments[index]
            if at == len(segments):
                continue
            segment = segments[at]
            if _MAGIC & set(segment):
                return None
            names.add(segment)
        return frozenset(names)
