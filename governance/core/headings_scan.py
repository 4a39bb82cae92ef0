"""The ATX headings of a plain Markdown file by a line scan, or None where a line
scan cannot settle them: ``parse_headings`` takes the scan's answer and parses
in full only when it declines. The answer must be the one markdown-it-py's
parse (CommonMark with tables) gives, never a guess, so the scan declines
whatever could make the two differ. It is given what markdown-it is given: the
text without a BOM, its front matter blanked.

What it declines: CR or NUL (markdown-it rewrites them); outside a fence, a
line whose first character after indentation and list markers is ``<`` or
``>`` (every HTML block and blockquote starts so, also in a list item), a
heading or fence on a list item's first line, and a heading or fence line
indented by 4 or more columns or by a tab (it may be a list item's content);
a list that may be nested 9 deep (markdown-it stops at 20 levels, two per
list, and drops the rest of the text); a setext underline after a line that
could end a paragraph; a heading or fence line holding ``|`` above a line
that could be a table's delimiter row; a heading holding ``[`` when a line
could define a link reference (the link's text would depend on it).

Why what is left is exact. Outside fences the only containers are list items,
whose content starts at column 2 or more. A heading or fence line indented 0-3
spaces always starts its block: headings and fences end paragraphs, tables and
link definitions, are never a lazy continuation, and indented code needs 4
columns past the content column. So each such heading line outside a fence
is a heading (in a list item or not) with the line's own text. A fence opened
at column 0 or 1 is not in a list item: it ends at its closing line or at the
end, as the scan tracks. A fence opened at column k = 2 or 3 may be in a list
item, which would end it at the first non-blank line indented less than the
item's content: the scan answers only if every non-blank line through the
closer starts with k spaces, and no line of the fence's marker indented 4 or
more columns could close it. Inside a fence every line is content.

tests/test_headings_scan.py compares it with the full parse on generated
documents and this repository's Markdown; bench/bench_headings.py times it.
"""

from __future__ import annotations

import re

