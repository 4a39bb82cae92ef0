"""The headings of a Markdown file, each with its section's lines, and the line
arithmetic the excerpts share. Headings come from a line scan where it settles
them (headings_scan), else from markdown-it-py's token stream."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from governance.core.headings_labels import code_spans
from governance.core.headings_scan import scan_document
from governance.core.slug import github_slug

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token


@dataclass(frozen=True)
class Heading:
    line: int
    end_line: int
    level: int
    text: str
    slug: str


@dataclass(frozen=True)
class Section:
    heading: Heading
    first_line: int
    last_line: int


# The same three line ends markdown-it normalises (\r\n, \r, \n), so byte line numbers
# and markdown-it's token maps agree. bytes.splitlines splits at exactly these
# (split_lines uses it); deliberately not str.splitlines, which also splits on \v,
# \f, \x1c-\x1e, \x85 and U+2028/9, which markdown-it treats as text.
_LINE_TEXT = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")
# Where an inline rule of markdown-it (escape, backticks, emphasis,
# strikethrough, link, image, autolink, HTML, entity, newline) can start, and
# NUL, which markdown-it replaces.
_MARKUP = re.compile(r"[\\`*_~\[\]!<&\n\r\x00]")
# The same but the backtick: text where it finds nothing has no markup but
# code spans, which _code_spans renders without markdown-it.
_MARKUP_BUT_CODE = re.compile(r"[\\*_~\[\]!<&\n\r\x00]")
# A line that could be a heading's: after indentation, blockquote markers and
# list markers, an ATX opening (1 to 6 '#' then a space, a tab or the line's
# end); or, after indentation and blockquote markers, a setext underline (a
# run of '=' or of '-': a list item's first line starts a block, so it never
# underlines a paragraph). Every heading the parse finds has such a line of
# its own, so their number bounds the headings from above (a test holds it to
# that), without a parse. Possessive prefixes: no shorter prefix is followed
# by a '#', '=' or '-', and a line of 4 MB of spaces costs no backtracking.
_HEADING_LINE = re.compile(
    rb"\n(?:[ \t>]|[-+*][ \t]|[0-9]{1,9}[.)][ \t])*+#{1,6}(?=[ \t\n])"
    rb"|\n[ \t>]*+(?:=+|-+)[ \t]*(?=\n)"
)
_FRONT_MATTER_OPEN = re.compile(r"---[ \t]*")
# A closing line of front matter: at a line start (after \r, \n or \r\n), up to
# its line end or the end of the text.
_FRONT_MATTER_CLOSE_LINE = re.compile(r"(?<![^\r\n])(?:---|\.\.\.)[ \t]*(?=[\r\n]|\Z)")
_LINE_BODY = re.compile(r"[^\r\n]+")


@cache
def _parser() -> MarkdownIt:
    # Imported here: line counting (verify, whole-file reads) must not pay for it.
    from markdown_it import MarkdownIt  # noqa: PLC0415 (defers markdown-it-py)

    return MarkdownIt("commonmark").enable("table").enable("strikethrough")


@cache
def _block_parser() -> MarkdownIt:
    # Block structure only: inline markup is parsed for headings alone (most of
    # a document is paragraphs, whose inline parse would be thrown away).
    from markdown_it import MarkdownIt  # noqa: PLC0415 (defers markdown-it-py)

    return MarkdownIt("commonmark").enable("table").enable("strikethrough").disable("inline")


def split_lines(data: bytes) -> list[bytes]:
    # Each line with its end (\r\n, \r or \n), a last line without one: some 30
    # times faster than a regular expression (tests hold the two equal).
    return data.splitlines(keepends=True)


def line_count(data: bytes) -> int:
    # len(split_lines(data)) without building the list: one per line end (\r\n counts
    # once), plus a last line that has none.
    ends = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
    return ends + (1 if data and data[-1] not in b"\r\n" else 0)


def heading_lines(data: bytes, *, most: int | None = None) -> int:
    """How many lines of ``data`` could be headings: never fewer than the
    headings its parse finds, counted in one pass of a regular expression;
    at most ``most`` (a caller asking only whether a bound is passed)."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    data = b"\n" + data.removeprefix(b"\xef\xbb\xbf") + b"\n"
    found = _HEADING_LINE.finditer(data)
    if most is not None:
        found = itertools.islice(found, most)
    return sum(1 for _ in found)


