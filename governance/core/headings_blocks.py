"""The HTML blocks, blockquotes and list items of the heading scan: where
each one that starts at the top level of a document ends, as markdown-it-py's
block rules end it (CommonMark), or None where the scan cannot be sure.

An HTML block holds no heading; its kind (CommonMark's seven start
conditions) says where it ends: kinds 1 to 5 at the line holding their
closing text (``-->``, ``?>``, ``>``, ``]]>``, a closing ``</pre>`` and its
kin), kinds 6 and 7 before the first blank line. A blockquote ends at a blank
line, after a line that is blank inside it (``>`` alone) at the next line
without a ``>``, or at a line that starts another block (a heading, a fence,
a thematic break, a list item, an HTML block of kinds 1 to 6); markdown-it
takes any other line without ``>`` into it, lazily, which the scan settles
only in part (headings_scan._block). A list item runs while its lines are blank or indented to its
content (the marker's width and the spaces after it, or one when they are
five or more or nothing follows), until a line indented less: after a blank
line, or one that starts another block (any other may continue a paragraph
of the item lazily: the scan declines). The content of each (a
quote's lines after their ``>`` and one optional space, an item's after its
indentation) is scanned as a document of its own. How deep a list may be
nested at a marker's line (too_deep) is judged from its indentation and the
markers that open it: past markdown-it's limit the scan declines. The
scan's line arithmetic is here too (end_of_line, next_line, blank_before),
with what a line can be (plain_title, cannot_interrupt).
"""

from __future__ import annotations

import re

# CommonMark 0.31's block-level tag names (start condition 6). A test holds it
# to markdown-it-py's list; "search" and "source" are where versions differ.
BLOCK_NAMES = frozenset(
    {
        "address",
        "article",
        "aside",
        "base",
        "basefont",
        "blockquote",
        "body",
        "caption",
        "center",
        "col",
        "colgroup",
        "dd",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "frame",
        "frameset",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "head",
        "header",
        "hr",
        "html",
        "iframe",
        "legend",
        "li",
        "link",
        "main",
        "menu",
        "menuitem",
        "nav",
        "noframes",
        "ol",
        "optgroup",
        "option",
        "p",
        "param",
        "search",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "title",
        "tr",
        "track",
        "ul",
    }
)
UNSETTLED_NAMES = frozenset({"search", "source"})
# Case folded in ASCII only, as markdown-it-py folds them ("\u017fcript" is
# no script tag).
_RAW = re.compile(r"<(?ai:script|pre|style|textarea)(?=\s|>|$)")
_RAW_END = re.compile(r"</(?ai:script|pre|style|textarea)>")
_NAMED = re.compile(r"</?([A-Za-z][A-Za-z0-9]*)(?=\s|/?>|$)")
_ATTRIBUTE = r"\s+[A-Za-z_:][A-Za-z0-9:._-]*(?:\s*=\s*(?:[^\"'=<>`\x00-\x20]+|'[^']*'|\"[^\"]*\"))?"
_LONE_TAG = re.compile(
    rf"(?:<[A-Za-z][A-Za-z0-9-]*(?:{_ATTRIBUTE})*\s*/?>|</[A-Za-z][A-Za-z0-9-]*\s*>)\s*"
)
# (start, end) of kinds 2 to 5, in CommonMark's order.
_CLOSED = (
    ("<!--", "-->"),
    ("<?", "?>"),
    ("<![CDATA[", "]]>"),
)
_DECLARATION = re.compile(r"<![A-Za-z]")
# A line that starts another block and so ends a blockquote (not `>`, not
# indented 4 or more): a heading, a fence, a list item, a thematic break.
_ENDS_QUOTE = re.compile(
    r" {0,3}(?:#{1,6}(?:[ \t]|$)|`{3,}[^`]*$|~{3,}|(?:[-+*]|[0-9]{1,9}[.)])(?:[ \t]|$)"
    r"|(?:\*[ \t]*){3,}$|(?:-[ \t]*){3,}$|(?:_[ \t]*){3,}$)"
)
_BLANK = re.compile(r"[ \t]*")
# A line no block rule that ends a blockquote can start (fence, blockquote,
# thematic break, list item, HTML block, heading), whatever ends_block says:
# up to 3 spaces, then none of their first characters (a digit only if no
# '.' or ')' follows its digits); or indented 4 or more, where none starts.
_LAZY = re.compile(r" {0,3}(?:[^ \t#>`~*_+<0-9-]|[0-9]+(?![0-9.)]))| {4,}[^ \t]")


