"""Whether suggested reads fit the budget, as the real builder computes it: the
draft packet and its context are laid over the commit in memory (nothing is
written), and ``build_capsule`` runs on them, fixpoint and all."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import pygit2

from governance.authoring.corpus import Doc
from governance.authoring.template import Draft
from governance.core import budget, canonical
from governance.core.builder import Built, build_capsule
from governance.core.cache import BlobCache
from governance.core.locator import check_path
from governance.core.repository import Source
from governance.core.snapshot import MODE_FILE, Snapshot
from governance.errors import INTERNAL_ERROR, BudgetError, CapsuleError

# Within this many bytes of a limit, the builder itself decides.
_MARGIN = 64


@dataclass
class Overlay(Snapshot):
    """A snapshot with some files replaced or added, in memory only."""

    files: dict[str, bytes] = field(default_factory=dict, repr=False)
    _blobs: dict[str, bytes] = field(default_factory=dict, repr=False)

    @classmethod
    def over(cls, snapshot: Snapshot) -> Overlay:
        return cls(
            repo=snapshot.repo,
            tree=snapshot.tree,
            commit_id=snapshot.commit_id,
            label=snapshot.label,
            cache=BlobCache(),
        )

    def put(self, path: str, data: bytes) -> None:
        self.files[path] = data
        self._blobs[str(pygit2.hash(data))] = data

    def source(self, path: str, *, locator: str | None = None) -> Source:
        data = self.files.get(path)
        if data is None:
            return super().source(path, locator=locator)
        check_path(path, locator=locator)
        return Source(path=path, blob_id=str(pygit2.hash(data)), mode=MODE_FILE)

    def size(self, source: Source) -> int:
        data = self._blobs.get(source.blob_id)
        return len(data) if data is not None else super().size(source)

    def read(self, source: Source) -> bytes:
        data = self._blobs.get(source.blob_id)
        return data if data is not None else super().read(source)

    def check_worktree(self, source: Source, *, locator: str | None = None) -> None:
        # A suggestion reads the commit: the working tree plays no part.
        return


def _escaped(text: str) -> int:
    """Bytes ``text`` takes as a canonical JSON string, quotes excluded."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8")) - 2


def _digits(n: int) -> int:
    return len(str(n))


class BudgetFit:
    """The reads chosen so far, and whether one more fits."""

    def __init__(self, snapshot: Snapshot, draft: Draft) -> None:
        self.draft = draft
        self.overlay = Overlay.over(snapshot)
        self.reads: list[Doc] = []
        self._json: dict[int, int] = {}
        self.error: BudgetError | None = None
        self.builds = 0
        try:
            base = self.build([])
        except BudgetError as exc:
            # The packet and its context alone do not fit: nothing can be added.
            self.error = exc
            self.base_bytes = -1
            return
        self.limits = base.limits
        self.max_reads = base.policy.max_required_reads
        self.max_heading_source_bytes = base.policy.max_heading_source_bytes
        self.max_heading_count = base.policy.max_heading_count
        self.base_bytes = len(base.data)
        self._base_packet = _escaped(draft.packet_text([]))
        self._base_digits = _digits(self.base_bytes) + _digits(
            budget.estimate_tokens(len(base.data))
        )
        self._size = self.base_bytes

    def build(self, reads: Sequence[Doc]) -> Built:
        """The real build of the draft with ``reads``."""
        self.overlay.put(
            self.draft.packet_path,
            self.draft.packet_text([doc.locator for doc in reads]).encode("utf-8"),
        )
        self.overlay.put(self.draft.context_path, self.draft.context_text().encode("utf-8"))
        self.builds += 1
        # Sizes only: the scan is the real build's, of the packet written.
        return build_capsule(self.overlay, self.draft.packet_path, scan_secrets=False)

    def _read_json(self, doc: Doc) -> int:
        """Bytes the builder's JSON of ``doc`` takes in ``reads`` (exact: the hashes
        have fixed lengths)."""
        key = id(doc)
        size = self._json.get(key)
        if size is None:
            heading = None
            if doc.heading is not None:
                heading = {
                    "slug": doc.heading.slug,
                    "text": doc.heading.text,
                    "level": doc.heading.level,
                }
            part = {
                "locator": doc.locator,
                "path": doc.path,
                "heading": heading,
                "lines": [doc.first_line, doc.last_line],
                "blob": doc.blob_id,
                "source_sha256": "0" * 64,
                "selected_sha256": "0" * 64,
                "text": doc.text,
            }
            size = len(canonical.dumps(part)) - 1
            self._json[key] = size
        return size

    def estimate(self, reads: Sequence[Doc]) -> int:
        """The capsule's bytes with ``reads``, computed without building."""
        packet = _escaped(self.draft.packet_text([doc.locator for doc in reads]))
        content = (
            self.base_bytes
            - self._base_digits
            + packet
            - self._base_packet
            + sum(self._read_json(doc) for doc in reads)
            + max(len(reads) - 1, 0)
        )
        n = content
        for _ in range(8):
            after = content + _digits(n) + _digits(budget.estimate_tokens(n))
            if after == n:
                break
            n = after
        return n

    def _fits_bytes(self, n_bytes: int) -> bool:
        return self.limits.fits(budget.estimate_tokens(n_bytes))

    def might_fit(self, doc: Doc) -> bool:
        # A lower bound: the read adds at least its own text's bytes.
        return self.error is None and self._fits_bytes(self._size + doc.n_bytes)

    def fits(self, doc: Doc) -> bool:
        if self.error is not None:
            return False
        n = self.estimate([*self.reads, doc])
        if self._fits_bytes(n + _MARGIN):
            return True
        if not self._fits_bytes(n - _MARGIN):
            return False
        try:
            self.build([*self.reads, doc])
        except BudgetError:
            return False
        return True

    def add(self, doc: Doc) -> None:
        self.reads.append(doc)
        self._size = self.estimate(self.reads)

    def confirm(self) -> Built | None:
        """The real build of the chosen reads (None when even no reads fit)."""
        if self.error is not None:
            return None
        try:
            return self.build(self.reads)
        except CapsuleError as exc:
            raise CapsuleError(
                f"internal error: the suggested reads do not build ({exc.code}: {exc.message})",
                code=INTERNAL_ERROR,
            ) from exc
