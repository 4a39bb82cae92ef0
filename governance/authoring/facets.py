"""Facets of a goal, by rules and without a model: quoted phrases, the two
sides of "X vs Y" and "compare A and B", runs of capitalised words, hyphenated
compounds ("pre-commit"), then the remaining content words. A section covers
a facet when it holds every term of it (a phrase or a compound: its tokens in
a row)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from governance.authoring.terms import LETTER, STOPWORDS, content_terms, normalise, runs, stem

MAX_GOAL_CHARS = 2000
MAX_FACETS = 16

PHRASE = "phrase"
SIDE = "side"
NAME = "name"
COMPOUND = "compound"
WORD = "word"
# Kinds matched as their tokens in a row, stop words too.
IN_A_ROW = frozenset({PHRASE, COMPOUND})

_COMPOUND = re.compile(f"{LETTER}+(?:-{LETTER}+)+")
_QUOTED = re.compile(r'"([^"]+)"|\u201c([^\u201c\u201d]+)\u201d|`([^`]+)`')
# Words as written (case kept), with where they start; punctuation splits clauses.
_WORD = re.compile(f"{LETTER}+(?:['\u2019.-]{LETTER}+)*")
_CLAUSE = re.compile(r"[.,;:!?()\[\]{}]+(?:\s|$)|\n")
_VERSUS = frozenset({"vs", "versus", "v"})
_COMPARE = frozenset({"compare", "comparing", "compared", "contrast"})
_COMPARE_JOIN = frozenset({"and", "with", "to", "against"})
# The stems of the words that join sides: never a facet of their own.
_CONNECTIVES = frozenset(stem(word) for word in _VERSUS | _COMPARE)


@dataclass(frozen=True)
class Facet:
    text: str  # its normalised words joined by a space: also its name
    kind: str
    terms: tuple[str, ...]  # stems of its content words (scored and required)
    sequence: tuple[str, ...]  # every token, stop words too, for a phrase

    def to_json(self) -> dict[str, object]:
        return {"facet": self.text, "kind": self.kind, "terms": list(self.terms)}


def _facet(kind: str, text: str) -> Facet | None:
    # Matched on stems; named by the words as the goal wrote them (the first
    # word of each stem).
    words = runs(normalise(text))
    sequence = tuple(stem(word) for word in words)
    shown: dict[str, str] = {}
    for word in words:
        if len(word) > 1 and word not in STOPWORDS:
            shown.setdefault(stem(word), word)
    terms = tuple(shown)
    if not terms:
        return None
    return Facet(
        text=" ".join(words if kind in IN_A_ROW else shown.values()),
        kind=kind,
        terms=terms,
        sequence=sequence if kind in IN_A_ROW else terms,
    )


def _run(words: list[str], start: int, step: int) -> list[str]:
    """Content words next to ``start`` going ``step``, up to a stop word."""
    out: list[str] = []
    at = start
    while 0 <= at < len(words) and normalise(words[at]) not in STOPWORDS:
        out.append(words[at])
        at += step
    return out if step > 0 else out[::-1]


def _sides(clause: str) -> list[str]:
    words = _WORD.findall(clause)
    low = [normalise(word) for word in words]
    sides: list[str] = []
    for index, word in enumerate(low):
        if word in _VERSUS:
            sides += [" ".join(_run(words, index - 1, -1)), " ".join(_run(words, index + 1, 1))]
        elif word in _COMPARE:
            first = _run(words, index + 1, 1)
            after = index + 1 + len(first)
            if first and after < len(low) and low[after] in _COMPARE_JOIN:
                sides += [" ".join(first), " ".join(_run(words, after + 1, 1))]
    return [side for side in sides if side]


def _names(clause: str) -> list[str]:
    """Runs of capitalised words; a lone one only when it does not start the clause
    (a sentence's first word is capitalised whatever it means)."""
    names: list[str] = []
    run: list[str] = []
    first = True

    def flush(at_start: bool) -> None:
        if len(run) > 1 or (run and not at_start):
            names.append(" ".join(run))
        run.clear()

    run_at_start = False
    for match in _WORD.finditer(clause):
        word = match.group()
        capital = word[0].isupper() and normalise(word) not in STOPWORDS
        if capital:
            if not run:
                run_at_start = first
            run.append(word)
        else:
            flush(run_at_start)
        first = False
    flush(run_at_start)
    return names


def goal_facets(goal: str) -> list[Facet]:
    """The facets of ``goal``, in rule order, then in order of appearance; each term
    set once, at most MAX_FACETS."""
    found: list[Facet] = []
    seen: set[tuple[str, ...]] = set()
    claimed: set[str] = set()

    def add(kind: str, text: str) -> None:
        facet = _facet(kind, text)
        if facet is None or facet.sequence in seen or len(found) >= MAX_FACETS:
            return
        seen.add(facet.sequence)
        found.append(facet)
        claimed.update(facet.terms)

    for match in _QUOTED.finditer(goal):
        add(PHRASE, next(group for group in match.groups() if group is not None))
    rest = _QUOTED.sub(" . ", goal)
    clauses = _CLAUSE.split(rest)
    for clause in clauses:
        for side in _sides(clause):
            add(SIDE, side)
    for clause in clauses:
        for name in _names(clause):
            # A lone capital ("X", "N-1") may hold no content term at all.
            terms = content_terms(name)
            if len(terms) > 1 or (terms and terms[0] not in claimed):
                add(NAME, name)
    for compound in _COMPOUND.findall(rest):
        add(COMPOUND, compound)
    for word in runs(normalise(rest)):
        term = stem(word)
        if len(word) > 1 and word not in STOPWORDS and term not in claimed | _CONNECTIVES:
            add(WORD, word)
    return found
