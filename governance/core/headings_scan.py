"""The headings of a Markdown file by a line scan, or None where a line scan
cannot settle them: ``parse_headings`` takes the scan's answer and parses in
full only when it declines. The answer must be the one markdown-it-py's parse
(CommonMark with tables) gives, never a guess, so the scan declines whatever
could make the two differ. It is given what markdown-it is given: the text
without a BOM, its front matter blanked.

What it settles. Outside a fence, a heading or fence line indented 0-3 spaces
always starts its block: headings and fences end paragraphs, tables and link
definitions, are never a lazy continuation, and indented code needs 4 columns
past the content column. A fence opened at column 0 or 1 is in no list item:
it ends at its closing line or at the end. An HTML block or a blockquote
opened at column 0 or 1 is in no list item either (both end paragraphs), and
ends where headings_blocks says; an HTML block holds no heading, a
blockquote's content is scanned as a document of its own, its lazy lines
among it when nothing from the first on could be a heading or start a
block and a blank line ends it (what markdown-it makes of them then
changes no heading and no end). A list item
(opened after a blank line, a settled block, or a paragraph it may end) runs
while its lines are blank or indented to its content, until a line that
starts another block; its content, that indentation taken off, is scanned as
a document of its own, and one line of text followed by another item needs no
more. A heading, a fence or a block (no paragraph's line) at column 0 or 1
ends every list, so what follows is at the top level again. A setext heading
is settled when its text is one plain line after a blank line or a settled
block, and no list item the scan did not bound may hold it.

What it declines, or leaves to the older rules (which then decline what may be
in a list item): CR or NUL (markdown-it rewrites them); a line of a list item
that may continue a paragraph lazily, a blockquote's lazy lines but those
above, or a tab in their indentation; once the scan has taken a list marker's
line for text (an item it could not bound may hold what follows), an HTML block
or a blockquote indented 2 or 3 and a heading or fence line indented 4 or more
or by a tab (before that, every line it meets is at the top level, where such a
line is indented code or a paragraph's); an HTML block of kind 7 that may be a
paragraph's line; a fence opened at column k = 2 or 3 (it may be a list item's)
unless every non-blank line through the closer starts with k spaces and no line
of its marker indented 4 or more could close it; a list that may be nested
past markdown-it's limit (headings_blocks.too_deep); a setext underline under
any other line; a heading, fence or list marker's line holding ``|`` above a
line that could be a table's delimiter row; a heading whose text a link
reference definition might change (headings_labels says which it settles).

tests/test_headings_scan.py compares it with the full parse on generated
documents, this repository's Markdown and the vendored RFCs;
bench/bench_headings.py and bench/bench_real_markdown.py time it.
"""

from __future__ import annotations

import re

from governance.core.headings_blocks import (
    DEEPEST,
    MARKER,
    TooDeep,
    blank_before,
    cannot_interrupt,
    end_of_line,
    html_end,
    html_kind,
    is_rule,
    item_lines,
    next_line,
    plain_title,
    quote_lines,
    shifted,
    too_deep,
)
from governance.core.headings_labels import (
    TITLE_NEXT,
    TRIM,
    Labels,
    atx_content,
    in_paragraph,
    provable,
)

