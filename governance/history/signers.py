"""Reading the signature formats: an SSH signature's envelope (SSHSIG) and git's
``allowed_signers`` lines, so a result can say which key signed and why it is
not trusted; ``ssh-keygen`` itself still checks every signature it accepts.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from dataclasses import dataclass
from datetime import UTC, datetime

from governance.errors import SIGNERS_MALFORMED, MalformedInput

_ARMOR_BEGIN = "-----BEGIN SSH SIGNATURE-----"
_ARMOR_END = "-----END SSH SIGNATURE-----"
_MAGIC = b"SSHSIG"


class NotASignature(ValueError):
    """The bytes are not an armored SSH signature (PROTOCOL.sshsig)."""


@dataclass(frozen=True)
class SignatureInfo:
    """What an SSH signature says about itself, before anyone checks it."""

    key_type: str
    key: str  # base64 of the public key blob, as in an authorized_keys line
    namespace: str

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.key)


def fingerprint(key: str) -> str:
    """``SHA256:...`` as ``ssh-keygen -l`` prints it for a base64 key blob."""
    digest = hashlib.sha256(base64.b64decode(key)).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def _string(data: bytes, offset: int) -> tuple[bytes, int]:
    if offset + 4 > len(data):
        raise NotASignature("truncated")
    (length,) = struct.unpack_from(">I", data, offset)
    end = offset + 4 + length
    if end > len(data):
        raise NotASignature("truncated")
    return data[offset + 4 : end], end


def parse_signature(armored: bytes) -> SignatureInfo:
    """The key and namespace an armored SSH signature names (PROTOCOL.sshsig:
    magic, version 1, public key, namespace, reserved, hash, signature)."""
    try:
        lines = armored.decode("ascii").strip().splitlines()
    except UnicodeDecodeError:
        raise NotASignature("not ASCII") from None
    if len(lines) < 3 or lines[0] != _ARMOR_BEGIN or lines[-1] != _ARMOR_END:
        raise NotASignature("no SSH SIGNATURE armor")
    try:
        blob = base64.b64decode("".join(lines[1:-1]), validate=True)
    except binascii.Error:
        raise NotASignature("not base64") from None
    if not blob.startswith(_MAGIC) or len(blob) < 10:
        raise NotASignature("not an SSHSIG blob")
    (version,) = struct.unpack_from(">I", blob, 6)
    if version != 1:
        raise NotASignature(f"SSHSIG version {version}")
    key, offset = _string(blob, 10)
    namespace, offset = _string(blob, offset)
    key_type, _ = _string(key, 0)
    try:
        return SignatureInfo(
            key_type.decode("ascii"),
            base64.b64encode(key).decode("ascii"),
            namespace.decode("utf-8"),
        )
    except UnicodeDecodeError:
        raise NotASignature("a name is not text") from None


@dataclass(frozen=True)
class AllowedSigner:
    """One line of an ``allowed_signers`` file (ssh-keygen(1), ALLOWED SIGNERS)."""

    principals: str  # comma-separated patterns, as written
    key_type: str
    key: str  # base64 key blob
    namespaces: tuple[str, ...] | None
    valid_after: datetime | None
    valid_before: datetime | None
    line: int

    def principal(self) -> str:
        """A principal ``ssh-keygen -Y verify -I`` accepts for this line: the
        first one written (a pattern matches itself)."""
        return self.principals.split(",")[0]

    def allows_namespace(self, namespace: str) -> bool:
        return self.namespaces is None or any(
            _pattern(pattern).fullmatch(namespace) for pattern in self.namespaces
        )

    def valid_at(self, when: datetime) -> bool:
        if self.valid_after is not None and when < self.valid_after:
            return False
        return self.valid_before is None or when <= self.valid_before


def _pattern(glob: str) -> re.Pattern[str]:
    return re.compile(
        "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)
    )


_KEY_TYPE = re.compile(r"(ssh-|ecdsa-|sk-|rsa-)[A-Za-z0-9@.+-]+")
_TIME = re.compile(r"(\d{4})(\d{2})(\d{2})(?:(\d{2})(\d{2})(\d{2})?)?Z?")


def _time(value: str, where: str) -> datetime:
    # ssh-keygen reads these as local time unless they end in Z; we always run
    # it under TZ=UTC, so both read them as UTC.
    match = _TIME.fullmatch(value)
    if match is None:
        raise MalformedInput(
            f"{where}: {value!r} is not YYYYMMDD[HHMM[SS]][Z]", code=SIGNERS_MALFORMED
        )
    year, month, day, hour, minute, second = (int(g) if g else 0 for g in match.groups())
    try:
        return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        raise MalformedInput(f"{where}: {value!r} is not a date", code=SIGNERS_MALFORMED) from None


def _tokens(line: str) -> list[str]:
    """Split on blanks outside double quotes (the options field quotes its values)."""
    tokens: list[str] = []
    current = ""
    quoted = False
    for char in line:
        if char == '"':
            quoted = not quoted
        if char in " \t" and not quoted:
            if current:
                tokens.append(current)
            current = ""
        else:
            current += char
    if current:
        tokens.append(current)
    return tokens


def _options(text: str, where: str) -> dict[str, str]:
    options: dict[str, str] = {}
    for item in re.findall(r'(?:[^,"]|"[^"]*")+', text):
        name, _, value = item.partition("=")
        options[name.lower()] = value.strip('"')
    known = {"namespaces", "valid-after", "valid-before", "cert-authority"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise MalformedInput(f"{where}: unknown option {unknown[0]!r}", code=SIGNERS_MALFORMED)
    if "cert-authority" in options:
        raise MalformedInput(
            f"{where}: cert-authority lines are not supported; list each signer's own key",
            code=SIGNERS_MALFORMED,
        )
    return options


def parse_allowed_signers(text: str, *, path: str) -> list[AllowedSigner]:
    """Every signer line of an ``allowed_signers`` file; blank lines and ``#``
    comments are skipped, anything else that is not a signer line is
    ``signers_malformed``."""
    signers: list[AllowedSigner] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}:{number}"
        tokens = _tokens(line)
        if len(tokens) >= 3 and _KEY_TYPE.fullmatch(tokens[1]):
            principals, key_type, key = tokens[0], tokens[1], tokens[2]
            options: dict[str, str] = {}
        elif len(tokens) >= 4 and _KEY_TYPE.fullmatch(tokens[2]):
            principals, key_type, key = tokens[0], tokens[2], tokens[3]
            options = _options(tokens[1], where)
        else:
            raise MalformedInput(
                f"{where}: not 'principals [options] keytype base64-key'", code=SIGNERS_MALFORMED
            )
        try:
            base64.b64decode(key, validate=True)
        except binascii.Error:
            raise MalformedInput(
                f"{where}: the key is not base64", code=SIGNERS_MALFORMED
            ) from None
        namespaces = options.get("namespaces")
        signers.append(
            AllowedSigner(
                principals=principals.strip('"'),
                key_type=key_type,
                key=key,
                namespaces=tuple(namespaces.split(",")) if namespaces is not None else None,
                valid_after=_time(options["valid-after"], where)
                if "valid-after" in options
                else None,
                valid_before=(
                    _time(options["valid-before"], where) if "valid-before" in options else None
                ),
                line=number,
            )
        )
    return signers


def parse_revoked(text: str, *, path: str) -> frozenset[str]:
    """The base64 key blobs of a revocation list: one public key per line
    (``keytype base64-key [comment]``), the plain form ``ssh-keygen -r`` reads."""
    keys: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        tokens = line.split()
        if len(tokens) < 2 or not _KEY_TYPE.fullmatch(tokens[0]):
            raise MalformedInput(
                f"{path}:{number}: not 'keytype base64-key [comment]'", code=SIGNERS_MALFORMED
            )
        keys.add(tokens[1])
    return frozenset(keys)
