"""The record behind an anchored CGP query, as provenance entries each of the
packet's frames carries: its signature's status when HEAD lists allowed
signers.

The envelope schema closes a ``verified`` verdict (``frame``, ``status``,
``replacement_digest``) and a query's result, so what the protocol has no
member for travels where it has one: a frame's ``provenance``, a list of
typed origin entries (``type``, ``uri``, ``range``, ``digest``, ``method``,
``by``), which a host that knows only ``file`` entries skips. The record is
the packet's newest at HEAD, as ``capsule status`` picks it.
"""

from __future__ import annotations

from typing import Any

import pygit2

from governance.core.cache import BlobCache
from governance.history.record_signature import ERROR, signature_at
from governance.history.records import signature_path
from governance.history.status import packet_record

SIGNATURE = "signature"
SIGNATURE_METHOD = "ssh-signature:"


def record_entries(
    repo: pygit2.Repository, packet: str, *, cache: BlobCache | None = None
) -> list[dict[str, Any]]:
    """The provenance entries of ``packet``'s newest record at HEAD; none when
    it has no record. ``signature``: ``uri`` the ``.sig``'s place at HEAD,
    ``digest`` its bytes' when there is one, ``method`` ``ssh-signature:`` and
    the status (``signed``, ``unsigned``, ``bad_signature``, ...; ``error:``
    and the code when the check could not run), ``by`` who signed, when known;
    only when HEAD has ``policies/allowed_signers``."""
    found = packet_record(repo, packet, cache=cache)
    if found is None:
        return []
    row, data = found
    head = str(repo.head.target)
    pinned = f"capsule://commits/{head}/"
    result: list[dict[str, Any]] = []
    signature = signature_at(repo, data, row.path, row.commit) if data is not None else None
    if signature is not None:
        entry: dict[str, Any] = {"type": SIGNATURE, "uri": pinned + signature_path(row.path)}
        if signature.signature_sha256 is not None:
            entry["digest"] = f"sha256:{signature.signature_sha256}"
        status = signature.status
        if status == ERROR:
            status = f"{ERROR}:{signature.code}"
        entry["method"] = SIGNATURE_METHOD + status
        if signature.principal is not None:
            entry["by"] = signature.principal
        result.append(entry)
    return result
