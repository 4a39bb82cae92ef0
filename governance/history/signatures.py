"""Signed records: sign a record's exact bytes with ``ssh-keygen -Y sign``, and
check a record's ``.sig`` against the allowed signers of a trusted revision.

A signature says who vouched for handing that capsule to an agent; replay
still says whether it is what the builder makes. The allowed signers are read
from a revision the caller trusts (HEAD for the hook, ``--signers-at`` for
audit), never from the commit or index being checked, and a key must also be
listed before the commit that brought the signature in: a commit cannot
authorise the key it is signed with.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from governance.errors import (
    BAD_SIGNATURE,
    KEY_UNREADABLE,
    SIGN_FAILED,
    SIGNATURE_BACKDATED,
    SIGNER_EXPIRED,
    SIGNER_REVOKED,
    SIGNERS_MALFORMED,
    SIGNING_POLICY_MALFORMED,
    SOURCE_MISSING,
    SSH_KEYGEN_FAILED,
    SSH_KEYGEN_MISSING,
    UNKNOWN_SIGNER,
    UNSIGNED,
    CapsuleError,
    MalformedInput,
    SourceError,
)
from governance.history.signers import (
    AllowedSigner,
    NotASignature,
    parse_allowed_signers,
    parse_revoked,
    parse_signature,
)

NAMESPACE = "git-capsule-record"
ALLOWED_SIGNERS_PATH = "policies/allowed_signers"
REVOKED_SIGNERS_PATH = "policies/revoked_signers"

SIGNED = "signed"
RESULTS = (
    SIGNED,
    UNSIGNED,
    BAD_SIGNATURE,
    UNKNOWN_SIGNER,
    SIGNER_EXPIRED,
    SIGNER_REVOKED,
    SIGNATURE_BACKDATED,
)

# A signature is a few hundred bytes; a signers file a line per maintainer.
MAX_SIGNATURE_BYTES = 64 * 1024
MAX_SIGNERS_BYTES = 1024 * 1024
_TIMEOUT_SECONDS = 60


def ssh_keygen() -> str:
    """The ``ssh-keygen`` on PATH, or ``ssh_keygen_missing`` (exit 2)."""
    found = shutil.which("ssh-keygen")
    if found is None:
        raise CapsuleError(
            "ssh-keygen is not on PATH: signing and checking signatures need OpenSSH's "
            "ssh-keygen (Debian: apt-get install openssh-client)",
            code=SSH_KEYGEN_MISSING,
        )
    return found


def _run(args: Sequence[str], data: bytes) -> subprocess.CompletedProcess[bytes]:
    # TZ=UTC: ssh-keygen reads allowed_signers times without Z as local time.
    env = {**os.environ, "TZ": "UTC"}
    try:
        return subprocess.run(
            [ssh_keygen(), *args],
            input=data,
            capture_output=True,
            env=env,
            timeout=_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CapsuleError(
            f"ssh-keygen did not finish within {_TIMEOUT_SECONDS} s (waiting for a passphrase "
            "or an agent?)",
            code=SSH_KEYGEN_FAILED,
        ) from None


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    text = done.stderr.decode("utf-8", "replace").strip().splitlines()
    said = [line for line in text if not line.startswith("Signing data on standard input")]
    return "; ".join(said) or f"exit status {done.returncode}"


def sign_bytes(data: bytes, key: str) -> bytes:
    """An armored SSH signature of exactly ``data`` in our namespace. ``key`` is
    a private key file, or a public key file whose private half an ssh-agent
    (``SSH_AUTH_SOCK``) holds; ssh-keygen reads it, we never do."""
    if not os.path.isfile(key):
        raise CapsuleError(f"{key}: no such key file", code=KEY_UNREADABLE)
    done = _run(["-Y", "sign", "-n", NAMESPACE, "-f", key], data)
    if done.returncode != 0 or not done.stdout.startswith(b"-----BEGIN SSH SIGNATURE-----"):
        raise CapsuleError(f"ssh-keygen could not sign: {_said(done)}", code=SIGN_FAILED)
    return done.stdout


@dataclass(frozen=True)
class Signers:
    """The allowed signers and revoked keys of one trusted revision."""

    revision: str  # a commit id, or a label for where they were read
    allowed: tuple[AllowedSigner, ...]
    revoked: frozenset[str]
    allowed_text: bytes = field(repr=False)
    revoked_text: bytes = field(repr=False)

    def lookup(self, key: str) -> list[AllowedSigner]:
        return [signer for signer in self.allowed if signer.key == key]

    def keys(self) -> frozenset[str]:
        return frozenset(signer.key for signer in self.allowed)


def _read_optional(snapshot: Any, path: str) -> bytes:
    try:
        source = snapshot.source(path)
    except SourceError as exc:
        if exc.code == SOURCE_MISSING:
            return b""
        raise MalformedInput(f"{path}: {exc.message}", code=SIGNERS_MALFORMED) from None
    if snapshot.size(source) > MAX_SIGNERS_BYTES:
        raise MalformedInput(
            f"{path}: over {MAX_SIGNERS_BYTES} bytes {snapshot.where}", code=SIGNERS_MALFORMED
        )
    data: bytes = snapshot.read(source)
    return data


def signers_from(revision: str, allowed: bytes, revoked: bytes) -> Signers:
    try:
        allowed_text = allowed.decode("utf-8")
        revoked_text = revoked.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedInput(
            "the allowed or revoked signers are not UTF-8", code=SIGNERS_MALFORMED
        ) from None
    return Signers(
        revision,
        tuple(parse_allowed_signers(allowed_text, path=ALLOWED_SIGNERS_PATH)),
        parse_revoked(revoked_text, path=REVOKED_SIGNERS_PATH),
        allowed,
        revoked,
    )


def load_signers(snapshot: Any) -> Signers:
    """The signers a snapshot (a commit's tree) lists; none when it has no
    ``policies/allowed_signers``."""
    return signers_from(
        snapshot.commit_id,
        _read_optional(snapshot, ALLOWED_SIGNERS_PATH),
        _read_optional(snapshot, REVOKED_SIGNERS_PATH),
    )


@dataclass(frozen=True)
class SignatureCheck:
    status: str  # one of RESULTS
    message: str
    principal: str | None = None
    key: str | None = None  # the signing key's SHA256 fingerprint

    @property
    def ok(self) -> bool:
        return self.status == SIGNED

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "message": self.message,
            "principal": self.principal,
            "key": self.key,
        }


def _stamp(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y%m%d%H%M%SZ")


def _shown(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _verify(
    record: bytes, signature: bytes, signer: AllowedSigner, signers: Signers, when: datetime
) -> subprocess.CompletedProcess[bytes]:
    with tempfile.TemporaryDirectory(prefix="capsule-verify-") as folder:
        paths = {name: os.path.join(folder, name) for name in ("allowed", "revoked", "sig")}
        for name, data in (
            ("allowed", signers.allowed_text),
            ("revoked", signers.revoked_text),
            ("sig", signature),
        ):
            with open(paths[name], "wb") as handle:
                handle.write(data)
        args = ["-Y", "verify", "-f", paths["allowed"], "-I", signer.principal()]
        args += ["-n", NAMESPACE, "-s", paths["sig"], f"-Overify-time={_stamp(when)}"]
        if signers.revoked_text.strip():
            args += ["-r", paths["revoked"]]
        return _run(args, record)


def check_signature(
    record: bytes,
    signature: bytes | None,
    signers: Signers,
    *,
    when: datetime,
    listed_before: frozenset[str] | None = None,
    built: tuple[str, datetime] | None = None,
) -> SignatureCheck:
    """Is ``signature`` a good signature of exactly ``record`` by a signer
    ``signers`` trust at ``when``? ``listed_before``: the keys listed before the
    signature was committed (its commit's parent); a key missing there was
    added together with what it signs, and is not trusted for it. ``built``:
    the record's declared commit and its committer time; a ``when`` before it
    is ``signature_backdated`` (a record cannot be signed before it was built,
    and a key's lifetime is never judged at such a time)."""
    # 1. There is a signature at all.
    if signature is None:
        return SignatureCheck(UNSIGNED, "no .sig beside the record")
    if len(signature) > MAX_SIGNATURE_BYTES:
        return SignatureCheck(BAD_SIGNATURE, f"the .sig is over {MAX_SIGNATURE_BYTES} bytes")
    # 2. It is an SSH signature in our namespace.
    try:
        info = parse_signature(signature)
    except NotASignature as exc:
        return SignatureCheck(BAD_SIGNATURE, f"the .sig is not an SSH signature ({exc})")
    key = info.fingerprint
    if info.namespace != NAMESPACE:
        return SignatureCheck(
            BAD_SIGNATURE,
            f"signed for namespace {info.namespace!r}, not {NAMESPACE!r}",
            key=key,
        )
    # 3. It verifies over these exact bytes, whoever made it.
    with tempfile.TemporaryDirectory(prefix="capsule-check-") as folder:
        path = os.path.join(folder, "sig")
        with open(path, "wb") as handle:
            handle.write(signature)
        done = _run(["-Y", "check-novalidate", "-n", NAMESPACE, "-s", path], record)
    if done.returncode != 0:
        return SignatureCheck(
            BAD_SIGNATURE, "the signature does not match the record's bytes", key=key
        )
    # 4. The key is trusted at the trusted revision.
    if info.key in signers.revoked:
        return SignatureCheck(
            SIGNER_REVOKED, f"key {key} is revoked in {REVOKED_SIGNERS_PATH}", key=key
        )
    listed = [s for s in signers.lookup(info.key) if s.allows_namespace(NAMESPACE)]
    if not listed:
        return SignatureCheck(
            UNKNOWN_SIGNER,
            f"key {key} is not in {ALLOWED_SIGNERS_PATH} at {signers.revision[:12]}",
            key=key,
        )
    if listed_before is not None and info.key not in listed_before:
        return SignatureCheck(
            UNKNOWN_SIGNER,
            f"key {key} was added to {ALLOWED_SIGNERS_PATH} by the commit that brings in this "
            "signature; a commit cannot authorise its own key",
            key=key,
        )
    if built is not None and when < built[1]:
        commit, built_time = built
        return SignatureCheck(
            SIGNATURE_BACKDATED,
            f"the commit that brings in the signature is dated {_shown(when)}, before the "
            f"record's commit {commit[:12]} ({_shown(built_time)}): a record cannot be signed "
            "before it was built",
            principal=listed[0].principal(),
            key=key,
        )
    current = [s for s in listed if s.valid_at(when)]
    if not current:
        return SignatureCheck(
            SIGNER_EXPIRED,
            f"key {key} ({listed[0].principals}) is not valid at {_stamp(when)}",
            principal=listed[0].principal(),
            key=key,
        )
    # 5. ssh-keygen agrees, against the trusted files themselves.
    done = _verify(record, signature, current[0], signers, when)
    if done.returncode != 0:
        return SignatureCheck(
            BAD_SIGNATURE, f"ssh-keygen does not accept it: {_said(done)}", key=key
        )
    return SignatureCheck(
        SIGNED, f"signed by {current[0].principals}", principal=current[0].principal(), key=key
    )


SIGNING_POLICY_PATH = "policies/signing.yml"


def signatures_required(snapshot: Any) -> bool:
    """``require_signatures`` of ``policies/signing.yml`` in a trusted snapshot
    (false without the file). The switch is read from the trusted revision,
    like the signers: a commit cannot switch its own check off."""
    from governance.core.yamlload import load_yaml  # noqa: PLC0415 (defers PyYAML, json)

    data = _read_optional(snapshot, SIGNING_POLICY_PATH)
    if not data.strip():
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedInput(
            f"{SIGNING_POLICY_PATH}: not UTF-8", code=SIGNING_POLICY_MALFORMED
        ) from None
    value = load_yaml(text, path=SIGNING_POLICY_PATH, code=SIGNING_POLICY_MALFORMED)
    if (
        not isinstance(value, dict)
        or set(value) != {"require_signatures"}
        or not isinstance(value["require_signatures"], bool)
    ):
        raise MalformedInput(
            f"{SIGNING_POLICY_PATH}: must be exactly 'require_signatures: true' or 'false'",
            code=SIGNING_POLICY_MALFORMED,
        )
    return bool(value["require_signatures"])
