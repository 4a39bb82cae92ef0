"""The packet.yml and context.md that ``capsule new`` writes (and that
``capsule suggest`` fits its reads to)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from governance.errors import TEXT_EMPTY, TEXT_NOT_UTF8, UsageError

DEFAULT_ID = "NEW"
TITLE_CHARS = 100

# YAML's own escapes for what a double-quoted scalar cannot hold literally:
# line breaks (YAML folds them, NEL and the Unicode separators included), the
# byte order mark, and every non-printable character.
_NAMED = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\x85": "\\N",
    "\u2028": "\\L",
    "\u2029": "\\P",
}


def _printable(char: str) -> bool:
    point = ord(char)
    return (
        0x20 <= point <= 0x7E
        or 0xA0 <= point <= 0xD7FF
        or (0xE000 <= point <= 0xFFFD and point != 0xFEFF)
        or 0x10000 <= point <= 0x10FFFF
    )


def quoted(value: str) -> str:
    """``value`` as a YAML double-quoted scalar that loads back to exactly it."""
    out = []
    for char in value:
        if char in _NAMED:
            out.append(_NAMED[char])
        elif _printable(char):
            out.append(char)
        elif ord(char) <= 0xFF:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(f"\\u{ord(char):04x}")
    return '"' + "".join(out) + '"'


def check_text(value: str, option: str) -> str:
    if any(0xD800 <= ord(char) <= 0xDFFF for char in value):
        raise UsageError(f"{option}: not valid UTF-8", code=TEXT_NOT_UTF8, option=option)
    if not value.strip():
        raise UsageError(f"{option}: empty", code=TEXT_EMPTY, option=option)
    return value


@dataclass(frozen=True)
class Draft:
    """What a new packet says besides its reads."""

    id: str
    goal: str
    title: str
    objective: str
    commit: str
    target_tokens: int | None = None

    @classmethod
    def make(
        cls,
        goal: str,
        commit: str,
        *,
        packet_id: str = DEFAULT_ID,
        title: str | None = None,
        objective: str | None = None,
        target_tokens: int | None = None,
    ) -> Draft:
        check_text(goal, "GOAL")
        if title is None:
            line = " ".join(goal.split())
            title = line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 3] + "..."
        return cls(
            id=packet_id,
            goal=goal,
            title=check_text(title, "--title"),
            objective=check_text(objective if objective is not None else goal, "--objective"),
            commit=commit,
            target_tokens=target_tokens,
        )

    @property
    def folder(self) -> str:
        return f"packets/{self.id}"

    @property
    def packet_path(self) -> str:
        return f"{self.folder}/packet.yml"

    @property
    def context_path(self) -> str:
        return f"{self.folder}/context.md"

    def packet_text(self, reads: Sequence[str]) -> str:
        lines = [
            f"# Written by capsule new at {self.commit[:12]}, with the reads capsule suggest",
            "# proposed for the goal in context.md. Review every value (scope and contracts",
            "# above all) and every read before committing: the packet is the authority.",
            f"id: {self.id}",
            f"title: {quoted(self.title)}",
            f"objective: {quoted(self.objective)}",
            'scope: "."',
            "dependencies: []",
            "contracts: []",
        ]
        if self.target_tokens is not None:
            lines.append(f"budget: {{target_tokens: {self.target_tokens}}}")
        lines.append("required_reads:" + ("" if reads else " []"))
        lines += [f"  - {quoted(read)}" for read in reads]
        return "\n".join(lines) + "\n"

    def context_text(self) -> str:
        title = " ".join(self.title.split())
        goal = "\n".join(f"> {line}" if line else ">" for line in self.goal.splitlines())
        return (
            f"# {title}\n\n"
            "The goal this packet was drafted from (`capsule new --goal`):\n\n"
            f"{goal}\n\n"
            "Its required reads were suggested by `capsule suggest` from the tracked "
            f"Markdown at commit {self.commit[:12]}, by rules, without a model: check them\n"
            "against the goal, and edit this file to say what the work needs.\n"
        )
