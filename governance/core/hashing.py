"""SHA-256 of bytes, as every capsule hash is written. Git object ids are
pygit2's (the snapshot's blob ids), never computed here."""

from __future__ import annotations

import hashlib


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
