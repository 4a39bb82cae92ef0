"""``capsule sign``: an SSH signature beside each record, over its exact bytes."""

from __future__ import annotations

import argparse
import os
from typing import Any

from governance.commands._args import add_command, add_json_flag
from governance.errors import CapsuleError
from governance.history.records import signature_path
from governance.history.signers import parse_signature
from governance.output import err, out, print_json, write_atomic

HELP = "sign capsule records with an SSH key (writes RECORD.sig beside each)"

EPILOG = """\
exit codes:
  0  every record was signed
  2  bad usage, a record that fails its pre-checks (capsule_corrupt, non_canonical,
     ...), record_unreadable, record_too_large, key_unreadable, sign_failed, or
     ssh_keygen_missing (ssh-keygen is not on PATH)
  3  record_not_file: a symbolic link or a folder, not a record file

errors carry a stable code; with --json they are printed on stdout as
{"error": {"code": ..., "message": ...}}."""


def register(sub: Any) -> None:
    parser = add_command(
        sub,
        "sign",
        HELP,
        (
            "Sign each RECORD's exact bytes with ssh-keygen -Y sign in the namespace "
            "git-capsule-record, and write the armored signature to RECORD.sig beside it "
            "(atomically; an older signature is replaced). Every record must pass the "
            "capsule pre-checks first: nobody vouches for a corrupt record. KEY is a private "
            "key file, or a public key file whose private half your ssh-agent holds "
            "(SSH_AUTH_SOCK); ssh-keygen reads it, and nothing of it is printed or written "
            "anywhere else. Check signatures with capsule audit --require-signatures."
        ),
        epilog=EPILOG,
    )
    parser.add_argument("records", nargs="+", metavar="RECORD", help="a capsule record file")
    parser.add_argument(
        "--key",
        metavar="KEY",
        required=True,
        help="SSH private key file, or public key file of an ssh-agent identity",
    )
    add_json_flag(parser)
    parser.set_defaults(run=run)


def _read_record(path: str) -> bytes:
    from governance.core.reader import read_capsule  # noqa: PLC0415 (defers json)
    from governance.history.record_rules import read_record_file  # noqa: PLC0415 (defers pygit2)

    # The record rules' own read: a regular file, not followed if a link
    # (record_not_file), at most 16 MiB (record_too_large), record_unreadable.
    data = read_record_file(path)
    try:
        read_capsule(data)
    except CapsuleError as exc:
        exc.message = f"{path}: {exc.message}"
        exc.args = (exc.message,)
        raise
    return data


def run(args: argparse.Namespace) -> int:
    from governance.history.signatures import sign_bytes, ssh_keygen  # noqa: PLC0415 (defers tempfile, subprocess)

    ssh_keygen()  # ssh_keygen_missing before anything is read
    # 1. Every record passes its pre-checks before any is signed.
    records = [(path, _read_record(path)) for path in args.records]
    # 2. Sign each one's exact bytes; write the signature beside it.
    signed = []
    for path, data in records:
        signature = sign_bytes(data, args.key)
        target = signature_path(path)
        replaced = os.path.lexists(target)
        write_atomic(target, signature)
        signed.append(
            {
                "record": path,
                "signature": target,
                "key": parse_signature(signature).fingerprint,
                "status": "replaced" if replaced else "written",
            }
        )
    if args.json:
        print_json({"signed": signed})
    else:
        for item in signed:
            out(
                f"signed  {item['record']}  -> {item['signature']}  "
                f"(key {item['key']}, {item['status']})"
            )
        err(f"capsule: signed {len(signed)} record(s)")
    return 0