def html_kind(line: str) -> int | None:
    """The start condition (1-7) an HTML block opening with ``line`` meets
    (its text from the ``<`` on), 0 for none, None for a tag name
    markdown-it-py versions disagree on."""
    if _RAW.match(line):
        return 1
    if line.startswith("<!--"):
        return 2
    if line.startswith("<?"):
        return 3
    if line.startswith("<![CDATA["):
        return 5
    if _DECLARATION.match(line):
        return 4
    named = _NAMED.match(line)
    if named:
        name = named.group(1).lower()
        if name in UNSETTLED_NAMES:
            return None
        if name in BLOCK_NAMES:
            return 6
    return 7 if _LONE_TAG.fullmatch(line) else 0


def html_end(text: str, start: int, kind: int) -> int:
    """Where the HTML block of ``kind`` whose first line starts at ``start``
    (its ``<``) ends: the end of its last line."""
    end = end_of_line(text, start)
    if kind >= 6:
        # Up to the first blank line, which is not part of it.
        at = end
        while at < len(text):
            following = end_of_line(text, at + 1)
            if _BLANK.fullmatch(text, at + 1, following):
                return at
            at = following
        return at
    if kind == 1:
        found = _RAW_END.search(text, start)
        close = found.start() if found else -1
    else:
        closing = ">" if kind == 4 else dict(_CLOSED)[_opening(text, start)]
        close = text.find(closing, start)
    return len(text) if close < 0 else end_of_line(text, close)


def _opening(text: str, start: int) -> str:
    for opening, _ in _CLOSED:
        if text.startswith(opening, start):
            return opening
    raise AssertionError("not a closed HTML block")  # pragma: no cover


def quote_lines(text: str, start: int) -> tuple[list[str], int, int | None] | None:
    """The content lines of the blockquote whose first line starts at
    ``start`` (at its first ``>``), where its last line ends, and the index
    among them of its first lazy line (None when it has none); None for a
    tab after a ``>`` (its width depends on the column) or a line that may
    start a block which ends it, where ``ends_block`` cannot tell, or a
    tab in a content line's indentation."""
    lines: list[str] = []
    at = start
    empty = was_lazy = False
    lazy: int | None = None
    while True:
        end = end_of_line(text, at)
        marker = text.find(">", at, end)
        if marker < 0 or not _BLANK.fullmatch(text, at, marker):
            # Not a line of the quote: the first line always is.
            if empty:
                return lines, at - 1, lazy
            if ends_block(text[at:end]):
                # After a lazy line that markdown-it may read as a paragraph
                # of the document (see _block), such a line may not end it
                # (`2. x`), or may underline it (`---`).
                return None if was_lazy else (lines, at - 1, lazy)
            if not _LAZY.match(text, at, end):
                return None
            # markdown-it takes any other line into the quote: the lazy
            # continuation of a paragraph if one is open in it; else its
            # reading of the quote stops there, and the line and those after
            # it are read again as the document's (the caller judges).
            lazy = len(lines) if lazy is None else lazy
            lines.append(text[at:end])
            was_lazy = True
        else:
            content = marker + 1
            if text.startswith("\t", content):
                return None
            if text.startswith(" ", content):
                content += 1
            lead = _BLANK.match(text, content, end)
            if lead is not None and lead.end() < end and "\t" in lead.group():
                return None  # a tab's width there depends on the quote's column
            lines.append(text[content:end])
            empty = _BLANK.fullmatch(text, content, end) is not None
            was_lazy = False
        if end >= len(text):
            return lines, end, lazy
        at = end + 1
        if _BLANK.fullmatch(text, at, end_of_line(text, at)):
            return lines, end, lazy


def ends_block(line: str) -> bool:
    """Whether ``line``, not indented 4 or more, starts a block that ends a
    paragraph (so it is no lazy continuation of one): a heading, a fence, a
    blockquote, a list item, a thematic break, an HTML block of kinds 1 to 6."""
    if _ENDS_QUOTE.match(line) or _ends_with_html(line):
        return True
    body = line.lstrip(" ")
    return len(line) - len(body) <= 3 and body.startswith(">")


# A list marker: a bullet, or an ordered item's number and delimiter.
MARKER = r"(?:[-+*]|[0-9]{1,9}[.)])"
# markdown-it's nesting limit is 20 levels and each list adds two: a list
# item at depth 10 drops the rest of the document. Declined from depth 9.
DEEPEST = 9
# The list markers that open a line (after its indentation), each followed by
# a space or a tab: a list nested in each but the last. At most DEEPEST + 1
# are counted (enough to decline): a repeated group keeps state per
# repetition, over a GiB for one line of a million.
_CHAIN = re.compile(rf"(?:{MARKER}[ \t]+){{1,{DEEPEST + 1}}}")
_MARKERS = re.compile(MARKER + r"[ \t]")
_ITEM = re.compile(rf"({MARKER})( *)(.*)")
_RULE = re.compile(r"(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,}")


