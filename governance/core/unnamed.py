"""A heading selector that names no heading, or several: the refusal, with
the candidates (at most SHOWN, beside their count), the nearest slugs, and
the locator GitHub's numbered anchor (``#notes-1``) stands for; and the
locator that names one heading alone, which outline and suggest propose."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from governance.core.structure import propose, render
from governance.errors import HEADING_AMBIGUOUS, HEADING_MISSING, SourceError

if TYPE_CHECKING:
    from governance.core.locator import Selector
    from governance.core.tree import Match, Tree

# An error lists at most this many candidates, in its message and in its
# details, beside their count: a file of a million equal headings made a
# --json error of 39 MB.
SHOWN = 20


def candidate_locator(path: str, tree: Tree, index: int) -> str:
    """The locator naming heading ``index`` of ``path`` alone: its slug,
    qualified where it repeats, structural (``a>b``, ``>a``) where that is
    not enough, with an ordinal (``a@2``) only among identical siblings."""
    return f"{path}#{render(propose(tree, index))}"


def github_replacement(selector: Selector, tree: Tree) -> tuple[str, str] | None:
    """Where ``selector`` is one slug that is GitHub's numbered anchor of a
    repeated heading (``notes-1``) and not that heading's own slug: the
    message part naming the heading and the locator that selects it."""
    if selector.steps or selector.parents or selector.slug is None:
        return None
    index = tree.anchors.get(selector.slug)
    if index is None or tree.headings[index].slug == selector.slug:
        return None
    locator = candidate_locator(selector.path, tree, index)
    line = tree.headings[index].line
    said = f"GitHub's anchor #{selector.slug} is the heading at line {line}: write {locator}"
    return said, locator


def _listed(path: str, tree: Tree, indices: Sequence[int]) -> tuple[str, list[dict[str, object]]]:
    # Selectors only for the candidates shown: each may cost a search.
    found: list[dict[str, object]] = [
        {"line": tree.headings[i].line, "locator": candidate_locator(path, tree, i)}
        for i in indices[:SHOWN]
    ]
    shown = [f"line {c['line']} ({c['locator']})" for c in found]
    more = len(indices) - len(found)
    return ", ".join(shown) + (f" and {more:,} more" if more else ""), found


def unnamed(selector: Selector, tree: Tree, match: Match) -> SourceError:
    qualified = bool(selector.parents or selector.steps)
    fragment = selector.locator.partition("#")[2]
    what = f"selector {fragment!r}" if qualified else f"slug {selector.slug!r}"
    replacement = github_replacement(selector, tree)
    details: dict[str, object] = {} if replacement is None else {"replacement": replacement[1]}
    if not match.candidates:
        message = f"{selector.locator}: no heading with {what} in {selector.path}"
        if replacement is not None:
            message += f"; {replacement[0]}"
        assert selector.slug is not None
        elsewhere = tree.by_slug.get(selector.slug, [])
        if qualified and elsewhere:
            where, found = _listed(selector.path, tree, elsewhere)
            message += f"; headings with slug {selector.slug!r}: {where}"
            details["candidates"] = found
            details["candidate_count"] = len(elsewhere)
        elif replacement is None:
            near = tree.nearest(selector.slug)
            if near:
                _, found = _listed(selector.path, tree, near)
                named = [f"{c['locator']} (line {c['line']})" for c in found]
                message += f"; nearest: {', '.join(named)}"
                details["nearest"] = found
        message += f"; `capsule outline {selector.path}` lists every heading and its selector"
        return SourceError(message, code=HEADING_MISSING, locator=selector.locator, **details)
    # GitHub names the (n+1)-th repeat of a heading `base-n`. A selector that
    # can mean such a repeat depends on position: ambiguous, with every
    # candidate, never silently the n-th one or an unrelated `Base n`.
    where, found = _listed(selector.path, tree, match.candidates)
    count = len(match.candidates)
    message = (
        f"{selector.locator}: {what} names {count:,} heading{'s' if count > 1 else ''} in "
        f"{selector.path} ({where})"
    )
    if match.positional:
        message += (
            "; a '-N' suffix can be GitHub's position number for a repeated heading, which "
            "moves when one is added above"
        )
    if replacement is not None:
        message += f"; {replacement[0]}"
    else:
        message += "; use the selector of the one you mean"
    return SourceError(
        message,
        code=HEADING_AMBIGUOUS,
        locator=selector.locator,
        lines=[c["line"] for c in found],
        candidates=found,
        candidate_count=count,
        **details,
    )