_MARKER = r"(?:[-+*]|[0-9]{1,9}[.)])"
# Each pattern starts with a literal line feed (the text is searched with one
# prepended), which lets the regex engine skip ahead to line starts: about 30
# times faster than '^' in MULTILINE mode.
# markdown-it's nesting limit is 20 levels and each list adds two: a list
# item at depth 10 drops the rest of the document. Declined from depth 9.
_DEEPEST = 9
# A list marker after 4 or more characters of indentation, or the third marker
# of a line: the only lines where a list can be nested deeply. At most
# _DEEPEST markers are counted before the last (enough to decline): a repeated
# group keeps state per repetition, over a GiB for one line of a million.
_NESTED = re.compile(
    rf"\n(?=[ \t]{{4}}|[ \t]{{0,3}}(?:{_MARKER}[ \t]+){{2}}{_MARKER}(?:[ \t\n]|$))"
    rf"(?P<indent>[ \t]*)(?P<chain>(?:{_MARKER}[ \t]+){{0,{_DEEPEST}}}){_MARKER}(?=[ \t\n]|$)"
)
_MARKERS = re.compile(_MARKER + r"[ \t]")
_LINE = re.compile(
    r"\n(?P<indent>[ \t]*)(?:(?:"
    r"(?P<atx>#{1,6})(?:[ \t](?P<rest>[^\n]*))?"
    r"|(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)"
    r"|(?P<under>=+|-+)[ \t]*"
    r")(?=\n|$)"
    # An HTML block or a blockquote (also in a list item), or a heading or
    # fence on a list item's first line.
    rf"|(?P<container>(?:{_MARKER}[ \t]+)*[<>]|(?:{_MARKER}[ \t]+)+(?:#|```|~~~)))"
)
# A line where a link reference definition could start.
_DEFINITION = re.compile(rf"\n[ \t]*(?:{_MARKER}[ \t]+)*\[")
# A line that could be a table's delimiter row (markdown-it checks more).
_DELIMITER_ROW = re.compile(r"[ \t]*[-|:][-|: \t]*")
# A non-blank line starting with fewer than k spaces, k = 2 and 3.
_SHORT = {k: re.compile(rf"\n {{0,{k - 1}}}(?=[^ \n])(?![ \t]*(?:\n|$))") for k in (2, 3)}
# markdown-it-py's trim set (common.utils.MD_TRIM_CHARS): CommonMark's Unicode
# whitespace (Zs, tab, LF, FF, CR) and VT, U+2028, U+2029. A test compares them.
TRIM = (
    "\t\n\v\f\r \xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)


def scan_headings(text: str) -> list[tuple[int, int, str]] | None:
    """(line, level, source text) of each heading of ``text`` as the full parse
    finds them, or None when the scan declines. ``text`` is what markdown-it is
    given: without a BOM, its front matter blanked."""
    if "\r" in text or "\x00" in text:
        return None
    text = "\n" + text
    for nested in _NESTED.finditer(text):
        indent = nested.group("indent")
        columns = len(indent) + 3 * indent.count("\t")  # a tab is at most 4 columns
        # Each list nested in another starts at least 2 columns further right,
        # or is a further marker on the same line.
        depth = columns // 2 + len(_MARKERS.findall(nested.group("chain"))) + 1
        if depth >= _DEEPEST:
            return None
    found: list[tuple[int, int, str]] = []
    line = 0  # the prepended line feed
    at = 0
    fence: str | None = None  # the open fence's marker
    fence_indent = 0
    fence_end = 0  # where its opening line ends
    settled = -1  # where the last heading or closing fence line ends
    definitions: bool | None = None  # could the text define link references?
    for match in _LINE.finditer(text):
        start = match.start() + 1  # the line's first character
        line += text.count("\n", at, start)
        at = start
        # Every group at once (the pattern's groups in order; a test checks it).
        indent, atx, rest, marker, info, under, container = match.groups()
        inset = len(indent) >= 4 or "\t" in indent
        if fence is not None:
            if (
                marker is None
                or marker[0] != fence[0]
                or len(marker) < len(fence)
                or info.strip(" \t")
            ):
                continue  # the fence's content
            if inset:
                if fence_indent >= 2:
                    return None  # would close it inside a list item
                continue  # indented code would not close it: content
            if fence_indent >= 2 and _SHORT[fence_indent].search(text, fence_end, match.end()):
                return None  # a line that may have ended a list item holding the fence
            fence = None
            settled = match.end()
            continue
        if container is not None:
            return None
        if under is not None:
            if (
                line > 1
                and start - 1 != settled
                and text[text.rfind("\n", 0, start - 1) + 1 : start - 1].strip(" \t")
            ):
                return None  # a setext underline, perhaps
            continue
        if inset:
            return None
        if "|" in match.group(0) and _DELIMITER_ROW.fullmatch(_next_line(text, match.end())):
            return None  # a table's header row, perhaps
        if marker is not None:
            if marker[0] == "`" and "`" in info:
                continue  # not a fence: paragraph text
            fence = marker
            fence_indent = len(indent)
            fence_end = match.end()
            continue
        content = _content(rest or "")
        if "[" in content:
            if definitions is None:
                definitions = _DEFINITION.search(text) is not None
            if definitions:
                return None  # what a link in it means depends on them
        found.append((line, len(atx), content))
        settled = match.end()
    if fence is not None and fence_indent >= 2 and _SHORT[fence_indent].search(text, fence_end):
        return None
    return found


def _next_line(text: str, end: int) -> str:
    stop = text.find("\n", end + 1)
    return text[end + 1 : stop if stop >= 0 else len(text)]


def _content(rest: str) -> str:
    # markdown-it's ATX rule: drop trailing spaces and tabs, then a closing run
    # of '#' when a space or tab precedes it, then trim.
    end = len(rest.rstrip(" \t"))
    closing = end
    while closing > 0 and rest[closing - 1] == "#":
        closing -= 1
    if closing < end and (closing == 0 or rest[closing - 1] in " \t"):
        end = closing
    return rest[:end].strip(TRIM)
