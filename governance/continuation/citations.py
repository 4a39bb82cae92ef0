"""Check 6's matter: what a result may cite, and whether each quoted span of a
``continuation-result/2`` citation is, byte for byte, in the lines of the part
it names.

A citation is a locator (``docs/roadmap.md#phase-2``), or a quoted span:
``{"locator": ..., "lines": [first, last], "quote": ...}``. The lines are the
source file's line numbers, as the capsule records a part's (a read's
``lines``; the packet and the context are whole files, from line 1), counted
by the capsule's line rule (a line ends at LF, CRLF or a lone CR). A quote is
supported when its UTF-8 bytes occur within the bytes of those lines, their
endings included, and those lines lie within the part's; nothing is
normalised (another Unicode form, another line ending, is other bytes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from governance.core.headings import line_count, split_lines
from governance.core.reader import CapsuleFile
from governance.core.words import plural

MOST = 5  # unsupported quotes spelt out in a reason, per result


@dataclass(frozen=True)
class Part:
    """A citable part: its exact text and the source lines it spans (None:
    an empty file, which has no lines)."""

    locator: str
    text: bytes
    lines: tuple[int, int] | None


def parts(capsule: CapsuleFile) -> dict[str, Part]:
    """Every citable part by its locator, in capsule order: the packet and the
    context (both whole) and each read, exactly as recorded. A path whose read
    is one heading's section is not citable as the whole file: the agent never
    saw the rest of it."""
    document = capsule.document
    found: dict[str, Part] = {}
    for name in ("packet", "context"):
        text = document[name]["text"].encode("utf-8")
        count = line_count(text)
        found.setdefault(
            document[name]["path"],
            Part(document[name]["path"], text, (1, count) if count else None),
        )
    for read in document["reads"]:
        first, last = read["lines"]
        lines = (first, last) if last >= first else None
        found.setdefault(
            read["locator"], Part(read["locator"], read["text"].encode("utf-8"), lines)
        )
    return found


def locator(citation: Any) -> str:
    """The locator a citation names, bare or quoted."""
    return str(citation["locator"] if isinstance(citation, dict) else citation)


def unsupported(part: Part, lines: Sequence[int], quote: str) -> str | None:
    """Why ``quote`` is not on ``lines`` of ``part``; None when it is."""
    first, last = lines
    if first > last:
        return f"lines {first}-{last} run backwards"
    if part.lines is None:
        return "the part is empty: it has no lines"
    start, end = part.lines
    if first < start or last > end:
        return f"outside the part's lines {start}-{end}"
    held = b"".join(split_lines(part.text)[first - start : last - start + 1])
    if quote.encode("utf-8", "surrogatepass") not in held:
        return "not in those lines"
    return None


@dataclass(frozen=True)
class Judged:
    """Check 6 over the valid results: its violations, and the quotes each slot gave."""

    violations: list[str]
    quotes: dict[str, int]


def judge(
    capsule: CapsuleFile,
    valid: Mapping[str, dict[str, Any]],
    *,
    shown: Callable[[str], str],
    listing: Callable[[Sequence[str]], str],
) -> Judged:
    """Every citation of each result a part of ``capsule``, and every quote it
    carries in its part's lines. ``shown`` quotes agent text for a reason,
    ``listing`` lists a few of many."""
    citable = parts(capsule)
    violations: list[str] = []
    quotes: dict[str, int] = {}
    for slot, value in valid.items():
        citations = value["citations"]
        foreign = [shown(c) for c in dict.fromkeys(map(locator, citations)) if c not in citable]
        if foreign:
            violations.append(
                f"{slot} cites {listing(foreign)}, not a part of this capsule "
                f"(citable: {listing(list(citable))})"
            )
        quoted = [c for c in citations if isinstance(c, dict)]
        quotes[slot] = len(quoted)
        bad = []
        for citation in quoted:
            part = citable.get(citation["locator"])
            if part is None:
                continue  # named above, once
            why = unsupported(part, citation["lines"], citation["quote"])
            if why is not None:
                first, last = citation["lines"]
                bad.append(
                    f"{slot} quotes {part.locator} lines {first}-{last} "
                    f"{shown(citation['quote'])}: {why}"
                )
        if bad:
            more = f"; and {len(bad) - MOST} more" if len(bad) > MOST else ""
            violations.append(
                f"{slot}: {len(bad)} of its {plural(len(quoted), 'quote')} unsupported: "
                + "; ".join(bad[:MOST])
                + more
            )
    return Judged(violations, quotes)


def held(count: int, quotes: Mapping[str, int]) -> str:
    """Check 6's reason when it passes."""
    said = f"every citation names one of the capsule's {count} citable parts"
    if not any(quotes.values()):
        return said
    each = ", ".join(f"{slot}: {plural(n, 'quote')}" for slot, n in quotes.items())
    return f"{said}, and every quote is in its part's lines ({each})"
