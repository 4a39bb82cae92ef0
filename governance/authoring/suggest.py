"""``capsule suggest``: from a goal to proposed ``required_reads``, with coverage
and omissions. Model-free and deterministic: the same goal, commit and options
give the same result on every machine."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from governance.authoring import select
from governance.authoring.corpus import DEFAULT_BOUNDS, Bounds, scan
from governance.authoring.facets import MAX_GOAL_CHARS, goal_facets
from governance.authoring.fit import BudgetFit
from governance.authoring.template import Draft
from governance.authoring.terms import STOPWORDS_VERSION
from governance.core import budget
from governance.core.pathspecs import Pathspecs
from governance.core.snapshot import Snapshot
from governance.errors import GOAL_EMPTY, GOAL_TOO_LONG, USAGE, UsageError

ALGORITHM = "suggest/2"


@dataclass(frozen=True)
class Options:
    paths: tuple[str, ...] = ()
    max_reads: int | None = None
    budget: int | None = None
    bounds: Bounds = DEFAULT_BOUNDS


def check_goal(goal: str) -> str:
    if len(goal) > MAX_GOAL_CHARS:
        raise UsageError(
            f"the goal has {len(goal)} characters, more than {MAX_GOAL_CHARS}; say it shorter",
            code=GOAL_TOO_LONG,
        )
    return goal


def suggest(snapshot: Snapshot, draft: Draft, options: Options) -> dict[str, Any]:
    """The suggestion for ``draft.goal`` at ``snapshot``, as the JSON ``--json`` prints."""
    goal = check_goal(draft.goal)
    facets = goal_facets(goal)
    if not facets:
        raise UsageError(
            "the goal has no content words to match (only stop words or punctuation)",
            code=GOAL_EMPTY,
        )
    if options.max_reads is not None and options.max_reads < 1:
        raise UsageError("--max-reads must be at least 1", code=USAGE)
    specs = Pathspecs(options.paths) if options.paths else None
    fit = BudgetFit(snapshot, draft)
    limit = fit.max_reads if fit.error is None else 0
    if options.max_reads is not None:
        limit = min(limit, options.max_reads)

    bounds = options.bounds
    if fit.error is None:
        # A heading read of a larger source, or of one with more headings,
        # would fail the build (source_too_large, source_too_many_headings).
        bounds = replace(
            bounds,
            file_bytes=min(bounds.file_bytes, fit.max_heading_source_bytes),
            file_headings=min(bounds.file_headings, fit.max_heading_count),
        )
    corpus = scan(snapshot, specs, {term for facet in facets for term in facet.terms}, bounds)
    candidates = select.score(corpus.docs, facets)
    chosen = select.choose(
        candidates, len(facets), fit, max_reads=limit, per_file=max(1, -(-limit // 2))
    )
    built = fit.confirm()

    reads = []
    for candidate in chosen.reads:
        doc = candidate.doc
        reads.append(
            {
                "locator": doc.locator,
                "path": doc.path,
                "heading": None if doc.heading is None else doc.heading.text,
                "lines": [doc.first_line, doc.last_line],
                "bytes": doc.n_bytes,
                "estimated_tokens": budget.estimate_tokens(doc.n_bytes),
                "facets": [facets[index].text for index in sorted(candidate.facets)],
                "score": candidate.score,
            }
        )
    covered = {
        facet.text: [c.doc.locator for c in chosen.reads if index in c.facets]
        for index, facet in enumerate(facets)
    }
    omitted = {reason: chosen.omitted.get(reason, 0) for reason in select.REASONS}
    result: dict[str, Any] = {
        "algorithm": ALGORITHM,
        "stopwords": STOPWORDS_VERSION,
        "goal": goal,
        "commit": snapshot.commit_id,
        "facets": [facet.to_json() for facet in facets],
        "reads": reads,
        "coverage": {
            "complete": not chosen.gaps,
            "facets": {name: locators for name, locators in covered.items() if locators},
            "unresolved": [
                {"facet": facets[index].text, "gap": gap}
                for index, gap in sorted(chosen.gaps.items())
            ],
        },
        "omissions": {
            "candidates": chosen.candidates,
            "selected": len(chosen.reads),
            "reasons": omitted,
        },
        "corpus": {
            "files": corpus.files,
            "bytes": corpus.bytes_read,
            "sections": len(corpus.docs),
            "skipped": dict(sorted(corpus.skipped.items())),
            "bounds": asdict(bounds),
        },
        "limits": {"max_reads": limit, "per_file": max(1, -(-limit // 2))},
    }
    if built is not None:
        result["capsule"] = {
            "packet": draft.packet_path,
            "bytes": len(built.data),
            "estimated_tokens": built.estimated_tokens,
            "target_tokens": built.limits.target_tokens,
            "target_source": built.limits.target_source,
            "hard_limit_tokens": built.limits.hard_limit_tokens,
            "reserve_tokens": built.limits.reserve_tokens,
        }
    else:
        assert fit.error is not None
        result["capsule"] = {"packet": draft.packet_path, "error": fit.error.to_json()["error"]}
    return result
