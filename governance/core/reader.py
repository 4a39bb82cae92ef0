"""Reading a capsule file back: the pre-checks every consumer runs before it
reads a single source (verify, replay, audit, the records hook).

Readers are registered by ``schema``. The capsule/1 reader is kept for the life
of the format; a capsule/2 adds its own reader here and an explicit migration
(see docs/format.md), never a silent reinterpretation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from governance.core import canonical
from governance.core.budget import Limits, estimate_tokens
from governance.core.cache import BlobCache
from governance.core.capsule import (
    FULL_COMMIT,
    PACKET_FILE,
    PACKETS_DIR,
    POLICY_PATH,
    SCHEMA_V1,
    TRUST_V1,
    context_path,
    packet_id_of,
)
from governance.core.hashing import sha256_hex
from governance.core.headings import line_count
from governance.core.locator import check_path, parse_locator
from governance.core.schema import validate
from governance.errors import (
    CAPSULE_CORRUPT,
    CAPSULE_MALFORMED,
    CAPSULE_UNREADABLE,
    NON_CANONICAL,
    UNSUPPORTED_SCHEMA,
    MalformedInput,
    SourceError,
)


@dataclass(frozen=True)
class CapsuleFile:
    data: bytes
    document: dict[str, Any]

    @property
    def schema(self) -> str:
        return str(self.document["schema"])

    @property
    def sha256(self) -> str:
        return sha256_hex(self.data)

    @property
    def commit(self) -> str:
        return str(self.document["commit"])


def _corrupt(message: str, **details: Any) -> MalformedInput:
    return MalformedInput(f"capsule is corrupt: {message}", code=CAPSULE_CORRUPT, **details)


def _object_id(data: bytes, like: str) -> str:
    # Same object format as the recorded id: SHA-1 (40 hex) or SHA-256 (64 hex).
    algorithm = hashlib.sha256 if len(like) == 64 else hashlib.sha1
    return algorithm(b"blob %d\x00" % len(data) + data).hexdigest()


def _line_span(text: bytes) -> int:
    return line_count(text)


def _check_whole(part: dict[str, Any], name: str) -> None:
    data = part["text"].encode("utf-8")
    if sha256_hex(data) != part["sha256"]:
        raise _corrupt(f"{name}.sha256 does not match {name}.text", field=f"{name}.sha256")
    if _object_id(data, part["blob"]) != part["blob"]:
        raise _corrupt(f"{name}.blob does not match {name}.text", field=f"{name}.blob")


def _check_read(read: dict[str, Any], index: int) -> None:
    name = f"reads[{index}]"
    data = read["text"].encode("utf-8")
    if sha256_hex(data) != read["selected_sha256"]:
        raise _corrupt(
            f"{name}.selected_sha256 does not match {name}.text", field=f"{name}.selected_sha256"
        )

    try:
        selector = parse_locator(read["locator"])
    except SourceError as exc:
        raise _corrupt(f"{name}.locator: {exc.message}", field=f"{name}.locator") from None
    if selector.path != read["path"]:
        raise _corrupt(f"{name}.path does not match its locator", field=f"{name}.path")
    first, last = read["lines"]
    heading = read["heading"]
    if heading is None:
        if selector.slug is not None:
            raise _corrupt(f"{name} has a heading locator but no heading", field=f"{name}.heading")
        if selector.lines is not None:
            # A range holds the very lines its locator names.
            if [first, last] != list(selector.lines):
                raise _corrupt(
                    f"{name}.lines is not the range its locator names", field=f"{name}.lines"
                )
        elif selector.symbol is not None:
            pass  # which lines a definition spans, only its source can say
        elif read["source_sha256"] != read["selected_sha256"]:
            raise _corrupt(
                f"{name} reads a whole file but source_sha256 differs from selected_sha256",
                field=f"{name}.source_sha256",
            )
        elif _object_id(data, read["blob"]) != read["blob"]:
            raise _corrupt(f"{name}.blob does not match {name}.text", field=f"{name}.blob")
        elif first != 1:
            raise _corrupt(f"{name}.lines of a whole file must start at 1", field=f"{name}.lines")
    elif heading["slug"] != selector.slug:
        raise _corrupt(f"{name}.heading.slug does not match its locator", field=f"{name}.heading")
    if last - first + 1 != _line_span(data):
        raise _corrupt(
            f"{name}.lines does not match the lines of {name}.text", field=f"{name}.lines"
        )


def _check_paths(document: dict[str, Any]) -> None:
    named = [("packet.path", document["packet"]["path"])]
    named += [("context.path", document["context"]["path"])]
    named += [("policy.path", document["policy"]["path"])]
    named += [(f"reads[{i}].path", r["path"]) for i, r in enumerate(document["reads"])]
    for field, path in named:
        try:
            check_path(path)
        except SourceError as exc:
            raise _corrupt(f"{field}: {exc.message}", field=field) from None
    if document["policy"]["path"] != POLICY_PATH:
        raise _corrupt(f"policy.path is not {POLICY_PATH}", field="policy.path")
    if packet_id_of(document["packet"]["path"]) is None:
        raise _corrupt(f"packet.path is not {PACKETS_DIR}/<ID>/{PACKET_FILE}", field="packet.path")


# Packets parsed from capsules read in this process, by blob id and path:
# ``capsule status`` reads every record of a packet, most holding one text.
_PACKETS = BlobCache(1 << 20)


def _check_against_packet(document: dict[str, Any]) -> None:
    """What the capsule says the packet asked for is what the packet text says."""
    from governance.core.packet import DEFAULT_QUESTION, parse_packet  # noqa: PLC0415 (defers PyYAML)

    whole = document["packet"]
    try:
        # The text's blob id was checked against it: the id names the text.
        packet = _PACKETS.get(
            (whole["blob"], whole["path"]),
            lambda: parse_packet(whole["text"], path=whole["path"]),
            weight=lambda _: 256 + 2 * len(whole["text"]),
        )
    except MalformedInput as exc:
        raise _corrupt(
            f"packet.text is not a valid packet: {exc.message}", field="packet"
        ) from None
    if packet.id != document["id"]:
        raise _corrupt("id differs from the packet's id", field="id")
    question = packet.question if packet.question is not None else DEFAULT_QUESTION
    if document["question"] != question:
        raise _corrupt("question differs from the packet's question", field="question")
    if [read["locator"] for read in document["reads"]] != list(packet.required_reads):
        raise _corrupt("reads differ from the packet's required_reads", field="reads")
    budget = document["budget"]
    expected_source = "policy" if packet.target_tokens is None else "packet"
    if budget["target_source"] != expected_source:
        raise _corrupt(f"budget.target_source should be {expected_source}", field="budget")
    if packet.target_tokens is not None and budget["target_tokens"] != packet.target_tokens:
        raise _corrupt("budget.target_tokens differs from the packet's target", field="budget")


def _read_v1(data: bytes, document: dict[str, Any]) -> CapsuleFile:
    # 1. Shape: the closed capsule/1 schema.
    validate(document, "capsule-1", what="capsule", code=CAPSULE_MALFORMED)
    # 2. Bytes: exactly the canonical serialisation of what they parse to.
    if canonical.dumps(document) != data:
        raise MalformedInput(
            "capsule is not canonical JSON (keys sorted, no whitespace, UTF-8, one final LF); "
            "it was edited or re-serialised after it was built",
            code=NON_CANONICAL,
        )
    # 3. Internal consistency: every hash covers the bytes it claims to.
    if document["trust"] != TRUST_V1:
        raise _corrupt("the trust statement is not capsule/1's", field="trust")
    packet_file = document["packet"]["path"]
    if packet_id_of(packet_file) != document["id"]:
        raise _corrupt("packet.path does not match the packet id", field="packet.path")
    if document["context"]["path"] != context_path(packet_file):
        raise _corrupt("context.path is not beside the packet", field="context.path")
    if not FULL_COMMIT.fullmatch(document["commit"]):
        raise _corrupt("commit is not a full lowercase hex object id", field="commit")
    _check_paths(document)
    _check_whole(document["packet"], "packet")
    _check_whole(document["context"], "context")
    for index, read in enumerate(document["reads"]):
        _check_read(read, index)
    _check_against_packet(document)
    policy = document["policy"]
    if len(document["reads"]) > policy["max_required_reads"]:
        raise _corrupt("more reads than the policy's max_required_reads", field="reads")
    # 4. Budget: the numbers describe this very file and fit its limits.
    budget = document["budget"]
    for key in ("hard_limit_tokens", "reserve_tokens", "estimator"):
        if budget[key] != policy[key]:
            raise _corrupt(f"budget.{key} differs from policy.{key}", field=f"budget.{key}")
    if budget["target_source"] == "policy" and budget["target_tokens"] != policy["target_tokens"]:
        raise _corrupt("budget.target_tokens differs from policy.target_tokens", field="budget")
    if budget["bytes"] != len(data):
        raise _corrupt(
            f"budget.bytes is {budget['bytes']} but the file has {len(data)} bytes",
            field="budget.bytes",
        )
    if budget["estimated_tokens"] != estimate_tokens(len(data)):
        raise _corrupt("budget.estimated_tokens is not ceil(bytes / 3)", field="budget")
    limits = Limits(
        budget["target_tokens"],
        budget["target_source"],
        budget["hard_limit_tokens"],
        budget["reserve_tokens"],
    )
    if not limits.fits(budget["estimated_tokens"]):
        raise _corrupt("the capsule does not fit its own budget", field="budget")
    return CapsuleFile(data=data, document=document)


READERS: dict[str, Callable[[bytes, dict[str, Any]], CapsuleFile]] = {SCHEMA_V1: _read_v1}


def read_capsule(data: bytes) -> CapsuleFile:
    """Parse, check the schema version, shape, canonical bytes and consistency."""
    return read_parsed(data, canonical.loads(data, what="capsule"))


def read_parsed(data: bytes, document: Any) -> CapsuleFile:
    """``read_capsule`` for ``data`` that ``canonical.loads`` already parsed to
    ``document`` (audit parses a record once), with the same verdicts."""
    if not isinstance(document, dict):
        raise MalformedInput("capsule is not a JSON object", code=CAPSULE_MALFORMED)
    schema = document.get("schema")
    reader = READERS.get(schema) if isinstance(schema, str) else None
    if reader is None:
        known = ", ".join(sorted(READERS))
        raise MalformedInput(
            f"unsupported capsule schema {schema!r} (this version reads: {known})",
            code=UNSUPPORTED_SCHEMA,
            schema=schema if isinstance(schema, str) else None,
        )
    return reader(data, document)


def read_capsule_file(path: str) -> CapsuleFile:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise MalformedInput(
            f"{path}: cannot read capsule: {exc.strerror}", code=CAPSULE_UNREADABLE
        ) from None
    return read_capsule(data)
