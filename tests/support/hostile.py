"""The catalogue of hostile records: each one a file written into a working
tree, named, with the one code every record surface (``capsule replay``,
``capsule audit`` and the ``capsule-records`` hook) must give it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass

from governance.history.record_rules import MAX_RECORD_BYTES
from support.gitrepo import Repo
from support.history import Cli, forge, forge_whole_read, record_on_a_deleted_branch


@dataclass(frozen=True)
class Hostile:
    name: str
    code: str
    what: str
    # Writes the record into the working tree of ``repo`` (on main, holding
    # P-1) given the bytes of P-1's genuine record at HEAD; returns its path.
    # It may commit (the unreachable one does), never leave main.
    write: Callable[[Cli, Repo, bytes], str]


Write = Callable[[Cli, Repo, bytes], str]


def _at(path: str, data: bytes) -> Write:
    def write(cli: Cli, repo: Repo, genuine: bytes) -> str:
        repo.write(path, data)
        return path

    return write


def _edited(path: str, edit: Callable[[bytes], bytes]) -> Write:
    def write(cli: Cli, repo: Repo, genuine: bytes) -> str:
        repo.write(path, edit(genuine))
        return path

    return write


def _naive(data: bytes) -> bytes:
    # A hand edit that leaves every hash as it was.
    document = json.loads(data)
    document["reads"][0]["text"] += "one more line\n"
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode() + b"\n"


def _indented(data: bytes) -> bytes:
    return (json.dumps(json.loads(data), indent=1) + "\n").encode()


def _symlink(path: str) -> Write:
    def write(cli: Cli, repo: Repo, genuine: bytes) -> str:
        target = repo.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink("../packet.yml", target)
        return path

    return write


def _missing_commit(cli: Cli, repo: Repo, genuine: bytes) -> str:
    missing = "f" * 40
    path = f"packets/P-1/capsules/{missing[:12]}.json"
    repo.write(path, forge(genuine, lambda d: d.update(commit=missing)))
    return path


def catalogue(head: str) -> list[Hostile]:
    """Every hostile record, in the order to write them, for a repository whose
    HEAD is ``head``, the commit P-1's genuine record is built at."""
    genuine = f"packets/P-1/capsules/{head[:12]}.json"
    return [
        Hostile(
            "unreachable commit",
            "commit_unreachable",
            "a record whose commit lived only on a branch that was deleted (squash merge)",
            _unreachable,
        ),
        Hostile(
            "forged text",
            "replay_differs",
            "an excerpt rewritten with every hash recomputed: consistent, false to its commit",
            _edited(genuine, lambda d: forge_whole_read(d, 1, "# Notes\n\nSome nodes.\n")),
        ),
        Hostile(
            "misplaced copy",
            "record_misplaced",
            "the genuine bytes under another packet's folder",
            _edited(f"packets/P-2/capsules/{head[:12]}.json", lambda d: d),
        ),
        Hostile(
            "corrupt",
            "capsule_corrupt",
            "an excerpt edited by hand, its hashes left as they were",
            _edited("packets/P-1/capsules/corrupt.json", _naive),
        ),
        Hostile(
            "non-canonical",
            "non_canonical",
            "the genuine document, indented",
            _edited("packets/P-1/capsules/indented.json", _indented),
        ),
        Hostile(
            "duplicate key",
            "capsule_malformed",
            "the genuine record with a key written twice, which a plain JSON parse takes",
            _edited("packets/P-1/capsules/twice.json", lambda d: b'{"id":"P-0",' + d[1:]),
        ),
        Hostile(
            "lone surrogate",
            "capsule_malformed",
            "the genuine record with its packet path a lone surrogate escape, which a plain "
            "JSON parse takes and no git path can hold",
            _edited(
                "packets/P-1/capsules/surrogate.json",
                lambda d: d.replace(b'"packets/P-1/packet.yml"', b'"packets/\\ud800/packet.yml"'),
            ),
        ),
        Hostile(
            "oversized",
            "record_too_large",
            "one byte over the 16 MiB a record may have",
            _at("packets/P-1/capsules/huge.json", b" " * (MAX_RECORD_BYTES + 1)),
        ),
        Hostile(
            "symlink",
            "record_not_file",
            "a symbolic link where a record belongs",
            _symlink("packets/P-1/capsules/link.json"),
        ),
        Hostile(
            "unsupported schema",
            "unsupported_schema",
            "the genuine record claiming capsule/2",
            _edited(
                "packets/P-1/capsules/schema.json",
                lambda d: forge(d, lambda doc: doc.update(schema="capsule/2")),
            ),
        ),
        Hostile(
            "missing commit",
            "commit_missing",
            "a record declaring a commit this repository does not have",
            _missing_commit,
        ),
    ]


def _unreachable(cli: Cli, repo: Repo, genuine: bytes) -> str:
    return record_on_a_deleted_branch(cli, repo)[0]
