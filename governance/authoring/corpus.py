"""The corpus a goal is matched against: every heading section, and every small
whole file, of the tracked Markdown at one commit, read through the snapshot
with its fail-closed rules and bounded before anything is read."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import accumulate

import pygit2

from governance.authoring.terms import TermCounter, content_terms, normalise, tokens
from governance.core.capsule import PACKETS_DIR
from governance.core.headings import (
    Heading,
    heading_lines,
    line_count,
    parse_headings,
    split_lines,
)
from governance.core.pathspecs import Pathspecs, Place
from governance.core.policy import DEFAULT_MAX_HEADING_COUNT
from governance.core.snapshot import MODE_TREE, Snapshot
from governance.core.tree import Tree
from governance.core.unnamed import candidate_locator
from governance.errors import CapsuleError

MARKDOWN_SUFFIXES = (".md", ".markdown")


# Bounds taken before any blob is inflated: no repository makes suggest read
# more than this. What is left out is counted, never silently dropped.
@dataclass(frozen=True)
class Bounds:
    tree_entries: int = 200_000
    files: int = 10_000
    file_bytes: int = 4 << 20
    total_bytes: int = 64 << 20
    # Lines that may be headings (headings.heading_lines), counted before the
    # parse: the work per file grows with its headings.
    file_headings: int = DEFAULT_MAX_HEADING_COUNT


DEFAULT_BOUNDS = Bounds()
# A term in a section's own heading counts this many times (BM25F-like).
HEADING_WEIGHT = 3
# A file this small is also a candidate whole (locator ``path``).
SMALL_FILE_BYTES = 16 << 10
# A file name's leading number ("0042-quokka-habitat.md"): not part of its title.
_NUMBER_PREFIX = re.compile(r"^[0-9]+[-_ ]+")


@dataclass
class Doc:
    """One candidate read: a heading's section, or a whole small file."""

    path: str
    blob_id: str
    selector: str | None  # after '#': a slug, qualified where it repeats; None: whole file
    heading: Heading | None
    first_line: int
    last_line: int
    data: bytes
    length: int  # BM25's document length: the section's bytes
    tf: dict[str, int]  # of the goal's terms only
    # The content terms of the document's title (title_of): a goal naming them
    # all names the document.
    title_terms: frozenset[str] = frozenset()

    @property
    def locator(self) -> str:
        return self.path if self.selector is None else f"{self.path}#{self.selector}"

    @property
    def n_bytes(self) -> int:
        return len(self.data)

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")


@dataclass
class Corpus:
    docs: list[Doc] = field(default_factory=list)
    files: int = 0
    bytes_read: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


def markdown_paths(
    snapshot: Snapshot, specs: Pathspecs | None, bounds: Bounds = DEFAULT_BOUNDS
) -> tuple[list[str], bool]:
    """Every Markdown path of the snapshot's tree (matching the pathspecs
    ``specs``, else outside ``packets/``), sorted, and whether the walk stopped at
    ``bounds.tree_entries``; ``pathspec_no_match`` when a walk that went the
    whole way found a pathspec matching no file."""
    found: list[str] = []
    visited = 0
    seen = 0  # the pathspecs that matched a file, Markdown or not
    start: Place | None = specs.start if specs is not None else None
    stack: list[tuple[pygit2.Tree, str, Place | None]] = [(snapshot.tree, "", start)]
    while stack:
        tree, prefix, place = stack.pop()
        for entry in tree:
            visited += 1
            if visited > bounds.tree_entries:
                return sorted(found), True
            name = entry.name or ""
            markdown = name.lower().endswith(MARKDOWN_SUFFIXES)
            if entry.filemode == MODE_TREE:
                inside = None
                if place is None:
                    if not prefix and name == PACKETS_DIR:
                        # Packets are what suggestions are for, not evidence: a
                        # packet's own context.md is in its capsule whole anyway.
                        continue
                else:
                    assert specs is not None
                    inside = specs.enter(place, name)
                    if inside is None:
                        continue
                assert isinstance(entry, pygit2.Tree)
                stack.append((entry, f"{prefix}{name}/", inside))
                continue
            if specs is not None and place is not None:
                if not markdown and seen == specs.every:
                    continue
                chosen, named = specs.test(place, name)
                seen |= named
                if not chosen:
                    continue
            if markdown:
                found.append(f"{prefix}{name}")
    if specs is not None:
        specs.require(seen, snapshot.commit_id)
    return sorted(found), False


_NUMBERED = re.compile(r"(.+)-([1-9][0-9]*)")


def usable_slugs(headings: Iterable[Heading]) -> set[str]:
    """Slugs a plain ``path#slug`` surely names alone: unique in the file, and not
    a ``base-N`` that could be GitHub's position number for a repeated ``base``.
    (A quick path: every other heading asks the tree for its qualified selector.)"""
    counts = Counter(heading.slug for heading in headings)
    usable = set()
    for slug, count in counts.items():
        if count != 1:
            continue
        numbered = _NUMBERED.fullmatch(slug)
        if numbered and counts.get(numbered.group(1), 0) > int(numbered.group(2)):
            continue
        usable.add(slug)
    return usable


def title_of(path: str, headings: list[Heading]) -> str:
    """A document's title: its first heading when that is its only level-1 one,
    else its file name without a leading number or suffix (``0042-quokka-habitat``
    is titled "quokka habitat")."""
    top = [heading for heading in headings if heading.level == 1]
    if len(top) == 1 and headings[0] is top[0]:
        return top[0].text
    stem = path.rpartition("/")[2].rpartition(".")[0] or path
    return _NUMBER_PREFIX.sub("", stem).replace("_", " ").replace("-", " ")


