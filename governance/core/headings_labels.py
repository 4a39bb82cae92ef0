"""What link reference definitions could do to a heading's text, judged by
the heading scan (core/headings_scan.py) before it takes a heading as
markdown-it would: every label a document could define, and whether a
heading's brackets could name one (its text would then depend on the
definition, so the scan declines). A label followed by an inline link's
destination names no definition (markdown-it reads it as a reference only
when the destination does not parse or validateLink refuses it), nor do
brackets inside code spans. Where the scan proved every definition a
heading's label could name (headings_scan), the heading is settled all the
same: a link's text is its own, whatever its destination. Coarser than
markdown-it, never finer: where it may differ, it says "may"."""

from __future__ import annotations

import re
from bisect import bisect_right

from governance.core.headings_blocks import MARKER, end_of_line, is_rule

# Where a link reference definition could start: a line's first character
# after indentation, blockquote and list markers (characters of them: a
# repeated group would keep state per repetition) is '[', and a ']:' closes
# its label (no unescaped '[' in it; it may span lines).
_DEFINITION = re.compile(r"\n[ \t>0-9.)*+-]*\[(?P<label>(?:[^\[\]\\]|\\[\s\S])*)\]:")
# Innermost brackets of a heading: a label a link of it could name, and
# what follows them where that is an inline link's "(destination)" of URL
# characters but parentheses, brackets, quotes and backslashes.
_BRACKETS = re.compile(r"\[([^\[\]]*)\](\([A-Za-z0-9._~:/?#@!$&*+,;=%-]+\))?")
# A destination markdown-it's validateLink refuses (checked lower-cased): an
# inline link with one falls back to the label as a reference.
_REFUSED = re.compile(r"\((?:vbscript|javascript|file|data):")
# markdown-it-py's trim set (common.utils.MD_TRIM_CHARS): CommonMark's Unicode
# whitespace (Zs, tab, LF, FF, CR) and VT, U+2028, U+2029. A test compares them.
TRIM = (
    "\t\n\v\f\r \xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
# Whitespace a label's comparison collapses: markdown-it's trim set and more,
# so two labels it takes as equal are equal here too.
_SPACES = re.compile("[\\s" + re.escape(TRIM) + "]+")


# A list item's line whose content starts a paragraph: a letter or a digit,
# or one of emphasis before it, after one to four spaces; not another
# marker ("- 1." is an empty item in an item, no paragraph).
PLAIN_ITEM = re.compile(
    rf" {{0,3}}{MARKER} {{1,4}}(?!{MARKER}(?:[ \t]|$))(?:[*_]{{1,3}})?[A-Za-z0-9][^\n]*"
)
# The line after a definition may be its title.
TITLE_NEXT = re.compile(r"\n[ \t]*[\"'(]")


class Labels:
    """The labels a text could define, found when a heading with a bracket
    first asks (most documents have none; one search of the text at most),
    and the definitions the scan proved: a heading whose every label is
    either defined by a proved definition or by no line at all is settled
    (its text rendered with those definitions), any other is not."""

    __slots__ = ("_found", "_searched", "_text", "disproved", "opaque", "proved")

    def __init__(self, text: str) -> None:
        self._text = text
        # Where each line that could define a label starts (its line feed),
        # with the label; None when one spans lines.
        self._found: list[tuple[int, str]] | None = None
        self._searched = False
        # The definitions the scan proved, by the line feed before each, and
        # the lines it proved are none (a paragraph's).
        self.proved: dict[int, str] = {}
        self.disproved: set[int] = set()
        # Where the text is a fence's content or an HTML block, in order:
        # (start, end) positions no definition is inside.
        self.opaque: list[tuple[int, int]] = []

    def _definitions(self) -> list[tuple[int, str]] | None:
        if not self._searched:
            self._found = definitions(self._text)
            self._searched = True
        return self._found

    def unsettled(self, content: str) -> bool:
        """Whether a link of this heading could name a label that a line the
        scan did not prove a definition could define."""
        if "[" not in content:
            return False
        found = self._definitions()
        if found is None:
            return may_reference(content, None)
        keys = frozenset(
            key
            for at, label in found
            if at not in self.proved and at not in self.disproved and not self._inside(at)
            for key in _keys(label)
        )
        return may_reference(content, keys)

    def _inside(self, at: int) -> bool:
        # Whether the line after the line feed at ``at`` is opaque.
        index = bisect_right(self.opaque, (at, len(self._text) + 1)) - 1
        return index >= 0 and self.opaque[index][0] <= at < self.opaque[index][1]


# A definition the scan proves, on a line that starts a block: markdown-it's
# reference rule takes it whatever follows (a title on the next line or not).
# The label holds a letter or digit and no bracket, backslash or '|' (which
# could make the line a table's); the destination only URL characters.
PROVABLE = re.compile(
    r" {0,3}\[(?P<label>[^\[\]\\|\n]{1,999})\]:"
    r"[ \t]*(?P<destination>[A-Za-z0-9._~:/?#@!$&*+,;=%-]+)[ \t]*"
)


_ALNUM = re.compile(r"[A-Za-z0-9]")


def provable(line: str) -> str | None:
    """The label of the definition ``line`` is, where it starts a block and
    PROVABLE matches it whole and validateLink accepts its destination."""
    found = PROVABLE.fullmatch(line)
    if found is None or _ALNUM.search(found.group("label")) is None:
        return None
    if _REFUSED.match("(" + found.group("destination").lower()):
        return None
    return found.group("label")


def definitions(text: str) -> list[tuple[int, str]] | None:
    """Each line of the text that could define a label, wherever it could:
    where it starts (its line feed) and the label; None when a label spans
    lines (its prefixes unknown)."""
    found = []
    for match in _DEFINITION.finditer(text):
        label = match.group("label")
        if "\n" in label:
            return None
        found.append((match.start(), label))
    return found


def _keys(label: str) -> set[str]:
    # Coarser than markdown-it's normalizeReference (trim, collapse
    # whitespace, lower then upper case): never two keys where it has one.
    plain = _SPACES.sub(" ", label).strip(" ")
    return {plain.lower().upper(), plain.casefold()}


_BACKTICKS = re.compile(r"`+")


def code_spans(content: str) -> list[tuple[int, int, int, int]]:
    """The code spans of ``content`` as markdown-it's inline rule pairs
    backticks where nothing else comes first (no backslash, no ``<``): a run
    opens a span closed by the next run of the same length; a run with no
    such closer is text. Each as (its start, its code's start and end, its
    end)."""
    runs = [(found.start(), found.end()) for found in _BACKTICKS.finditer(content)]
    # The index of the next run of the same length after each run, or None.
    closer: list[int | None] = [None] * len(runs)
    last: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        width = runs[index][1] - runs[index][0]
        closer[index] = last.get(width)
        last[width] = index
    spans = []
    index = 0
    while index < len(runs):
        close = closer[index]
        if close is None:
            index += 1  # no closer: the backticks are text
            continue
        spans.append((runs[index][0], runs[index][1], runs[close][0], runs[close][1]))
        index = close + 1
    return spans


def may_reference(content: str, labels: frozenset[str] | None) -> bool:
    # Could a link of this heading name a defined label (so its text depend on it)?
    if "[" not in content or labels == frozenset():
        return False
    if "\\" in content:
        return True
    if "<" not in content and "[" not in _outside_code(content):
        return False  # every bracket is code: no link can open
    if labels is None:
        return True
    # An inline link's text is its own whatever is defined: markdown-it reads
    # the label as a reference only when what follows it is no destination.
    # Brackets right after a "]" are the label of a full reference ("[t][l]"),
    # whatever follows them.
    return any(
        _keys(found[1]) & labels
        for found in _BRACKETS.finditer(content)
        if not found[2]
        or _REFUSED.match(found[2].lower())
        or content[found.start() - 1 : found.start()] == "]"
    )


def _outside_code(content: str) -> str:
    # The content less its code spans (backslashes and "<" ruled out first:
    # an escape or an autolink, a tag, could come before a backtick).
    parts = []
    copied = 0
    for opens, _, _, closed in code_spans(content):
        parts.append(content[copied:opens])
        copied = closed
    parts.append(content[copied:])
    return "".join(parts)


def in_paragraph(text: str, start: int, settled: int, previous: int) -> bool:
    """Whether the line at ``start`` (not indented 4 or more) surely
    continues a paragraph: the lines before it, back to a blank line or a
    settled block, are a paragraph's (none the pattern matched, the first
    not indented 4 or more, none a thematic break or holding a table's
    '|'), and a line starting with a bracket ends no paragraph. Its text
    is the paragraph's then, no definition, in whatever container."""
    at = start  # the run's first line, so far
    while True:
        end = at - 1  # the line feed ending the line before
        if end == settled or end <= 0:
            break
        before = text.rfind("\n", 0, end) + 1
        line = text[before:end]
        body = line.lstrip(" ")
        if not body.strip(" \t"):
            break  # a blank line: the run starts after it
        if "|" in line or is_rule(body):
            return False  # what may end a paragraph, or a table's row
        if before <= previous:
            # A line the pattern matched: a paragraph's only where it is a
            # list item's first line of plain text.
            return PLAIN_ITEM.fullmatch(line) is not None
        at = before
    first = text[at : end_of_line(text, at)]
    indent = len(first) - len(first.lstrip(" "))
    return at < start and indent < 4 and not first.startswith("\t", indent)


def atx_content(rest: str) -> str:
    # A heading's source text by markdown-it's ATX rule: drop trailing
    # spaces and tabs, then a closing run of '#' when a space or tab
    # precedes it, then trim.
    end = len(rest.rstrip(" \t"))
    closing = end
    while closing > 0 and rest[closing - 1] == "#":
        closing -= 1
    if closing < end and (closing == 0 or rest[closing - 1] in " \t"):
        end = closing
    return rest[:end].strip(TRIM)
