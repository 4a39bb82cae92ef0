"""Which records replay by the rules they were built under, from before
capsule/1's limits were the ADR's (``core/adr``): those whose declared commit
was committed before ``ADR_LIMITS_SINCE``.

A record's bytes are history: one built under a policy that loosened a limit
was the builder's output then, and its replay rebuilds the same bytes by the
same rules. A record whose declared commit's committer date is on or after
the cutoff is new, and its replay refuses a loosened limit
(``loosens_adr_limit``), as build, check and the hooks do. The date is the
committer's own word, so this separates old from new for honest histories;
what keeps a loosened policy out of new work is build, check and the hooks,
which judge the policy itself, whatever its date (docs/history.md).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pygit2

# When git-capsule began to enforce the ADR's limits.
ADR_LIMITS_SINCE = datetime(2026, 12, 2, 18, 0, 0, tzinfo=UTC)
_SINCE = int(ADR_LIMITS_SINCE.timestamp())


def predates_adr_limits(commit: pygit2.Commit) -> bool:
    """Whether a record declaring ``commit`` replays without the ADR's limits."""
    return commit.commit_time < _SINCE
