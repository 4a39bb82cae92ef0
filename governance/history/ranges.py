"""Audit ranges: ``REV`` or ``A..B``, each end resolved to one commit.

An end is ``HEAD``, a full commit id, a unique hex prefix (as for ``--at``),
or the name of a branch, a remote-tracking branch or a tag (``main``,
``origin/main``, ``v1.0``, or in full, ``refs/remotes/origin/main``). A name
that two of those would resolve, or that is also a commit's hex prefix, is
refused as ambiguous; rev expressions (``HEAD~2``, ``main^``, ``@{u}``) are
refused. The range keeps what each end resolved to, so the audit can say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pygit2

from governance.core.repository import resolve_commit
from governance.errors import INVALID_RANGE, INVALID_REVISION, UsageError

_HEX = re.compile(r"[0-9a-fA-F]{4,40}|[0-9a-fA-F]{64}")
# Where a short name is looked for, in git's own order of preference.
_NAMESPACES = ("refs/heads/", "refs/remotes/", "refs/tags/")


@dataclass(frozen=True)
class End:
    """One end of a range as given, the commit it resolved to, and the full
    ref name when it was a name (None for HEAD and commit ids)."""

    spec: str
    commit: str
    ref: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"spec": self.spec, "commit": self.commit, "ref": self.ref}

    def shown(self) -> str:
        """``origin/main`` is ``1a2b3c4d5e6f`` (refs/remotes/origin/main)."""
        named = f" ({self.ref})" if self.ref is not None and self.ref != self.spec else ""
        return f"{self.spec} is {self.commit[:12]}{named}"


@dataclass(frozen=True)
class Range:
    """Commits reachable from ``tip`` and not from ``hidden``; none at all when
    ``tip`` is None (HEAD of a repository without commits)."""

    spec: str
    tip: str | None
    hidden: str | None
    ends: tuple[End, ...] = ()

    @property
    def named(self) -> bool:
        """Whether an end was a ref name (then the audit says what it resolved to)."""
        return any(end.ref is not None for end in self.ends)


def _refs(repo: pygit2.Repository, name: str) -> list[pygit2.Reference]:
    candidates = [name] if name.startswith("refs/") else [f"{ns}{name}" for ns in _NAMESPACES]
    found = []
    for candidate in candidates:
        if not pygit2.reference_is_valid_name(candidate):
            continue
        ref = repo.references.get(candidate)
        if ref is not None:
            found.append(ref)
    return found


def resolve_end(repo: pygit2.Repository, spec: str) -> End:
    """One end of a range: HEAD, a commit id or prefix, or a branch, remote or tag name."""
    if spec == "HEAD":
        return End(spec, str(resolve_commit(repo, spec).id))
    refs = _refs(repo, spec)
    if _HEX.fullmatch(spec):
        try:
            commit = str(resolve_commit(repo, spec).id)
        except UsageError:
            if not refs:
                raise
        else:
            if refs:
                raise UsageError(
                    f"{spec!r} is ambiguous: a commit prefix ({commit[:12]}) and {refs[0].name}; "
                    "give the full commit id, or the ref in full (refs/...)",
                    code=INVALID_REVISION,
                    revision=spec,
                )
            return End(spec, commit)
    if not refs:
        raise UsageError(
            f"{spec!r}: not HEAD, a commit id, a unique hex prefix, or the name of a branch, "
            "remote-tracking branch or tag (rev expressions such as HEAD~2 are refused)",
            code=INVALID_REVISION,
            revision=spec,
        )
    if len(refs) > 1:
        names = " and ".join(ref.name for ref in refs)
        raise UsageError(
            f"{spec!r} is ambiguous: {names}; give the one you mean in full",
            code=INVALID_REVISION,
            revision=spec,
        )
    ref = refs[0]
    try:
        peeled = ref.peel(pygit2.Commit)
    except (pygit2.GitError, pygit2.InvalidSpecError, ValueError, KeyError):
        raise UsageError(
            f"{spec!r}: {ref.name} does not name a commit", code=INVALID_REVISION, revision=spec
        ) from None
    return End(spec, str(peeled.id), ref.name)


def parse_range(repo: pygit2.Repository, spec: str | None) -> Range:
    """``REV`` (all of its history) or ``A..B`` (reachable from B, not from A)."""
    if spec is None:
        spec = "HEAD"
    if spec == "HEAD" and repo.head_is_unborn:
        # No commits, so no records: an empty audit, not an error.
        return Range(spec, None, None)
    if ".." in spec:
        base, _, tip = spec.partition("..")
        if not base or not tip or tip.startswith("."):
            raise UsageError(
                f"{spec!r}: a range is A..B with both ends given (HEAD, a commit id or prefix, "
                "or a branch, remote or tag name); A...B is refused",
                code=INVALID_RANGE,
                range=spec,
            )
        hidden, shown = resolve_end(repo, base), resolve_end(repo, tip)
        return Range(spec, shown.commit, hidden.commit, (hidden, shown))
    end = resolve_end(repo, spec)
    return Range(spec, end.commit, None, (end,))