# Each pattern starts with a literal line feed (the text is searched with one
# prepended), which lets the regex engine skip ahead to line starts: about 30
# times faster than '^' in MULTILINE mode.
_LINE = re.compile(
    r"\n(?P<indent>[ \t]*)(?:(?:"
    r"(?P<atx>#{1,6})(?:[ \t](?P<rest>[^\n]*))?"
    r"|(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)"
    r"|(?P<under>=+|-+)[ \t]*"
    r")(?=\n|$)"
    # An HTML block, a blockquote or a list item, perhaps (headings_blocks).
    r"|(?P<block>[<>])"
    rf"|(?P<item>{MARKER})(?=[ \t\n]|$)"
    # A link reference definition, perhaps (headings_labels).
    r"|(?P<ref>\[))"
)
# After a list marker: a heading, a fence, an HTML block or a blockquote,
# perhaps, or a further marker opening one.
_OPENS_BLOCK = re.compile(rf"(?:[ \t]+{MARKER})*[ \t]+(?:[<>]|#|```|~~~)")
# A blank line, then a line starting at column 0 or 1 that is no list item:
# every list has ended there (an item's content starts at column 2 or more,
# and after a blank line no paragraph continues lazily).
_CLOSES = re.compile(rf"\n[ \t]*\n ?(?!{MARKER}(?:[ \t]|\n|$))[^ \t\n]")
# A list item's line indented at most k columns, k = 0 to 3, or the end.
_SIBLING = [re.compile(rf"\n {{0,{k}}}{MARKER}(?:[ \t]|\n|$)|$") for k in range(4)]
# A line that could be a table's delimiter row (markdown-it checks more).
_DELIMITER_ROW = re.compile(r"[ \t]*[-|:][-|: \t]*")
# A non-blank line starting with fewer than k spaces, k = 2 and 3.
_SHORT = {k: re.compile(rf"\n {{0,{k - 1}}}(?=[^ \n])(?![ \t]*(?:\n|$))") for k in (2, 3)}


def scan_headings(text: str) -> list[tuple[int, int, int, str]] | None:
    """(line, level, source text) of each heading of ``text`` as the full parse
    finds them, or None when the scan declines. ``text`` is what markdown-it is
    given: without a BOM, its front matter blanked."""
    scanned = scan_document(text)
    return None if scanned is None else scanned[0]


def scan_document(text: str) -> tuple[list[tuple[int, int, int, str]], tuple[str, ...]] | None:
    """scan_headings's headings, and the labels of the definitions the scan
    proved: a heading's text is its source rendered with them defined."""
    if "\r" in text or "\x00" in text:
        return None
    text = "\n" + text
    labels = Labels(text)
    try:
        found = _scan(text, labels, 0)
    except TooDeep:
        return None
    # Every definition is known now: a heading whose link could name a label
    # that a line not proved a definition may define is not settled.
    if found is None or any(labels.unsettled(content) for *_, content in found):
        return None
    return found, tuple(labels.proved.values())


