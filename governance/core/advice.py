"""What to narrow when a capsule is over budget: how much to cut, the costliest
reads that cover it, and for each of them its largest sections with their
selectors and costs."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from governance.core.budget import Limits, estimate_tokens
from governance.core.excerpt import parsed_file
from governance.core.locator import parse_locator
from governance.core.overlap import overlaps
from governance.core.unnamed import candidate_locator

if TYPE_CHECKING:
    from governance.core.excerpt import Excerpt
    from governance.core.snapshot import Snapshot
    from governance.errors import CapsuleError

# How many sections are listed for each read to narrow.
SECTIONS = 3


def narrowing(
    error: CapsuleError,
    limits: Limits,
    excerpts: Sequence[Excerpt],
    snapshot: Snapshot,
    *,
    read_locators: Sequence[str],
) -> CapsuleError:
    """``error`` (an over_budget failure) with advice added to its message and
    details: ``excess_tokens`` and ``narrow`` (each read to narrow, with its
    largest ``sections``)."""
    tokens = int(error.details["estimated_tokens"])
    allowed = min(limits.target_tokens, limits.hard_limit_tokens - limits.reserve_tokens)
    excess = tokens - allowed
    reads = set(read_locators)
    parts = [p for p in error.details.get("parts", []) if p["part"] in reads]
    parts.sort(key=lambda p: (-p["bytes"], read_locators.index(p["part"])))
    chosen: list[dict[str, Any]] = []
    covered = 0
    for part in parts:
        if covered >= excess:
            break
        chosen.append(part)
        covered += part["estimated_tokens"]
    lines = [f"to fit, cut at least {excess:,} estimated tokens (about {excess * 3:,} bytes)"]
    if chosen:
        lines[0] += "; narrow " + ", then ".join(
            f"{p['part']} ({p['estimated_tokens']:,} tok)" for p in chosen
        )
    by_locator = {e.locator: e for e in reversed(excerpts)}
    narrow = []
    for part in chosen:
        excerpt = by_locator.get(part["part"])
        sections = _sections(excerpt, snapshot) if excerpt is not None else []
        narrow.append({**part, "sections": sections})
        if sections:
            what = "subsections" if excerpt is not None and excerpt.heading else "sections"
            lines.append(f"largest {what} of {part['part']}:")
            width = max(len(s["locator"]) for s in sections)
            lines += [
                f"  {s['locator']:<{width}}  {s['bytes']:>10,} B  "
                f"{s['estimated_tokens']:>8,} tok  lines {s['lines'][0]}-{s['lines'][1]}"
                for s in sections
            ]
    for overlap in overlaps(excerpts):
        lines.append(f"and {overlap.message}")
    error.message = "\n".join([error.message, *lines])
    error.args = (error.message,)
    error.details["excess_tokens"] = excess
    error.details["narrow"] = narrow
    return error


def _sections(excerpt: Excerpt, snapshot: Snapshot) -> list[dict[str, Any]]:
    """The largest sections directly under the read's heading (for a whole
    file: under no heading, or under its one top heading), largest first."""
    selector = parse_locator(excerpt.locator)
    if selector.lines is not None or selector.symbol is not None:
        return []  # a range or a definition has no sections: name fewer lines
    parsed = parsed_file(snapshot, snapshot.source(excerpt.path), locator=excerpt.locator)
    tree, lines = parsed.tree, parsed.lines
    if excerpt.heading is not None:
        owner = next(
            (
                i
                for i, s in enumerate(tree.sections)
                if (s.first_line, s.last_line) == (excerpt.first_line, excerpt.last_line)
            ),
            None,
        )
        if owner is None:  # pragma: no cover - the excerpt came from this very tree
            return []
    else:
        tops = [i for i, parent in enumerate(tree.parent) if parent is None]
        owner = tops[0] if len(tops) == 1 else None
    children = [i for i, parent in enumerate(tree.parent) if parent == owner]
    starts = [0, *itertools.accumulate(len(line) for line in lines)]

    def size(i: int) -> int:
        section = tree.sections[i]
        return starts[section.last_line] - starts[section.first_line - 1]

    children.sort(key=lambda i: (-size(i), i))
    return [
        {
            "locator": candidate_locator(excerpt.path, tree, i),
            "lines": [tree.sections[i].first_line, tree.sections[i].last_line],
            "bytes": size(i),
            "estimated_tokens": estimate_tokens(size(i)),
        }
        for i in children[:SECTIONS]
    ]
