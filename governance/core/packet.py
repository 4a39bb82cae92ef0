"""Execution packets: ``packets/<ID>/packet.yml`` beside ``context.md``."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from governance.core.capsule import context_path
from governance.core.schema import validate
from governance.core.yamlload import load_yaml
from governance.errors import PACKET_MALFORMED, MalformedInput

# Asked when a packet names no question of its own. Part of capsule/1: changing
# it changes every capsule built from a packet without a question.
DEFAULT_QUESTION = (
    "Using only this capsule, decide whether the work this packet describes can "
    "continue now: answer continue, with the next action, or blocked, with what "
    "blocks it, citing the locators of the excerpts you relied on."
)


@dataclass(frozen=True)
class Packet:
    path: str
    id: str
    title: str
    objective: str
    scope: tuple[str, ...]
    dependencies: tuple[str, ...]
    contracts: tuple[str, ...]
    question: str | None
    target_tokens: int | None
    required_reads: tuple[str, ...]

    @property
    def folder(self) -> str:
        return posixpath.dirname(self.path)

    @property
    def context_path(self) -> str:
        return context_path(self.path)


def parse_packet(text: str, *, path: str) -> Packet:
    data: Any = load_yaml(text, path=path, code=PACKET_MALFORMED)
    validate(data, "packet", what=path, code=PACKET_MALFORMED)
    folder = posixpath.basename(posixpath.dirname(path))
    if data["id"] != folder:
        raise MalformedInput(
            f"{path}: id {data['id']!r} must equal its folder name {folder!r}",
            code=PACKET_MALFORMED,
            path=path,
        )
    scope = data["scope"]
    return Packet(
        path=path,
        id=data["id"],
        title=data["title"],
        objective=data["objective"],
        scope=(scope,) if isinstance(scope, str) else tuple(scope),
        dependencies=tuple(data["dependencies"]),
        contracts=tuple(data["contracts"]),
        question=data.get("question"),
        target_tokens=data.get("budget", {}).get("target_tokens"),
        required_reads=tuple(data["required_reads"]),
    )