def _file_docs(
    path: str, blob_id: str, data: bytes, *, counter: TermCounter, corpus: Corpus
) -> None:
    text = data.decode("utf-8")
    headings = parse_headings(text)
    lines = split_lines(data)
    offsets = [0, *accumulate(map(len, lines))]
    # Blocks: the lines before the first heading, then each heading's own lines up
    # to the next heading of any rank. Every section is a run of whole blocks.
    starts = [1] + [heading.line for heading in headings]
    ends = [heading.line - 1 for heading in headings] + [len(lines)]
    # The blocks run from the first line to the last: block k ends where the
    # first k + 1 of them do.
    lengths = [0, *(offsets[last] for last in ends)]
    terms = counter.terms
    # Normalised block by block: NFC and casefold never reach across a line end.
    sums = counter.running(
        [
            normalise(data[offsets[first - 1] : offsets[last]].decode("utf-8"))
            for first, last in zip(starts, ends, strict=True)
        ]
    )
    # Headings and contexts repeat (a document's title is every section's):
    # each text is tokenised once.
    tokenised: dict[str, list[str]] = {}

    def tokens_of(text: str) -> list[str]:
        found = tokenised.get(text)
        if found is None:
            found = tokenised[text] = tokens(text)
        return found

    def doc(
        selector: str | None, heading: Heading | None, block_a: int, block_b: int, context: str
    ) -> Doc:
        first, last = starts[block_a], ends[block_b - 1]
        tf = {t: s[block_b] - s[block_a] for t, s in sums.items() if s[block_b] > s[block_a]}
        if heading is not None and tf:
            # A term of the section's own heading says what it is about: it
            # counts HEADING_WEIGHT times (once already, in the heading's line).
            for term in tokens_of(heading.text):
                if term in tf:
                    tf[term] += HEADING_WEIGHT - 1
        # The enclosing headings and the document's title say what it is part
        # of: each of their terms counts once more, in the section or not.
        for term in set(tokens_of(context)) & terms:
            tf[term] = tf.get(term, 0) + 1
        return Doc(
            path=path,
            blob_id=blob_id,
            selector=selector,
            heading=heading,
            first_line=first,
            last_line=last,
            data=data[offsets[first - 1] : offsets[last]],
            length=lengths[block_b] - lengths[block_a],
            tf=tf,
            title_terms=title_terms,
        )

    title = title_of(path, headings)
    title_terms = frozenset(content_terms(title))
    if len(data) <= SMALL_FILE_BYTES or not headings:
        if len(data) <= SMALL_FILE_BYTES:
            corpus.docs.append(doc(None, None, 0, len(starts), title))
        else:
            corpus.skipped["large_without_headings"] += 1
    tree = Tree(headings, len(lines))
    plain = usable_slugs(headings)
    for index, heading in enumerate(headings):
        if heading.slug in plain:
            selector = heading.slug
        else:
            # A repeated slug: the selector naming it alone, unless only an
            # ordinal among identical siblings does (it moves with an edit).
            selector = candidate_locator(path, tree, index).partition("#")[2]
        if "@" in selector:
            corpus.skipped["heading_positional"] += 1
            continue
        # The section's last block: the one that ends on its last line.
        last_line = tree.sections[index].last_line
        last_block = index + 1
        while last_block < len(starts) and ends[last_block] < last_line:
            last_block += 1
        context = [headings[parent].text for parent in tree.ancestors(index)]
        if title != heading.text and title not in context:
            context.append(title)
        corpus.docs.append(doc(selector, heading, index + 1, last_block + 1, "\n".join(context)))


def scan(
    snapshot: Snapshot,
    specs: Pathspecs | None,
    terms: Iterable[str],
    bounds: Bounds = DEFAULT_BOUNDS,
) -> Corpus:
    """The corpus at ``snapshot``, keeping term frequencies of ``terms`` only."""
    counter = TermCounter(terms)
    corpus = Corpus()
    paths, cut = markdown_paths(snapshot, specs, bounds)
    if cut:
        corpus.skipped["tree_entry_cap"] += 1
    for path in _bounded(paths, snapshot, corpus, bounds):
        try:
            source = snapshot.source(path)
            data = snapshot.read(source)
            # No file has more lines that may be headings than lines.
            if (
                line_count(data) > bounds.file_headings
                and heading_lines(data, most=bounds.file_headings + 1) > bounds.file_headings
            ):
                corpus.skipped["too_many_headings"] += 1
                continue
            _file_docs(path, source.blob_id, data, counter=counter, corpus=corpus)
        except UnicodeDecodeError:
            corpus.skipped["source_not_utf8"] += 1
            continue
        except CapsuleError as exc:
            corpus.skipped[exc.code] += 1
            continue
        corpus.files += 1
        corpus.bytes_read += len(data)
    return corpus


def _bounded(paths: list[str], snapshot: Snapshot, corpus: Corpus, bounds: Bounds) -> Iterator[str]:
    """``paths`` up to ``bounds.files`` and ``bounds.total_bytes``, sizes taken from
    object headers before any blob is read; a file over ``bounds.file_bytes`` is
    skipped."""
    total = 0
    for index, path in enumerate(paths):
        if index >= bounds.files:
            corpus.skipped["file_cap"] += len(paths) - index
            return
        try:
            size = snapshot.size(snapshot.source(path))
        except CapsuleError as exc:
            corpus.skipped[exc.code] += 1
            continue
        if size > bounds.file_bytes:
            corpus.skipped["file_too_large"] += 1
            continue
        if total + size > bounds.total_bytes:
            corpus.skipped["byte_cap"] += len(paths) - index
            return
        total += size
        yield path
