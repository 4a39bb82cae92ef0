"""Which candidates become reads: BM25 per facet, then a greedy choice by marginal
facet coverage per byte (integer cross-multiplication; a facet counts until
two reads cover it), a document the goal names by title first, the best
section of each file first, no overlap, no duplicate, one file's share
capped, every read fitting the real budget; then the next-best by score
fill toward the target. Every candidate ends in exactly one bucket."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from governance.authoring import bm25
from governance.authoring.corpus import Doc
from governance.authoring.facets import IN_A_ROW, Facet
from governance.authoring.terms import tokens

# A read costs at least this many bytes in the ratio: a three-line section that
# happens to name a term is not worth ten times a page that explains it. Below
# it, BM25 decides alone (bench/bench_suggest_quality.py: 1 KiB gave a 52% hit
# rate, 4 KiB 67%).
MIN_COST_BYTES = 4096

# A stub: a section with fewer bytes than this of its own words, its heading
# lines, blank lines and HTML comments (a template's instructions) left out,
# such as a "## Test Plan" holding "TBD". It ranks below every substantive
# section apart from it: it is taken only when nothing substantive covers
# what it does.
# Most RFC Summaries are one long sentence of 150-400 bytes; none is a stub.
STUB_BYTES = 40
_COMMENT = re.compile(rb"<!--.*?(?:-->|\Z)", re.DOTALL)
_NOT_WORDS = re.compile(rb"^[ \t]{0,3}(?:#{1,6}(?:[ \t][^\n]*)?|=+|-+|[ \t]*)$\n?", re.MULTILINE)

DUPLICATE = "duplicate"
OVERLAP = "overlap"
REDUNDANT = "redundant_coverage"
SHARE_CAP = "share_cap"
BUDGET = "budget"
READ_LIMIT = "read_limit"
REASONS = (DUPLICATE, OVERLAP, REDUNDANT, SHARE_CAP, BUDGET, READ_LIMIT)
# A facet stops adding value once this many reads cover it: a second read
# that says the same thing from elsewhere corroborates; a third mostly repeats.
DEPTH = 2
# A candidate that only corroborates (every facet of it is covered once) is
# redundant too when that is worth at most 1/WORTH of what the first read
# added: the tail of a long goal's common words.
WORTH = 4

FACET_NOT_FOUND = "facet_not_found"
BUDGET_EXHAUSTED = "budget_exhausted"
GAP_READ_LIMIT = "read_limit"
GAP_OVERLAP = "overlap"


class Fit(Protocol):
    def might_fit(self, doc: Doc) -> bool:
        """False only when ``doc`` surely cannot be added (a lower bound)."""

    def fits(self, doc: Doc) -> bool:
        """Whether the reads so far and ``doc`` fit, as the builder computes it."""

    def add(self, doc: Doc) -> None: ...


@dataclass
class Candidate:
    doc: Doc
    score: int  # BM25 of the whole goal, x bm25.SCALE
    facets: dict[int, int]  # facet index -> BM25 of its terms
    named: bool = False  # the goal names its document's title
    stub: bool = False  # too few words of its own to be worth a read (STUB_BYTES)

    @property
    def cost(self) -> int:
        return max(self.doc.n_bytes, MIN_COST_BYTES)

    def value(self, full: set[int]) -> int:
        """The scores of its facets that fewer than DEPTH chosen reads cover."""
        return sum(score for index, score in self.facets.items() if index not in full)


@dataclass
class Selection:
    reads: list[Candidate] = field(default_factory=list)
    candidates: int = 0
    omitted: Counter[str] = field(default_factory=Counter)
    gaps: dict[int, str] = field(default_factory=dict)


def _covers(doc: Doc, facet: Facet, joined: dict[int, str]) -> bool:
    """Whether ``doc`` holds every term of ``facet`` (a phrase or compound: its
    tokens in a row). ``joined`` keeps the doc's tokens, space-joined, across
    facets: a doc is tokenised once however many phrases the goal has."""
    if any(doc.tf.get(term, 0) == 0 for term in facet.terms):
        return False
    if facet.kind not in IN_A_ROW or len(facet.sequence) < 2:
        return True
    text = joined.get(id(doc))
    if text is None:
        text = joined[id(doc)] = " " + " ".join(tokens(doc.text)) + " "
    return f" {' '.join(facet.sequence)} " in text


def is_stub(data: bytes) -> bool:
    """Fewer than STUB_BYTES of words once headings, blank lines and HTML
    comments are left out."""
    return len(_NOT_WORDS.sub(b"", _COMMENT.sub(b"", data))) < STUB_BYTES


def score(docs: Sequence[Doc], facets: Sequence[Facet]) -> list[Candidate]:
    """Every doc covering at least one facet, with its integer scores, best first
    (ties by path, then line)."""
    n_docs = len(docs)
    total = sum(doc.length for doc in docs)
    terms = sorted({term for facet in facets for term in facet.terms})
    goal_terms = frozenset(terms)
    freq = Counter(term for doc in docs for term in doc.tf)
    idf = {term: bm25.idf(n_docs, freq[term]) for term in terms if freq[term]}
    out: list[Candidate] = []
    for doc in docs:
        if not doc.tf:
            continue
        per_term = {
            term: bm25.term_score(idf[term], tf, doc.length, n_docs, total)
            for term, tf in doc.tf.items()
            if term in idf
        }
        joined: dict[int, str] = {}
        covered = {
            index: sum(per_term[term] for term in facet.terms)
            for index, facet in enumerate(facets)
            if _covers(doc, facet, joined)
        }
        if covered:
            named = bool(doc.title_terms) and doc.title_terms <= goal_terms
            out.append(
                Candidate(
                    doc=doc,
                    score=sum(per_term.values()),
                    facets=covered,
                    named=named,
                    stub=is_stub(doc.data),
                )
            )
    out.sort(key=_rank)
    return out


def _rank(c: Candidate) -> tuple[bool, int, str, int, int, bool]:
    # Substantive before stubs, then by score, then by place.
    return (c.stub, -c.score, *_place(c.doc))


def _better(a: Candidate, b: Candidate, full: set[int]) -> bool:
    """a before b: a substantive section before a stub apart from it (one that
    holds the stub has the stub's words plus perhaps only padding: coverage
    per byte judges those), then more new coverage per byte (a.value / a.cost
    > b.value / b.cost, cross-multiplied), then by place."""
    if a.stub != b.stub and not _overlaps(a.doc, b.doc):
        return b.stub
    left = a.value(full) * b.cost
    right = b.value(full) * a.cost
    if left != right:
        return left > right
    return _place(a.doc) < _place(b.doc)


def _place(doc: Doc) -> tuple[str, int, int, bool]:
    # Path, then line; of a section and the whole file holding the same lines,
    # the section (its locator survives edits elsewhere in the file).
    return (doc.path, doc.first_line, -doc.last_line, doc.selector is None)


def _overlaps(a: Doc, b: Doc) -> bool:
    return a.path == b.path and a.first_line <= b.last_line and b.first_line <= a.last_line


def choose(  # noqa: C901, PLR0912, PLR0915 (coverage, then the fill; to split next)
    candidates: list[Candidate], n_facets: int, fit: Fit, *, max_reads: int, per_file: int
) -> Selection:
    selection = Selection(candidates=len(candidates))
    depth: Counter[int] = Counter()
    full: set[int] = set()  # facets covered DEPTH times
    first_value = 0  # what the first read added
    per_path: Counter[str] = Counter()
    texts: set[bytes] = set()
    dropped: dict[int, list[str]] = {index: [] for index in range(n_facets)}
    remaining = list(candidates)
    spare: list[Candidate] = []  # not needed for coverage: what fills toward the target

    def drop(candidate: Candidate, reason: str) -> None:
        selection.omitted[reason] += 1
        for index in candidate.facets:
            dropped[index].append(reason)

    def take(candidate: Candidate) -> None:
        fit.add(candidate.doc)
        selection.reads.append(candidate)
        for index in candidate.facets:
            depth[index] += 1
        full.update(index for index in candidate.facets if depth[index] >= DEPTH)
        per_path[candidate.doc.path] += 1
        texts.add(candidate.doc.data)

    while remaining:
        kept = []
        for candidate in remaining:
            doc = candidate.doc
            if doc.data in texts:
                drop(candidate, DUPLICATE)
            elif any(_overlaps(doc, read.doc) for read in selection.reads):
                drop(candidate, OVERLAP)
            elif candidate.value(full) == 0 or (
                # Corroboration only: every facet of it is covered once already.
                all(depth[index] for index in candidate.facets)
                and candidate.value(full) * WORTH <= first_value
            ):
                spare.append(candidate)
            elif per_path[doc.path] >= per_file:
                drop(candidate, SHARE_CAP)
            elif len(selection.reads) >= max_reads:
                drop(candidate, READ_LIMIT)
            elif not fit.might_fit(doc):
                drop(candidate, BUDGET)
            else:
                kept.append(candidate)
        remaining = kept
        if not remaining:
            break
        # The best of a document the goal names by its title first; then,
        # while some file has no read yet, the best of those files first.
        # (A stub of a named document is no lead: an empty file's name alone
        # may be its title.)
        pool = [c for c in remaining if c.named and not c.stub and per_path[c.doc.path] == 0]
        pool = pool or [c for c in remaining if per_path[c.doc.path] == 0] or remaining
        best = pool[0]
        for candidate in pool[1:]:
            if _better(candidate, best, full):
                best = candidate
        remaining.remove(best)
        if not fit.fits(best.doc):
            drop(best, BUDGET)
            continue
        if not selection.reads:
            first_value = best.value(full)
        take(best)

    # Coverage is met, or nothing more covers anything: the next-best of the
    # rest (score order) fill toward the target budget, within the same rules.
    for candidate in sorted(spare, key=_rank):
        doc = candidate.doc
        if doc.data in texts:
            drop(candidate, DUPLICATE)
        elif any(_overlaps(doc, read.doc) for read in selection.reads):
            drop(candidate, OVERLAP)
        elif per_path[doc.path] >= per_file:
            drop(candidate, SHARE_CAP)
        elif len(selection.reads) >= max_reads:
            # Not needed for coverage, and the packet is full.
            drop(candidate, REDUNDANT)
        elif not fit.might_fit(doc) or not fit.fits(doc):
            drop(candidate, BUDGET)
        else:
            take(candidate)

    for index in range(n_facets):
        if depth[index]:
            continue
        reasons = dropped[index]
        if not reasons:
            selection.gaps[index] = FACET_NOT_FOUND
        elif BUDGET in reasons:
            selection.gaps[index] = BUDGET_EXHAUSTED
        elif READ_LIMIT in reasons or SHARE_CAP in reasons:
            selection.gaps[index] = GAP_READ_LIMIT
        else:
            selection.gaps[index] = GAP_OVERLAP
    return selection
