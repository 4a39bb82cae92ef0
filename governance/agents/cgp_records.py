"""The record behind an anchored CGP query, as provenance entries each of the
packet's frames carries: the record and its ``capsule status`` against HEAD,
and its signature's status when HEAD lists allowed signers.

The envelope schema closes a ``verified`` verdict (``frame``, ``status``,
``replacement_digest``) and a query's result, so what the protocol has no
member for travels where it has one: a frame's ``provenance``, a list of
typed origin entries (``type``, ``uri``, ``range``, ``digest``, ``method``,
``by``), which a host that knows only ``file`` entries skips. The record is
the one a record anchor (``capsule://packets/<ID>/capsules/<name>.json``)
names, or the packet's newest at HEAD, as ``capsule status`` picks it.
"""

from __future__ import annotations

import re
from typing import Any

import pygit2

from governance import errors
from governance.core.cache import BlobCache
from governance.errors import SourceError
from governance.history.record_signature import ERROR, signature_at
from governance.history.records import RECORDS_FOLDER, signature_path
from governance.history.status import ERROR as STATUS_ERROR
from governance.history.status import packet_record

RECORD = "record"
SIGNATURE = "signature"
STATUS_METHOD = "capsule-status:"
SIGNATURE_METHOD = "ssh-signature:"
PROVIDER = "git-capsule"

# Exactly the record names ``build --record`` writes.
_RECORD_ANCHOR = re.compile(
    rf"capsule://packets/(?P<packet>[A-Za-z0-9][A-Za-z0-9._-]{{0,63}})/{RECORDS_FOLDER}/"
    r"(?P<name>[0-9a-f]{12}\.json)"
)


def record_anchor(anchor: str) -> tuple[str, str] | None:
    """``capsule://packets/<ID>/capsules/<12 hex>.json`` -> (``<ID>``, the
    record's repository path); None for any other anchor."""
    match = _RECORD_ANCHOR.fullmatch(anchor)
    if match is None:
        return None
    return match["packet"], f"packets/{match['packet']}/{RECORDS_FOLDER}/{match['name']}"


def record_entries(
    repo: pygit2.Repository,
    packet: str,
    *,
    record: str | None = None,
    cache: BlobCache | None = None,
) -> list[dict[str, Any]]:
    """The provenance entries of the record ``record`` (a path), or of
    ``packet``'s newest record at HEAD; none when it has no record, and
    ``source_missing`` when ``record`` is not there.

    ``record``: ``uri`` the record at HEAD, ``digest`` its bytes' (when it
    could be read), ``method`` ``capsule-status:`` and its status against HEAD
    (``unchanged``, ``intact``, ``stale``, ``missing``; ``error:`` and the code
    when it could not be judged). ``signature``, only when HEAD has
    ``policies/allowed_signers``: ``uri`` the ``.sig``'s place at HEAD,
    ``digest`` its bytes' when there is one, ``method`` ``ssh-signature:`` and
    the status (``signed``, ``unsigned``, ``bad_signature``, ...; ``error:``
    and the code when the check could not run), ``by`` who signed, when known."""
    found = packet_record(repo, packet, record=record, cache=cache)
    if found is None:
        if record is not None:
            raise SourceError(
                f"{record}: no such record at HEAD", code=errors.SOURCE_MISSING, path=record
            )
        return []
    row, data = found
    pinned = f"capsule://commits/{repo.head.target}/"
    entry: dict[str, Any] = {"type": RECORD, "uri": pinned + row.path}
    if row.sha256 is not None:
        entry["digest"] = f"sha256:{row.sha256}"
    status = row.status
    if status == STATUS_ERROR and row.error is not None:
        status = f"{STATUS_ERROR}:{row.error.code}"
    entry["method"] = STATUS_METHOD + status
    entry["by"] = PROVIDER
    result = [entry]
    signature = signature_at(repo, data, row.path, row.commit) if data is not None else None
    if signature is not None:
        signed: dict[str, Any] = {"type": SIGNATURE, "uri": pinned + signature_path(row.path)}
        if signature.signature_sha256 is not None:
            signed["digest"] = f"sha256:{signature.signature_sha256}"
        status = signature.status
        if status == ERROR:
            status = f"{ERROR}:{signature.code}"
        signed["method"] = SIGNATURE_METHOD + status
        if signature.principal is not None:
            signed["by"] = signature.principal
        result.append(signed)
    return result
