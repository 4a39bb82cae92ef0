"""Audit ranges: ``REV`` or ``A..B``, resolved to commits."""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from governance.core.snapshot import resolve_commit
from governance.errors import INVALID_RANGE, UsageError


@dataclass(frozen=True)
class Range:
    """Commits reachable from ``tip`` and not from ``hidden``; none at all when
    ``tip`` is None (HEAD of a repository without commits)."""

    spec: str
    tip: str | None
    hidden: str | None


def parse_range(repo: pygit2.Repository, spec: str | None) -> Range:
    """``REV`` (all of its history) or ``A..B`` (reachable from B, not from A), each
    side HEAD, a full commit id or a unique hex prefix, like ``--at``."""
    if spec is None:
        spec = "HEAD"
    if spec == "HEAD" and repo.head_is_unborn:
        # No commits, so no records: an empty audit, not an error.
        return Range(spec, None, None)
    if ".." in spec:
        base, _, tip = spec.partition("..")
        if not base or not tip or tip.startswith("."):
            raise UsageError(
                f"{spec!r}: a range is A..B with both ends given (HEAD, a full commit id or "
                "a unique hex prefix); A...B is refused",
                code=INVALID_RANGE,
                range=spec,
            )
        return Range(spec, str(resolve_commit(repo, tip).id), str(resolve_commit(repo, base).id))
    return Range(spec, str(resolve_commit(repo, spec).id), None)