def _scan(  # noqa: C901, PLR0912, PLR0915 (one pass of a line state machine; to split next)
    text: str, labels: Labels, levels: int
) -> list[tuple[int, int, int, str]] | None:
    # ``text`` starts with a line feed; ``levels`` of markdown-it's nesting
    # enclose it (a blockquote is one, a list and its item two).
    found: list[tuple[int, int, int, str]] = []
    line = 0  # the prepended line feed
    at = 0
    fence: str | None = None  # the open fence's marker
    fence_indent = 0
    fence_end = 0  # where its opening line ends
    settled = -1  # where the last heading, closing fence line or block ends
    # Whether a line may be in a list item the scan did not bound (it took a
    # marker's line for text): until then every line it meets is at the top
    # level of ``text``, where a line indented 4 or more is no heading.
    loose = False
    checked = 0  # the text before this is judged for lists that close
    search = _LINE.search
    match = search(text)
    current = -1  # where the line of the match before this one starts
    while match is not None:
        start = match.start() + 1  # the line's first character
        previous, current = current, start
        line += text.count("\n", at, start)
        at = start
        # Every group at once (the pattern's groups in order; a test checks it).
        indent, atx, rest, marker, info, under, block, item, ref = match.groups()
        inset = len(indent) >= 4 or "\t" in indent
        end = match.end()
        if fence is not None:
            if (
                marker is None
                or marker[0] != fence[0]
                or len(marker) < len(fence)
                or info.strip(" \t")
            ):
                match = search(text, end)
                continue  # the fence's content
            if inset:
                if fence_indent >= 2:
                    return None  # would close it inside a list item
                match = search(text, end)
                continue  # indented code would not close it: content
            if fence_indent >= 2 and _SHORT[fence_indent].search(text, fence_end, end):
                return None  # a line that may have ended a list item holding the fence
            if levels == 0:
                labels.opaque.append((fence_end, start))  # its lines define nothing
            fence = None
            settled = end
            match = search(text, end)
            continue
        if loose and _CLOSES.search(text, checked, start) is not None:
            loose = False  # a blank line, then a line no list item holds
        checked = start
        if ref is not None:
            # A definition the scan proves, at the top level where a block
            # starts; any other line starting with a bracket is text.
            line_end = end_of_line(text, start)
            after = start - 1 == settled or blank_before(text, start)
            if loose and len(indent) <= 1 and blank_before(text, start):
                loose = False  # at column 0 or 1 after a blank line: no item holds it
            if (
                levels == 0
                and not (inset or loose)
                and after
                and (label := provable(text[start:line_end])) is not None
            ):
                labels.proved[start - 1] = label
                if not TITLE_NEXT.match(text, line_end):
                    settled = line_end  # else its title may take the next line
            elif (
                levels == 0
                and not inset
                and not after
                and (
                    text.rfind("\n", 0, start - 1) in labels.disproved
                    or in_paragraph(text, start, settled, previous)
                )
            ):
                # Its line continues a paragraph (as the line before does,
                # where that is a paragraph's bracket line).
                labels.disproved.add(start - 1)
            match = search(text, end)
            continue
        if (
            (item is not None or under == "-")
            and (loose or not inset)
            and too_deep(text, start, indent, levels)
        ):
            # A list that may be nested past markdown-it's limit: the whole
            # document is declined (an item that holds it is no text).
            raise TooDeep
        if item is not None:
            inner = listed = None
            after = start - 1 == settled or blank_before(text, start)
            line_end = end_of_line(text, start)
            if "|" in text[start:line_end] and _DELIMITER_ROW.fullmatch(next_line(text, line_end)):
                return None  # a table's header row, perhaps (tried before a list)
            if (
                not inset
                and not _OPENS_BLOCK.match(text, end)
                and _SIBLING[len(indent)].match(text, line_end)
                and (
                    not cannot_interrupt(text, start + len(indent), item)
                    or start - 1 == settled
                    or blank_before(text, start)
                )
            ):
                # One line of text, then an item of this list or an outer one
                # (at most as indented): a line the scan has no more to say of
                # (where it is an item's: it may not interrupt a paragraph).
                settled = line_end
                match = search(text, line_end)
                continue
            if not (
                inset
                or is_rule(text[start + len(indent) : line_end])
                or (not after and cannot_interrupt(text, start + len(indent), item))
            ):
                listed = item_lines(text, start + len(indent), len(indent))
                if listed is not None:
                    inner = _scan("\n" + "\n".join(listed[0]), labels, levels + 2)
            if listed is None or inner is None:
                # Indented text, a thematic break, a paragraph's text, or an
                # item the scan cannot bound: scanned as text, as if no list
                # item held it, which a block opening after the marker is not.
                if _OPENS_BLOCK.match(text, end):
                    return None
                # Indented 4 or more at the top level, or a thematic break, is
                # no item; anything else may be one.
                loose = loose or not (inset or is_rule(text[start + len(indent) : line_end]))
                match = search(text, end)
                continue
            found += shifted(inner, line)
            settled = listed[1]
            match = search(text, settled)
            continue
        if block is not None:
            # At column 0 or 1 no list item holds the line (its content starts
            # at column 2 or more), and neither block is a lazy continuation;
            # nor at 2 or 3 while no item may be open.
            if inset and not loose:
                match = search(text, end)
                continue  # indented code, or a paragraph's text
            if len(indent) > (3 if not loose else 1) or "\t" in indent:
                return None
            after = start - 1 == settled or blank_before(text, start)
            # A tag alone on a line (an HTML block of kind 7) may not end a
            # paragraph: after a line sure to be one's, it is its text.
            paragraph = block == "<" and not after and in_paragraph(text, start, settled, previous)
            closed = _block(
                text,
                start + len(indent),
                block,
                after_blank=after,
                paragraph=paragraph,
                labels=labels,
                levels=levels,
            )
            if closed is None:
                return None
            if levels == 0 and block == "<" and closed[2]:
                labels.opaque.append((start, closed[0]))  # an HTML block defines nothing
            end, inner, settles = closed
            found += shifted(inner, line)
            if settles:
                settled = end
                # At column 0 or 1, a block (no paragraph's line) has ended
                # every list: what follows is at the top level again.
                loose = loose and len(indent) > 1
            match = search(text, end)
            continue
        match = search(text, end)
        if under is not None:
            before = text.rfind("\n", 0, start - 1)
            if line > 1 and start - 1 != settled and text[before + 1 : start - 1].strip(" \t"):
                # A setext underline, perhaps: settled where its paragraph is
                # the one line after a blank line or a block.
                title = text[before + 1 : start - 1]
                if (
                    inset
                    or loose  # its line may be a list item's, the underline a lazy line
                    or previous == before + 1  # the pattern matched it: no plain line
                    or not plain_title(title)
                    or not (before == settled or blank_before(text, before + 1))
                ):
                    return None
                found.append((line - 1, line, 1 if under[0] == "=" else 2, title.strip(TRIM)))
                settled = end
            elif under == "-" and not inset:
                return None  # an empty list item: what follows may be its content
            continue
        if inset:
            if loose:
                return None  # it may be a list item's
            continue  # indented code, or a paragraph's text: no heading, no fence
        if "|" in text[start:end] and _DELIMITER_ROW.fullmatch(next_line(text, end)):
            return None  # a table's header row, perhaps
        if marker is not None:
            if marker[0] == "`" and "`" in info:
                continue  # not a fence: paragraph text
            fence = marker
            fence_indent = len(indent)
            fence_end = end
            loose = loose and fence_indent > 1  # as a block at column 0 or 1 does
            continue
        content = atx_content(rest or "")
        found.append((line, line, len(atx), content))
        settled = end
        loose = loose and len(indent) > 1  # as a block at column 0 or 1 does
    if fence is not None and fence_indent >= 2 and _SHORT[fence_indent].search(text, fence_end):
        return None
    if fence is not None and levels == 0:
        labels.opaque.append((fence_end, len(text)))  # a fence open to the end
    return found


