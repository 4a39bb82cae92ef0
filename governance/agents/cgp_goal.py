"""Goal queries: the heading sections ``capsule suggest`` proposes for a goal at
HEAD, as ``doc`` frames, and their verdicts.

A suggested frame is not a capsule part: its id names the commit and the
locator (``capsule-suggest:<commit>/<locator>``), and verify selects that
locator again at HEAD and compares the bytes.
"""

from __future__ import annotations

import re
from typing import Any

import pygit2

from governance.agents.cgp_frames import GONE, UNKNOWN, Part, frame, judge
from governance.authoring.suggest import Options, suggest
from governance.authoring.template import Draft
from governance.core.excerpt import Excerpt, check_heading_count, check_heading_source, select
from governance.core.locator import parse_locator
from governance.core.policy import heading_limits
from governance.core.snapshot import Snapshot
from governance.errors import (
    HEADING_AMBIGUOUS,
    HEADING_MISSING,
    SOURCE_MISSING,
    SOURCE_NOT_FILE,
    SOURCE_SYMLINK,
    CapsuleError,
)

_GONE = {SOURCE_MISSING, HEADING_MISSING, HEADING_AMBIGUOUS, SOURCE_NOT_FILE, SOURCE_SYMLINK}
_FRAME_ID = re.compile(r"capsule-suggest:(?P<commit>[0-9a-f]{40}(?:[0-9a-f]{24})?)/(?P<locator>.+)")


def _selected(snapshot: Snapshot, locator: str) -> tuple[Excerpt, bytes]:
    """The excerpt ``locator`` selects at ``snapshot``, and its whole blob,
    bounded as a build's heading read is (a frame id to verify is a client's)."""
    selector = parse_locator(locator)
    source = snapshot.source(selector.path, locator=locator)
    limits = heading_limits(snapshot)
    check_heading_source(snapshot, selector, source, limits.source_bytes)
    check_heading_count(snapshot, selector, source, limits.headings)
    data = snapshot.read(source)
    return select(selector, source, data), data


def _excerpt(snapshot: Snapshot, locator: str) -> Excerpt:
    return _selected(snapshot, locator)[0]


def goal_frames(repo: pygit2.Repository, snapshot: Snapshot, goal: str) -> list[dict[str, Any]]:
    """The sections suggest proposes for ``goal`` at ``snapshot``, best first;
    ``score`` is each one's suggest score over the best one's."""
    result = suggest(snapshot, Draft.make(goal, snapshot.commit_id), Options())
    reads = result["reads"]
    best = max((read["score"] for read in reads), default=0) or 1
    commit = repo[snapshot.commit_id]
    assert isinstance(commit, pygit2.Commit)
    frames = []
    for read in reads:
        excerpt, data = _selected(snapshot, read["locator"])
        title = f"{read['heading']} ({read['path']})" if read["heading"] else read["locator"]
        lines = (excerpt.first_line, excerpt.last_line)
        part = Part("", read["locator"], read["path"], title, excerpt.text, lines)
        made = frame(
            part,
            packet="",
            commit=commit,
            uri=f"capsule://commits/{snapshot.commit_id}/{read['path']}",
            score=min(1.0, max(0.0, read["score"] / best)),
            method="capsule-suggest",
            worktree=repo.workdir,
            source=data,
        )
        made["id"] = f"capsule-suggest:{snapshot.commit_id}/{read['locator']}"
        frames.append(made)
    return frames


def is_goal_frame(frame_id: str) -> bool:
    return frame_id.startswith("capsule-suggest:")


def goal_verdict(
    repo: pygit2.Repository, now: Snapshot, identity: dict[str, Any]
) -> dict[str, Any]:
    """Select the frame's locator at its commit (so the id names a section we
    could have served) and at HEAD: the held digest against the bytes there is
    valid or stale, a file or heading gone is gone; anything this provider
    cannot vouch for is unknown."""
    answer: dict[str, Any] = {"frame": identity, "status": UNKNOWN}
    match = _FRAME_ID.fullmatch(str(identity.get("frame_id", "")))
    held = identity.get("content_digest")
    if match is None or not held:
        return answer
    try:
        _excerpt(Snapshot.at(repo, match["commit"], check_worktree=False), match["locator"])
    except CapsuleError:
        return answer
    try:
        current = _excerpt(now, match["locator"])
    except CapsuleError as exc:
        # The file or heading is not there (any more): gone. Anything else
        # (a blob missing from a partial clone, ...) says nothing about it.
        if exc.code in _GONE:
            answer["status"] = GONE
        return answer
    return judge(answer, held, f"sha256:{current.selected_sha256}")
