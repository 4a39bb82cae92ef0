"""Where the builder's failures go: raised at once by build, collected in
packet order by check."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from governance.core.excerpt import Excerpt
    from governance.core.packet import Packet
    from governance.core.secretscan import Scan
    from governance.errors import CapsuleError


class Failures:
    """Where the builder's failures go. ``build`` stops at the first one;
    ``check`` keeps going wherever the remaining steps still make sense, and
    reports them in packet order (``rank``), not in the order it met them."""

    def __init__(self, *, collect: bool) -> None:
        self.collect = collect
        self._found: list[tuple[int, int, CapsuleError]] = []
        # Every read selected, for the overlap warnings of a check.
        self.excerpts: list[Excerpt] = []
        # The secret scan, once its waivers are read.
        self.scan: Scan | None = None
        # The packet, once parsed: what a check of its dependencies reads.
        self.packet: Packet | None = None

    def add(self, error: CapsuleError | None, rank: int = 0) -> None:
        """Record ``error`` (``None``, as a scan that found nothing gives, adds
        nothing), or raise it when not collecting."""
        if error is None:
            return
        if not self.collect:
            raise error
        self._found.append((rank, len(self._found), error))

    @property
    def errors(self) -> list[CapsuleError]:
        return [error for _, _, error in sorted(self._found, key=lambda f: f[:2])]

    @property
    def first(self) -> CapsuleError | None:
        """The failure met first: the one ``build`` raises."""
        return self._found[0][2] if self._found else None
