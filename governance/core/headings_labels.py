"""What link reference definitions could do to a heading's text, judged by
the heading scan (core/headings_scan.py) before it takes a heading as
markdown-it would: every label a document could define, and whether a
heading's brackets could name one (its text would then depend on the
definition, so the scan declines). Coarser than markdown-it, never finer:
where it may differ, it says "may"."""

from __future__ import annotations

import re

# Where a link reference definition could start: a line's first character
# after indentation, blockquote and list markers (characters of them: a
# repeated group would keep state per repetition) is '[', and a ']:' closes
# its label (no unescaped '[' in it; it may span lines).
_DEFINITION = re.compile(r"\n[ \t>0-9.)*+-]*\[(?P<label>(?:[^\[\]\\]|\\[\s\S])*)\]:")
# Innermost brackets of a heading: a label a link of it could name.
_BRACKETS = re.compile(r"\[([^\[\]]*)\]")
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


class Labels:
    """The labels of a text, found when a heading with a bracket first asks
    (most documents have none): one search of the text at most."""

    __slots__ = ("_found", "_searched", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._found: frozenset[str] | None = None
        self._searched = False

    def may_reference(self, content: str) -> bool:
        """may_reference(content, labels(text)), the labels found once."""
        if "[" not in content:
            return False
        if not self._searched:
            self._found = labels(self._text)
            self._searched = True
        return may_reference(content, self._found)


def labels(text: str) -> frozenset[str] | None:
    """The keys of every label the text could define a link reference for,
    wherever it could, or None when one spans lines (its prefixes unknown)."""
    keys: set[str] = set()
    for found in _DEFINITION.finditer(text):
        label = found.group("label")
        if "\n" in label:
            return None
        keys |= _keys(label)
    return frozenset(keys)


def _keys(label: str) -> set[str]:
    # Coarser than markdown-it's normalizeReference (trim, collapse
    # whitespace, lower then upper case): never two keys where it has one.
    plain = _SPACES.sub(" ", label).strip(" ")
    return {plain.lower().upper(), plain.casefold()}


def may_reference(content: str, labels: frozenset[str] | None) -> bool:
    # Could a link of this heading name a defined label (so its text depend on it)?
    if "[" not in content or labels == frozenset():
        return False
    if labels is None or "\\" in content:
        return True
    return any(_keys(inner) & labels for inner in _BRACKETS.findall(content))
