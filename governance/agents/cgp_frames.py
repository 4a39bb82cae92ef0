"""A capsule's parts as Context Graph Protocol ``doc`` frames, and CGP
verdicts from ``capsule verify``: the provider's data, without its wire.

A frame is one text part of the capsule of a packet built at a commit: the
packet, its context, or one read. Its id names the packet, the commit and
the part (``capsule:GC-003@<commit>/reads/0``), so a later ``verify`` can
rebuild exactly that capsule and run ``capsule verify`` on it.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pygit2

from governance.core.builder import Built, build_capsule
from governance.core.capsule import FULL_COMMIT_PATTERN, packet_path
from governance.core.headings import line_count
from governance.core.reader import CapsuleFile
from governance.core.snapshot import Snapshot
from governance.core.verify import verify_capsule
from governance.errors import CapsuleError

PROVIDER_NAME = "git-capsule"
PACKET_ANCHOR = "capsule://packets/"
BYTES_PER_TOKEN = 4  # the protocol's budget unit (B3), not the capsule's bytes/3

_FRAME_ID = re.compile(
    r"capsule:(?P<packet>[A-Za-z0-9][A-Za-z0-9._-]{0,63})"
    rf"@(?P<commit>{FULL_COMMIT_PATTERN})"
    r"/(?P<part>packet|context|reads/(?:0|[1-9][0-9]{0,5}))"
)
_PACKET_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def token_cost(content: str) -> int:
    """``ceil(utf8_byte_length(content) / 4)`` exactly (SPEC B3)."""
    return math.ceil(len(content.encode("utf-8")) / BYTES_PER_TOKEN)


def digest(data: bytes | str) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def timestamp(commit: pygit2.Commit) -> str:
    """The commit's committer time in the protocol's UTC profile (F4):
    deterministic, the same for every query at that commit."""
    return datetime.fromtimestamp(commit.commit_time, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def line_range(first: int, last: int) -> str:
    """``L<first>-<last>``: 1-based, inclusive, a line ending at LF, CRLF or a
    lone CR (the capsule's own line rule), the last line with or without one."""
    return f"L{first}-{last}"


def packet_id_of(anchor: str) -> str | None:
    """``capsule://packets/<ID>`` (or with a trailing ``/``) -> ``<ID>``."""
    if not anchor.startswith(PACKET_ANCHOR):
        return None
    name = anchor.removeprefix(PACKET_ANCHOR).rstrip("/")
    return name if _PACKET_ID.fullmatch(name) else None


@dataclass(frozen=True)
class Part:
    """One part of a capsule document, as a frame needs it."""

    name: str  # packet, context, reads/<i>
    locator: str
    path: str
    title: str
    text: str
    lines: tuple[int, int] | None  # None: an empty file has no line range


def parts(document: dict[str, Any]) -> list[Part]:
    """Every text part of a capsule, in capsule order: packet, context, reads."""
    found: list[Part] = []
    # The policy part holds values, not text: an agent is never handed its bytes.
    for name in ("packet", "context"):
        whole = document[name]
        count = line_count(whole["text"].encode("utf-8"))
        lines = (1, count) if count else None
        found.append(Part(name, whole["path"], whole["path"], whole["path"], whole["text"], lines))
    for index, read in enumerate(document["reads"]):
        heading = read["heading"]
        title = f"{heading['text']} ({read['path']})" if heading and heading["text"] else ""
        first, last = read["lines"]
        found.append(
            Part(
                f"reads/{index}",
                read["locator"],
                read["path"],
                title or read["locator"],
                read["text"],
                (first, last) if last >= first else None,
            )
        )
    return found


def file_uri(worktree: str, path: str) -> str:
    """``file://`` and the work tree path, percent-encoded (RFC 8089, 3986)."""
    absolute = os.fsencode(os.path.join(worktree, path))
    return "file://" + urllib.parse.quote(absolute, safe="/")


def on_disk(worktree: str, part: Part, source: bytes, method: str) -> dict[str, Any]:
    """The ``file`` provenance a host on this machine re-reads: the work tree
    path and the part's range, with the digest of the bytes it names at the
    served commit, so it matches the disk while the work tree holds that
    commit's file. A host ends lines at LF only (SPEC 6.2 fixes no rule; the
    reference host's does that): in a file with a lone CR, whose lines the
    capsule counts otherwise, it names the whole file and digests the whole
    blob instead, rather than a range a host would read as other bytes."""
    provenance: dict[str, Any] = {"type": "file", "uri": file_uri(worktree, part.path)}
    if source.count(b"\r") != source.count(b"\r\n"):
        provenance["digest"] = digest(source)
    else:
        provenance["digest"] = digest(part.text)
        if part.lines is not None:
            provenance["range"] = line_range(*part.lines)
    provenance["method"] = method
    provenance["by"] = PROVIDER_NAME
    return provenance


def frame(
    part: Part,
    *,
    packet: str,
    commit: pygit2.Commit,
    uri: str,
    score: float,
    method: str,
    worktree: str | None,
    source: bytes,
) -> dict[str, Any]:
    """One ``doc`` frame: exact content, its digest, and two ``file``
    provenances: the work tree's ``file://`` path a host re-reads (none in a
    bare repository), then ``capsule://commits/<commit>/<path>``, the bytes'
    identity at the commit they were served from. ``source`` is the whole
    blob the part comes from."""
    commit_id = str(commit.id)
    pinned: dict[str, Any] = {
        "type": "file",
        "uri": f"capsule://commits/{commit_id}/{part.path}",
        "digest": digest(part.text),
    }
    if part.lines is not None:
        pinned["range"] = line_range(*part.lines)
    pinned["method"] = method
    pinned["by"] = PROVIDER_NAME
    provenance = [pinned] if worktree is None else [on_disk(worktree, part, source, method), pinned]
    label = part.locator if part.lines is None else f"{part.locator} {pinned['range']}"
    when = timestamp(commit)
    return {
        "id": f"capsule:{packet}@{commit_id}/{part.name}",
        "kind": "doc",
        "title": part.title,
        "content": part.text,
        "content_digest": digest(part.text),
        "uri": uri,
        "score": score,
        "token_cost": token_cost(part.text),
        "valid_from": when,
        "recorded_at": when,
        "provenance": provenance,
        "citation_label": label,
    }


def head(repo: pygit2.Repository) -> Snapshot:
    """The committed tree at HEAD: frames are served from commits only, never
    from the working tree."""
    return Snapshot.at(repo, "HEAD", check_worktree=False)


def as_of(repo: pygit2.Repository, seconds: int) -> Snapshot | None:
    """The committed tree of the last commit at or before ``seconds`` (Unix
    time, committer time) on HEAD's first-parent line, which is what the branch
    held then; None when every commit of that line is later. One walk, as long
    as that line is."""
    now = head(repo)
    commit = repo[now.commit_id]
    assert isinstance(commit, pygit2.Commit)
    while commit.commit_time > seconds:
        if not commit.parent_ids:
            return None
        commit = commit.parents[0]
    if str(commit.id) == now.commit_id:
        return now
    return Snapshot.at(repo, str(commit.id), check_worktree=False)


def packet_frames(repo: pygit2.Repository, snapshot: Snapshot, packet: str) -> list[dict[str, Any]]:
    """The frames of ``packet``'s capsule built at ``snapshot``'s commit; the
    builder's own error when it does not build there."""
    built = build_capsule(snapshot, packet_path(packet))
    commit = repo[snapshot.commit_id]
    assert isinstance(commit, pygit2.Commit)
    uri = PACKET_ANCHOR + packet
    worktree = repo.workdir
    return [
        frame(
            part,
            packet=packet,
            commit=commit,
            uri=uri,
            score=1.0,
            method="capsule-build",
            worktree=worktree,
            # Read again through the snapshot (its cache holds what the build read).
            source=snapshot.read(snapshot.source(part.path)) if worktree else b"",
        )
        for part in parts(built.document)
    ]


def fit(
    frames: Sequence[dict[str, Any]], max_frames: int, max_tokens: int
) -> tuple[list[dict[str, Any]], int]:
    """Whole frames, in order, within both limits (B1, B4); a frame that does not
    fit is dropped whole and later, smaller ones may still fit. Returns the
    frames kept and how many were dropped."""
    kept: list[dict[str, Any]] = []
    spent = 0
    for candidate in frames:
        cost = int(candidate["token_cost"])
        if len(kept) < max_frames and spent + cost <= max_tokens:
            kept.append(candidate)
            spent += cost
    return kept, len(frames) - len(kept)


# capsule verify's (status, code) -> the CGP verdict. Intact evidence (the
# selected bytes are identical, wherever they are now) is valid.
VALID = "valid"
STALE = "stale"
GONE = "gone"
UNKNOWN = "unknown"
VERDICTS = {
    ("unchanged", "verified_unchanged"): VALID,
    ("intact", None): VALID,
    ("stale", "source_changed"): STALE,
    ("stale", "passage_stale"): STALE,
    ("missing", None): GONE,
}


def verdict_for(status: str, code: str) -> str:
    return VERDICTS.get((status, code)) or VERDICTS.get((status, None)) or UNKNOWN


@dataclass
class Verifier:
    """Answers ``verify`` for frames this provider served, rebuilding each
    (packet, commit) capsule once per request."""

    repo: pygit2.Repository
    now: Snapshot
    _built: dict[tuple[str, str], Built | CapsuleError] | None = None

    def _capsule(self, packet: str, commit: str) -> Built | CapsuleError:
        if self._built is None:
            self._built = {}
        key = (packet, commit)
        if key not in self._built:
            try:
                snapshot = Snapshot.at(self.repo, commit, check_worktree=False)
                self._built[key] = build_capsule(snapshot, packet_path(packet))
            except CapsuleError as exc:
                self._built[key] = exc
        return self._built[key]

    def verdict(self, identity: dict[str, Any]) -> dict[str, Any]:
        """The held digest against the part's bytes now: the same is valid,
        other bytes stale (with the current digest), the part gone is gone.
        The provider_id is the host's name for this provider, whatever it is:
        the frame id alone names the part."""
        answer: dict[str, Any] = {"frame": identity, "status": UNKNOWN}
        match = _FRAME_ID.fullmatch(str(identity.get("frame_id", "")))
        held = identity.get("content_digest")
        if match is None or not held:
            return answer  # not one of our ids, or nothing to compare
        built = self._capsule(match["packet"], match["commit"])
        if isinstance(built, CapsuleError):
            return answer  # that capsule cannot be rebuilt here: we cannot say
        served = {p.name: p for p in parts(built.document)}
        part = served.get(match["part"])
        if part is None:
            return answer  # that capsule has no such part: never a frame of ours
        try:
            results = verify_capsule(CapsuleFile(built.data, built.document), self.now)
        except CapsuleError:
            return answer
        # verify names a read reads[<i>]; a frame id, reads/<i>.
        name = match["part"].replace("reads/", "reads[") + ("]" if "/" in match["part"] else "")
        (result,) = [r for r in results if r.part == name]
        status = verdict_for(result.status, result.code)
        if status == VALID:
            current: str | None = digest(part.text)  # the same bytes, wherever they are
        elif status == STALE:
            now = result.current.get("selected_sha256") or result.current.get("sha256")
            current = f"sha256:{now}" if now else None
        else:
            answer["status"] = status
            return answer
        if current is None:
            return answer
        return judge(answer, held, current)


def judge(answer: dict[str, Any], held: str, current: str) -> dict[str, Any]:
    """``valid`` when the host holds the bytes the part has now; otherwise
    ``stale`` with their digest (V1, V4): a digest we would not serve is, from
    here, exactly a source that changed under the host."""
    if held == current:
        answer["status"] = VALID
    else:
        answer["status"] = STALE
        answer["replacement_digest"] = current
    return answer