def _block(
    text: str,
    start: int,
    kind: str,
    *,
    after_blank: bool,
    paragraph: bool,
    labels: Labels,
    levels: int,
) -> tuple[int, list[tuple[int, int, int, str]], bool] | None:
    """Where the HTML block or blockquote at ``start`` ends, the headings of
    a blockquote (numbered from its first line), and whether it is a block
    (not a paragraph's line, which a tag alone may not interrupt: so it is
    where ``paragraph`` says the line before is sure to be one's); None to
    decline."""
    line_end = end_of_line(text, start)
    if "|" in text[start:line_end] and _DELIMITER_ROW.fullmatch(next_line(text, line_end)):
        return None  # a table's header row, perhaps
    if kind == "<":
        html = html_kind(text[start:line_end])
        if html == 7 and not after_blank and paragraph:
            return line_end, [], False  # the paragraph's text
        if html is None or (html == 7 and not after_blank):
            return None  # a version-dependent name; a paragraph's line, perhaps
        if html == 0:
            return line_end, [], False  # a paragraph's text
        return html_end(text, start, html), [], True
    if levels + 1 >= 2 * DEEPEST:
        return None
    quoted = quote_lines(text, start)
    if quoted is None:
        return None
    lines, end, lazy = quoted
    if lazy is not None and any(
        opens.group("ref") is None for opens in _LINE.finditer("\n" + "\n".join(lines[lazy:]))
    ):
        # Lazy lines are settled where nothing from the first one on could
        # be a heading or start a block. markdown-it continues an open
        # paragraph of the quote with each; or, at the first after any other
        # block, it stops reading the quote and reads that line and the rest
        # as the document's (a paragraph, and quotes of plain lines). Either
        # way no heading is among them, and both readings end where the quote
        # does, at a blank line (quote_lines declines any other end after a
        # lazy line).
        return None
    inner = _scan("\n" + "\n".join(lines), labels, levels + 1)
    return None if inner is None else (end, inner, True)
