"""What a command says on stderr of the secret scan: that it could not run
(``secret_scan_unavailable``), and each hit a waiver accepted."""

from __future__ import annotations

from typing import Any

from governance.errors import SECRET_SCAN_UNAVAILABLE
from governance.output import err


def unscanned_line(prog: str, what: str, reason: str) -> str:
    """The warning that ``what`` was built without the secret scan, and why."""
    return f"{prog}: warning [{SECRET_SCAN_UNAVAILABLE}]: {what} not scanned for secrets: {reason}"


def scan_lines(packet_path: str, status: dict[str, Any] | None, prog: str = "capsule") -> None:
    """The scan's lines for one build: the warning when nothing was scanned,
    and one note per waived hit (its part, line, kind and the waiver's reason)."""
    if status is None:
        return
    if not status["scanned"]:
        err(unscanned_line(prog, f"{packet_path} was", status["unavailable"]))
        return
    for hit in status["waived"]:
        err(
            f"{prog}: {packet_path}: {hit['part']}: line {hit['line']} ({hit['kind']}) waived by "
            f"policies/secret-waivers.yml waiver {hit['waiver']}: {hit['reason']}"
        )
