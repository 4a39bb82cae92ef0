"""``capsule new``: write packets/<ID>/packet.yml and context.md from a suggestion,
never over an existing file."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from governance.authoring.suggest import Options, suggest
from governance.authoring.template import Draft
from governance.core.packet import parse_packet
from governance.core.paths import refuse_linked_folders
from governance.core.schema import load_schema
from governance.core.snapshot import Snapshot
from governance.errors import FILE_EXISTS, INVALID_PACKET_ID, UsageError


def check_id(packet_id: str) -> str:
    """The packet schema's own id rule (its pattern, anchored, and its length)."""
    rule = load_schema("packet")["$defs"]["packet_id"]
    pattern = rule["pattern"].removeprefix("^").removesuffix("$")
    if len(packet_id) > rule.get("maxLength", len(packet_id)) or not re.fullmatch(
        pattern, packet_id
    ):
        raise UsageError(
            f"{packet_id!r}: a packet id is runs of letters and digits joined by single '.', "
            f"'_' or '-', at most {rule.get('maxLength')} characters (as packets/<ID>/ names "
            "it)",
            code=INVALID_PACKET_ID,
            id=packet_id,
        )
    return packet_id


@dataclass(frozen=True)
class Written:
    packet_path: str
    context_path: str
    suggestion: dict[str, Any]


def new_packet(snapshot: Snapshot, workdir: Path, draft: Draft, options: Options) -> Written:
    """Suggest reads for ``draft`` and write its two files under ``workdir``.
    Fails with ``file_exists`` (naming the file) before writing anything when
    either exists."""
    check_id(draft.id)
    for rel in (draft.packet_path, draft.context_path):
        refuse_linked_folders(rel, base=os.fspath(workdir))
    for rel in (draft.packet_path, draft.context_path):
        if os.path.lexists(workdir / rel):
            raise UsageError(
                f"{rel} already exists; capsule new never overwrites a file (pick another id, "
                "or edit it by hand)",
                code=FILE_EXISTS,
                path=rel,
            )
    result = suggest(snapshot, draft, options)
    reads = [read["locator"] for read in result["reads"]]
    packet_text = draft.packet_text(reads)
    # What is written must be a packet the builder accepts.
    parse_packet(packet_text, path=draft.packet_path)
    folder = workdir / draft.folder
    folder.mkdir(parents=True, exist_ok=True)
    _create(workdir / draft.packet_path, packet_text.encode("utf-8"), draft.packet_path)
    _create(workdir / draft.context_path, draft.context_text().encode("utf-8"), draft.context_path)
    return Written(draft.packet_path, draft.context_path, result)


def _create(target: Path, data: bytes, shown: str) -> None:
    # O_EXCL: a file that appeared since the check above is still never overwritten.
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        raise UsageError(
            f"{shown} already exists; capsule new never overwrites a file",
            code=FILE_EXISTS,
            path=shown,
        ) from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
