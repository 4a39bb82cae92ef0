"""Snapshot + Selector -> Excerpt: the exact bytes a locator selects."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from governance.core.hashing import sha256_hex
from governance.errors import SourceError

if TYPE_CHECKING:
    from governance.core.headings import Heading
    from governance.core.locator import Selector
    from governance.core.snapshot import Source


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


_REPEAT = re.compile(r"(.+)-([1-9][0-9]*)")


def decode_source(data: bytes, *, locator: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"{locator}: not valid UTF-8 (byte {exc.start}: {exc.reason})",
            code="source_not_utf8",
            locator=locator,
        ) from None


def select(
    selector: Selector,
    source: Source,
    data: bytes,
    *,
    headings: Callable[[str], Sequence[Heading]] | None = None,
) -> Excerpt:
    """Select the whole file, or one heading's complete section, failing closed.
    ``headings`` parses the decoded text (a caller may memoise it per blob)."""
    text = decode_source(data, locator=selector.locator)
    source_sha = sha256_hex(data)
    if selector.slug is None:
        from governance.core.headings import line_count

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

    from governance.core.headings import parse_headings, sections_for_slug, split_lines

    lines = split_lines(data)
    parsed = headings(text) if headings is not None else parse_headings(text)
    found = sections_for_slug(parsed, len(lines), selector.slug)
    # GitHub names the (n+1)-th repeat of a heading `base-n`. A selector that
    # can mean such a repeat depends on position: ambiguous, with every
    # candidate, never silently the n-th one or an unrelated `Base n`.
    repeat = _REPEAT.fullmatch(selector.slug)
    if repeat:
        base = sections_for_slug(parsed, len(lines), repeat.group(1))
        if len(base) > int(repeat.group(2)):
            found = sorted(found + base, key=lambda s: s.first_line)
    if not found:
        raise SourceError(
            f"{selector.locator}: no heading with slug {selector.slug!r} in {selector.path}",
            code="heading_missing",
            locator=selector.locator,
        )
    if len(found) > 1:
        where = ", ".join(f"line {s.first_line}" for s in found)
        raise SourceError(
            f"{selector.locator}: slug {selector.slug!r} names {len(found)} headings in "
            f"{selector.path} ({where}); rename one so each section has its own anchor",
            code="heading_ambiguous",
            locator=selector.locator,
            lines=[s.first_line for s in found],
        )
    section = found[0]
    selected = b"".join(lines[section.first_line - 1 : section.last_line])
    return Excerpt(
        locator=selector.locator,
        path=selector.path,
        heading=section.heading,
        first_line=section.first_line,
        last_line=section.last_line,
        blob_id=source.blob_id,
        source_sha256=source_sha,
        selected_sha256=sha256_hex(selected),
        # Decoding the slice of a valid UTF-8 file at line ends cannot fail.
        text=selected.decode("utf-8"),
    )