def _blank_front_matter(text: str) -> str:
    if not text.startswith("---"):
        return text  # the opening line cannot match: no need to look further
    first = _LINE_TEXT.match(text)
    if first is None or not _FRONT_MATTER_OPEN.fullmatch(_body(first.group())):
        return text
    # The first closing line after it, found by one search (not a split of the
    # whole text into lines: a 4 MB document has 100,000 of them).
    close = _FRONT_MATTER_CLOSE_LINE.search(text, first.end())
    if close is None:
        return text
    # Each line's text blanked, its line end kept, so markdown-it still numbers
    # the following lines the same.
    return _LINE_BODY.sub("", text[: close.end()]) + text[close.end() :]


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def _render(children: Sequence[Token]) -> str:
    # Mirrors the textContent of GitHub's rendered <hN>, which is what its anchor is made from.
    # Soft and hard breaks are a newline in that HTML (cmark-gfm emits "\n" and "<br />\n"),
    # so a multi-line setext heading keeps "\n" here and github_slug then deletes it as a
    # control character: "Title\nline2" -> "titleline2", never "title-line2".
    # Images contribute nothing: textContent ignores alt attributes.
    parts: list[str] = []
    for token in children:
        if token.type in ("text", "text_special", "code_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append("\n")
    return "".join(parts)


# The block rules markdown-it calls for every line each log a debug message:
# about 16,000 calls a build, each two frames deep before the level check
# says no. While such a logger is not enabled for DEBUG, its debug() does
# nothing, so for the duration of our parse it is a no-op of one frame.
_RULE_LOGGERS = tuple(
    f"markdown_it.rules_block.{name}"
    for name in (
        "blockquote",
        "code",
        "fence",
        "heading",
        "hr",
        "html_block",
        "lheading",
        "list",
        "paragraph",
        "reference",
    )
)


def _silent(*args: object, **kwargs: object) -> None:
    return None


@contextmanager
def _quiet_rules() -> Iterator[None]:
    # markdown-it-py imports logging itself; a file the line scan settles needs neither.
    import logging  # noqa: PLC0415 (defers logging, traceback, string)

    quieted = [
        logger
        for logger in map(logging.getLogger, _RULE_LOGGERS)
        if not logger.isEnabledFor(logging.DEBUG) and "debug" not in vars(logger)
    ]
    for logger in quieted:
        logger.debug = _silent  # type: ignore[method-assign]
    try:
        yield
    finally:
        for logger in quieted:
            del logger.debug


def parse_headings(text: str) -> list[Heading]:
    # GitHub drops a leading byte order mark; markdown-it would make it part of line 1.
    if text.startswith("\ufeff"):
        text = text[1:]
    text = _blank_front_matter(text)
    # Most files are plain enough for a line scan to find exactly the headings
    # the full parse would (headings_scan says why); the rest are parsed.
    scanned = scan_document(text)
    if scanned is None:
        return _markdown_it_headings(text)
    found, defined = scanned
    env = _references(defined) if defined and any("[" in h[3] for h in found) else None
    return [
        _heading(line, end, level, content, env)
        if env is not None and "[" in content
        else _scanned(line, end, level, content)
        for line, end, level, content in found
    ]


def _references(labels: tuple[str, ...]) -> dict[str, Any]:
    # An env as markdown-it's block pass leaves it, for the labels the scan
    # proved defined: a link's text is its own, whatever its destination.
    from markdown_it.common.utils import normalizeReference  # noqa: PLC0415 (defers markdown-it-py)

    defined = {
        normalizeReference(label): {"href": "", "title": "", "map": None} for label in labels
    }
    return {"references": defined}


# The last heading scanned with each source text: with no link references (a
# scanned heading is rendered with an empty env) its rendered text and slug are
# a function of the source text alone, and a heading is immutable, so one at
# the same line and level is that very heading again. Most headings recur in
# every version of a file, mostly at the same line. Bounded in count and in
# each text's length; when full it starts again (one whole-dict operation).
_RENDERED: dict[str, Heading] = {}
_RENDERED_MAX = 2048
_RENDERED_LONGEST = 200


def _scanned(line: int, end_line: int, level: int, content: str) -> Heading:
    known = _RENDERED.get(content)
    if known is None:
        heading = _heading(line, end_line, level, content, {})
    elif known.line == line and known.end_line == end_line and known.level == level:
        return known
    else:
        heading = Heading(line, end_line, level, known.text, known.slug)
    if len(content) <= _RENDERED_LONGEST:
        if len(_RENDERED) >= _RENDERED_MAX:
            _RENDERED.clear()
        _RENDERED[content] = heading
    return heading


def _parse_fully(text: str) -> list[Heading]:
    """The headings from markdown-it-py's block parse: what parse_headings gives
    whenever the scan declines, and tests compare it with the scan."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return _markdown_it_headings(_blank_front_matter(text))


def _markdown_it_headings(text: str) -> list[Heading]:
    # The block pass fills env with the document's link reference definitions,
    # which the inline parse of a heading like `## [Title][ref]` needs.
    env: dict[str, Any] = {}
    with _quiet_rules():
        tokens = _block_parser().parse(text, env)
    headings: list[Heading] = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None:
            continue
        start, end = token.map
        headings.append(_heading(start + 1, end, int(token.tag[1]), tokens[index + 1].content, env))
    return headings


def _heading(line: int, end_line: int, level: int, content: str, env: dict[str, Any]) -> Heading:
    if _MARKUP.search(content) is None:
        # No character any inline rule starts at: the rendered text is the content.
        rendered = content
    elif _MARKUP_BUT_CODE.search(content) is None:
        rendered = _code_spans(content)
    else:
        inline = _parser().parseInline(content, env)[0]
        # Not stripped: markdown-it already trims the source, so edge whitespace only
        # comes from markup such as a leading image, and GitHub keeps it
        # (`# ![x](y) Title` -> "-title").
        rendered = _render(inline.children or [])
    # Positional: a dataclass is made faster so than by keyword.
    return Heading(line, end_line, level, rendered, github_slug(rendered))


def _code_spans(content: str) -> str:
    """The rendered text of ``content`` whose only markup is backticks, as
    markdown-it's inline rule reads them (a test holds the two equal): each
    code span's text is its code, less one space at each end where both ends
    have one and it is not all spaces; the rest is text. Renders most
    marked-up headings without importing markdown-it."""
    parts: list[str] = []
    copied = 0  # the content is copied as text up to here
    for opens, code_start, code_end, closed in code_spans(content):
        code = content[code_start:code_end]
        if code.startswith(" ") and code.endswith(" ") and code.strip(" "):
            code = code[1:-1]
        parts += (content[copied:opens], code)
        copied = closed
    parts.append(content[copied:])
    return "".join(parts)
