"""The headings of a plain Markdown file without a full parse: the same list
``core.headings.parse_headings`` gives, for files whose structure a line scan
settles (ATX headings, fenced code), and None for every other file, which the
caller then parses in full. Block parsing is most of what suggest spends on a
corpus; the scan is a few regular expressions over the text.

It answers only when nothing can make a line mean something else: no HTML
block, blockquote, setext underline after text, front matter, heading or fence
inside a list item, indented heading or fence marker, tab or CR line end, NUL,
or link markup in a heading (whose meaning depends on the document's link
definitions). tests/test_quickheadings.py compares it with the full parse.
"""

from __future__ import annotations

import re

from markdown_it.common.utils import mdTrim

from governance.core.headings import Heading, _parser, _render
from governance.core.slug import github_slug

# Both patterns start with a literal line feed (the text is searched with one
# prepended), which lets the regex engine skip ahead to line starts: about 30
# times faster than '^' in MULTILINE mode.
_BAIL = re.compile(
    r"\n(?:"
    r"[ \t]*[<>]"  # an HTML block or a blockquote
    r"|[ \t]*(?:(?:[-+*]|[0-9]{1,9}[.)])[ \t]+)+(?:#|```|~~~)"  # inside a list item
    r"|(?: {0,3}\t| {4,})[ \t]*(?:#|```|~~~)"  # indented: a list item's continuation?
    r")"
)
_LINE = re.compile(
    r"\n {0,3}(?:"
    r"(?P<atx>#{1,6})(?:[ \t](?P<rest>[^\n]*))?"
    r"|(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)"
    r"|(?P<under>=+|-+)[ \t]*"
    r")(?=\n|$)"
)
# Inline markup starts only at one of these; a heading without any renders as
# its own text (markdown-it's text rule takes it whole).
_MARKUP = re.compile(r"[`*_~\[\]!<>&\\]")


def quick_headings(text: str) -> list[Heading] | None:
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text or "\x00" in text:
        return None
    text = "\n" + text
    if _BAIL.search(text):
        return None
    headings: list[Heading] = []
    line = 0  # the prepended line feed
    at = 0
    fence: str | None = None  # the open fence's marker
    for match in _LINE.finditer(text):
        start = match.start() + 1  # the line's first character
        line += text.count("\n", at, start)
        at = start
        marker = match.group("fence")
        if fence is not None:
            if (
                marker is not None
                and marker[0] == fence[0]
                and len(marker) >= len(fence)
                and not match.group("info").strip(" \t")
            ):
                fence = None
            continue
        if marker is not None:
            if marker[0] == "`" and "`" in match.group("info"):
                continue  # not a fence: an inline code span in a paragraph
            fence = marker
            continue
        if match.group("under") is not None:
            before = text.rfind("\n", 0, start - 1)
            if line == 1 or text[before + 1 : start - 1].strip(" \t"):
                return None  # a setext underline, or front matter
            continue
        content = _content(match.group("rest") or "")
        if "[" in content:
            return None
        rendered = content if not _MARKUP.search(content) else _rendered(content)
        level = len(match.group("atx"))
        slug = github_slug(rendered)
        headings.append(Heading(line=line, end_line=line, level=level, text=rendered, slug=slug))
    return headings


def _rendered(content: str) -> str:
    inline = _parser().parseInline(content, {})[0]
    return _render(inline.children or [])


def _content(rest: str) -> str:
    # markdown-it's ATX rule: drop trailing spaces, then a closing run of '#'
    # when a space or tab precedes it, then trim.
    end = len(rest.rstrip(" \t"))
    closing = end
    while closing > 0 and rest[closing - 1] == "#":
        closing -= 1
    if closing < end and (closing == 0 or rest[closing - 1] in " \t"):
        end = closing
    return str(mdTrim(rest[:end]))
