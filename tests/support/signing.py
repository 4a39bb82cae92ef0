"""Real SSH keys and signatures made with ssh-keygen in temp folders."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Key:
    private: Path
    public: Path

    @property
    def line(self) -> str:
        """``keytype base64`` of the public key (its comment dropped)."""
        return " ".join(self.public.read_text().split()[:2])

    def signer(self, principal: str, options: str = "") -> str:
        """An allowed_signers line for this key."""
        return " ".join(part for part in (principal, options, self.line) if part) + "\n"


def make_key(folder: Path, name: str) -> Key:
    folder.mkdir(parents=True, exist_ok=True)
    private = folder / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(private)],
        check=True,
        capture_output=True,
    )
    return Key(private, folder / f"{name}.pub")


def raw_sign(data: bytes, key: Key, namespace: str) -> bytes:
    """ssh-keygen's own signature of ``data`` in any namespace (to forge with)."""
    done = subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-n", namespace, "-f", str(key.private)],
        input=data,
        check=True,
        capture_output=True,
    )
    return done.stdout
