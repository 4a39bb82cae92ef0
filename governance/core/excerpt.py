"""Snapshot + Selector -> Excerpt: the exact bytes a locator selects."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from governance.core import canonical, symbols
from governance.core.hashing import sha256_hex
from governance.core.headings import heading_lines, line_count, parse_headings, split_lines
from governance.core.structure import match_steps
from governance.core.tree import Tree
from governance.core.unnamed import unnamed
from governance.errors import (
    LINE_RANGE_OUTSIDE,
    SOURCE_BINARY,
    SOURCE_NOT_UTF8,
    SOURCE_TOO_LARGE,
    SOURCE_TOO_MANY_HEADINGS,
    SourceError,
)

if TYPE_CHECKING:
    from governance.core.headings import Heading
    from governance.core.locator import Selector
    from governance.core.repository import Source
    from governance.core.snapshot import Snapshot


@dataclass(frozen=True)
class Excerpt:
    locator: str
    path: str
    heading: Heading | None
    first_line: int
    last_line: int
    blob_id: str
    source_sha256: str
    selected_sha256: str
    text: str

    def to_json(self) -> dict[str, object]:
        heading = None
        if self.heading is not None:
            heading = {
                "slug": self.heading.slug,
                "text": self.heading.text,
                "level": self.heading.level,
            }
        return {
            "locator": self.locator,
            "path": self.path,
            "heading": heading,
            "lines": [self.first_line, self.last_line],
            "blob": self.blob_id,
            "source_sha256": self.source_sha256,
            "selected_sha256": self.selected_sha256,
            "text": self.text,
        }

    @cached_property
    def fragment(self) -> canonical.Fragment:
        """``to_json`` serialised, once per excerpt (``excerpt_of`` caches
        excerpts per blob and locator, and this with them)."""
        return canonical.fragment(self.to_json())


def decode_source(data: bytes, *, locator: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"{locator}: not valid UTF-8 (byte {exc.start}: {exc.reason})",
            code=SOURCE_NOT_UTF8,
            locator=locator,
        ) from None


def check_heading_source(
    snapshot: Snapshot, selector: Selector, source: Source, limit: int
) -> None:
    """Refuse a ``#heading``, ``#L10-L40`` or ``#py:name`` read of a source over
    ``limit`` bytes (a ``py:`` read also over core.symbols' own cap), judged
    from the object header: such a read parses or splits the whole file, and
    only its selection is bounded by the budget."""
    if selector.whole:
        return
    size = snapshot.size(source)
    if selector.symbol is not None and size > min(limit, symbols.MAX_PYTHON_BYTES):
        cap = min(limit, symbols.MAX_PYTHON_BYTES)
        raise SourceError(
            f"{selector.locator}: {selector.path} has {size:,} bytes {snapshot.where}, more "
            f"than the {cap:,} a Python symbol read parses; select its lines with "
            "#L10-L40, or read it whole",
            code=SOURCE_TOO_LARGE,
            locator=selector.locator,
            bytes=size,
            limit=cap,
        )
    if size > limit:
        what = "a heading read may parse" if selector.lines is None else "a line range may split"
        raise SourceError(
            f"{selector.locator}: {selector.path} has {size:,} bytes {snapshot.where}, more "
            f"than the {limit:,} {what} (max_heading_source_bytes of the "
            "policy); read a smaller file, or raise the limit in the policy",
            code=SOURCE_TOO_LARGE,
            locator=selector.locator,
            bytes=size,
            limit=limit,
        )


def check_heading_count(snapshot: Snapshot, selector: Selector, source: Source, limit: int) -> None:
    """Refuse a ``#heading`` read of a source with more than ``limit`` lines
    that could be headings, counted before it is parsed: the tree, the
    selectors and their errors grow with the headings."""
    if selector.slug is None:
        return
    data = snapshot.read(source)
    if line_count(data) <= limit:
        return  # no more lines that may be headings than lines: not searched
    count = snapshot.memo("heading-lines", source, lambda: heading_lines(data), weight=lambda _: 64)
    refuse_heading_count(selector.locator, selector.path, count, limit, snapshot.where)


def refuse_heading_count(locator: str, path: str, count: int, limit: int, where: str) -> None:
    """The ``source_too_many_headings`` refusal of ``count`` heading lines over ``limit``."""
    if count > limit:
        named = path if locator == path else f"{locator}: {path}"
        raise SourceError(
            f"{named} has {count:,} lines that may be headings {where}, more than "
            f"the {limit:,} a heading read may parse (max_heading_count of the policy); read "
            "it whole or by lines, or raise the limit in the policy",
            code=SOURCE_TOO_MANY_HEADINGS,
            locator=locator,
            headings=count,
            limit=limit,
        )


@dataclass(frozen=True)
class Parsed:
    """What every heading read of one blob shares: its decoded text's digest,
    its lines and its heading tree."""

    source_sha256: str
    lines: list[bytes]
    tree: Tree


def parse_source(
    data: bytes,
    *,
    locator: str,
    headings: Callable[[str], Sequence[Heading]] | None = None,
) -> Parsed:
    """Decode ``data`` (failing closed for ``locator``) and parse its headings
    (``headings`` may memoise the parse per blob)."""
    text = decode_source(data, locator=locator)
    lines = split_lines(data)
    parsed = headings(text) if headings is not None else parse_headings(text)
    return Parsed(sha256_hex(data), lines, Tree(parsed, len(lines)))


def parsed_file(snapshot: Snapshot, source: Source, *, locator: str) -> Parsed:
    """``parse_source`` of ``source`` through the snapshot's per-run cache: the
    parsed file (and its headings) once per blob while it stays cached, shared
    by every locator into it (``locator`` words a decoding failure)."""

    def headings(text: str) -> Sequence[Heading]:
        return snapshot.memo(
            "headings",
            source,
            lambda: tuple(parse_headings(text)),
            weight=lambda found: sum(128 + 2 * len(h.text) for h in found),
        )

    data = snapshot.read(source)
    return snapshot.memo(
        "parsed",
        source,
        lambda: parse_source(data, locator=locator, headings=headings),
        # The lines hold the blob's bytes again; the tree, a few entries a heading.
        weight=lambda found: len(data) + 64 * len(found.lines) + 256 * len(found.tree.headings),
    )


def excerpt_of(snapshot: Snapshot, selector: Selector, source: Source) -> Excerpt:
    """``select`` through the snapshot's per-run cache: an excerpt is a pure
    function of the blob and the locator; the parsed file (headings, lines,
    tree), of the blob alone (``parsed_file``)."""

    def compute() -> Excerpt:
        if selector.slug is None:
            return select(selector, source, snapshot.read(source))
        parsed = parsed_file(snapshot, source, locator=selector.locator)
        return section_excerpt(selector, source, parsed)

    return snapshot.memo(
        f"excerpt:{selector.locator}",
        source,
        compute,
        # The text, and its JSON in the excerpt's fragment once serialised.
        weight=lambda excerpt: 256 + 3 * len(excerpt.text),
    )


def select(
    selector: Selector,
    source: Source,
    data: bytes,
    *,
    headings: Callable[[str], Sequence[Heading]] | None = None,
) -> Excerpt:
    """Select the whole file, one heading's complete section or a range of
    lines, failing closed. ``headings`` parses the decoded text (a caller may
    memoise it per blob)."""
    if selector.slug is not None:
        parsed = parse_source(data, locator=selector.locator, headings=headings)
        return section_excerpt(selector, source, parsed)
    if selector.lines is not None:
        return lines_excerpt(selector, source, data)
    if selector.symbol is not None:
        return symbol_excerpt(selector, source, data)
    text = decode_source(data, locator=selector.locator)
    source_sha = sha256_hex(data)
    return Excerpt(
        locator=selector.locator,
        path=selector.path,
        heading=None,
        first_line=1,
        last_line=line_count(data),
        blob_id=source.blob_id,
        source_sha256=source_sha,
        selected_sha256=source_sha,
        text=text,
    )


def section_excerpt(selector: Selector, source: Source, parsed: Parsed) -> Excerpt:
    """The complete section of the one heading ``selector`` names, failing closed."""
    tree = parsed.tree
    match = match_steps(tree, selector.steps) if selector.steps else tree.match(selector.slugs)
    if match.named is None:
        raise unnamed(selector, tree, match)
    section = tree.section(match.named)
    selected = b"".join(parsed.lines[section.first_line - 1 : section.last_line])
    return Excerpt(
        locator=selector.locator,
        path=selector.path,
        heading=section.heading,
        first_line=section.first_line,
        last_line=section.last_line,
        blob_id=source.blob_id,
        source_sha256=parsed.source_sha256,
        selected_sha256=sha256_hex(selected),
        # Decoding the slice of a valid UTF-8 file at line ends cannot fail.
        text=selected.decode("utf-8"),
    )


def lines_excerpt(selector: Selector, source: Source, data: bytes) -> Excerpt:
    """Lines ``selector.lines`` of a text file, failing closed: the file is
    valid UTF-8 without NUL, and has its last line."""
    assert selector.lines is not None
    decode_source(data, locator=selector.locator)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise SourceError(
            f"{selector.locator}: {selector.path} holds a NUL byte (byte {nul:,}): a binary "
            "file has no lines to select",
            code=SOURCE_BINARY,
            locator=selector.locator,
        )
    lines = split_lines(data)
    first, last = selector.lines
    if last > len(lines):
        span = f"line {first} is" if first == last else f"lines {first}-{last} run"
        raise SourceError(
            f"{selector.locator}: {selector.path} has {len(lines):,} "
            f"line{'' if len(lines) == 1 else 's'}; {span} past its end",
            code=LINE_RANGE_OUTSIDE,
            locator=selector.locator,
            line_count=len(lines),
        )
    return span_excerpt(
        selector, source, lines, first, last, source_sha256=sha256_hex(data), heading=None
    )


def symbol_excerpt(selector: Selector, source: Source, data: bytes) -> Excerpt:
    """The lines of the one Python definition ``selector.symbol`` names, from
    its first decorator to its last line, failing closed: the file is valid
    UTF-8 that ``ast`` parses, and defines that name once."""
    assert selector.symbol is not None
    text = decode_source(data, locator=selector.locator)
    found = symbols.symbols(text, locator=selector.locator)
    symbol = symbols.find(found, selector.symbol, locator=selector.locator, path=selector.path)
    return span_excerpt(
        selector,
        source,
        split_lines(data),
        symbol.first_line,
        symbol.last_line,
        source_sha256=sha256_hex(data),
        heading=None,
    )


def span_excerpt(
    selector: Selector,
    source: Source,
    lines: Sequence[bytes],
    first: int,
    last: int,
    *,
    source_sha256: str,
    heading: Heading | None,
) -> Excerpt:
    """The excerpt of lines ``first`` to ``last`` of a file split in ``lines``."""
    selected = b"".join(lines[first - 1 : last])
    return Excerpt(
        locator=selector.locator,
        path=selector.path,
        heading=heading,
        first_line=first,
        last_line=last,
        blob_id=source.blob_id,
        source_sha256=source_sha256,
        selected_sha256=sha256_hex(selected),
        # Decoding the slice of a valid UTF-8 file at line ends cannot fail.
        text=selected.decode("utf-8"),
    )