def is_rule(line: str) -> bool:
    """Whether ``line`` (from its first character after indentation) is a thematic break."""
    return _RULE.fullmatch(line) is not None


def item_lines(text: str, start: int, indent: int) -> tuple[list[str], int] | None:
    """The content lines of the list item whose marker starts at ``start``,
    indented ``indent`` columns, each with the item's content indentation
    taken off, and where its last line ends; None for a tab in its
    indentation, or a line that may continue its paragraph lazily."""
    end = end_of_line(text, start)
    item = _ITEM.fullmatch(text, start, end)
    if item is None:
        return None  # a tab after the marker
    marker, spaces, content = item.groups()
    if content.startswith("\t") or (not content and "\t" in text[start:end]):
        return None
    if not content:
        # Content starts on the next line; a blank one there ends the item.
        column = indent + len(marker) + 1
        if end < len(text) and _BLANK.fullmatch(text, end + 1, end_of_line(text, end + 1)):
            return [""], end_of_line(text, end + 1)
        lines = [""]
    elif len(spaces) > 4:
        column = indent + len(marker) + 1  # indented code after the marker
        lines = [" " * (len(spaces) - 1) + content]
    else:
        column = indent + len(marker) + len(spaces)
        lines = [content]
    open_paragraph = bool(content)
    while end < len(text):
        at = end + 1
        end = end_of_line(text, at)
        line = text[at:end]
        body = line.lstrip(" ")
        if not body.strip(" \t"):
            lines.append("")
            open_paragraph = False
            continue
        if body.startswith("\t"):
            return None
        if len(line) - len(body) >= column:
            lines.append(line[column:])
            open_paragraph = True
            continue
        if open_paragraph and not ends_block(line):
            return None  # lazy, perhaps
        return lines, at - 1
    return lines, end


def _ends_with_html(line: str) -> bool:
    # An HTML block of kinds 1 to 6 (not indented 4 or more) ends a blockquote.
    body = line.lstrip(" ")
    return len(line) - len(body) <= 3 and html_kind(body) in (1, 2, 3, 4, 5, 6)


class TooDeep(Exception):
    """A list nested past the depth declined, anywhere in the document."""


def too_deep(text: str, start: int, indent: str, levels: int) -> bool:
    """Whether the list marker's line at ``start``, inside ``levels`` of
    nesting, may be a list nested past the depth declined, judged from its
    indentation (each list nested in another starts at least 2 columns
    further right) and the markers that open it. Asked of the lines the scan
    meets outside fences and HTML blocks, which nest lists only at the top
    level (a line indented 4 or more there is code or a paragraph's) or in
    an item the scan did not bound; the content of one it bounded, or of a
    quote, is scanned on its own, with the levels that enclose it."""
    columns = len(indent) + 3 * indent.count("\t")  # a tab is at most 4 columns
    chain = _CHAIN.match(text, start + len(indent))
    markers = len(_MARKERS.findall(chain.group())) if chain is not None else 1
    return 2 * (columns // 2 + markers) + levels >= 2 * DEEPEST


def end_of_line(text: str, at: int) -> int:
    """Where the line holding ``at`` ends: its line feed, or the text's end."""
    end = text.find("\n", at)
    return len(text) if end < 0 else end


def next_line(text: str, end: int) -> str:
    stop = text.find("\n", end + 1)
    return text[end + 1 : stop if stop >= 0 else len(text)]


def blank_before(text: str, start: int) -> bool:
    # The line before the one at ``start`` is blank, or there is none.
    return start <= 1 or not text[text.rfind("\n", 0, start - 1) + 1 : start - 1].strip(" \t")


def cannot_interrupt(text: str, start: int, marker: str) -> bool:
    # A list item may end a paragraph only if it has content, and an ordered
    # one only if it starts at 1.
    content = text[start + len(marker) : end_of_line(text, start)]
    return not content.strip(" \t") or (marker[0].isdigit() and int(marker[:-1]) != 1)


def plain_title(line: str) -> bool:
    # A line that can only be a paragraph's (where the scan's pattern matched
    # none of its other blocks): not indented 4 or more, no thematic break, no table's
    # header, no link reference definition.
    body = line.lstrip(" ")
    return (
        len(line) - len(body) <= 3
        and not body.startswith(("\t", "["))
        and "|" not in body
        and not is_rule(body)
    )


def shifted(inner: list[tuple[int, int, int, str]], line: int) -> list[tuple[int, int, int, str]]:
    # The headings of a block's content, numbered from its first line ``line``.
    return [(line + a - 1, line + b - 1, level, content) for a, b, level, content in inner]
