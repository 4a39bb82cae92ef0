"""A seccomp filter that refuses an isolated agent ``socket(AF_UNIX, ...)`` and
io_uring, as classic BPF for bwrap's ``--seccomp``: abstract Unix sockets live
in the network namespace, so with ``--network host`` two agents could
otherwise meet at one, and io_uring's IORING_OP_SOCKET makes any socket
without calling ``socket()`` (nor does seccomp see what a ring runs).
``socketpair`` stays allowed: a connected pair reaches no one, though one end,
disconnected, may bind a name of the namespace it is in."""

from __future__ import annotations

import errno
import os
import platform
import struct
from collections.abc import Sequence
from typing import NamedTuple

AF_UNIX = 1
DENIED = ("socket(AF_UNIX)", "io_uring_setup", "io_uring_enter", "io_uring_register")

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_DENY = 0x00050000 | errno.EPERM  # SECCOMP_RET_ERRNO | EPERM

# Offsets into struct seccomp_data: nr, arch, then args[0] (low half first on
# the little-endian machines below).
_NR, _ARCH, _ARG0 = 0, 4, 16

_X32_BIT = 0x40000000
# io_uring_setup, io_uring_enter, io_uring_register: one number on every
# architecture and compat entry (they came after the tables were unified).
_IO_URING = (425, 426, 427)


class _Arch(NamedTuple):
    audit: int
    socket: int
    socketcall: int | None = None


# machine: the native arch and, where a 32-bit compat entry exists, that one.
_ARCHES: dict[str, tuple[_Arch, _Arch | None]] = {
    "x86_64": (_Arch(0xC000003E, 41), _Arch(0x40000003, 359, socketcall=102)),
    # 32-bit ARM has no socketcall on the compat entry.
    "aarch64": (_Arch(0xC00000B7, 198), _Arch(0x40000028, 281)),
}


def supported(machine: str | None = None) -> bool:
    return (machine or platform.machine()) in _ARCHES


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _assemble(lines: Sequence[tuple[int, int, str | None, str | None] | str]) -> bytes:
    """Classic BPF from (code, k, jump-if-true label, jump-if-false label) lines
    and label strings; a None target is the next instruction. Jumps are forward
    only, counted from the instruction after the jump."""
    where: dict[str, int] = {}
    count = 0
    for line in lines:
        if isinstance(line, str):
            where[line] = count
        else:
            count += 1
    ops = []
    index = 0
    for line in lines:
        if isinstance(line, str):
            continue
        code, k, true, false = line
        jt = 0 if true is None else where[true] - index - 1
        jf = 0 if false is None else where[false] - index - 1
        if not (0 <= jt < 256 and 0 <= jf < 256):
            raise ValueError("seccomp: a jump out of range")
        ops.append(_op(code, k, jt, jf))
        index += 1
    return b"".join(ops)


def program(machine: str | None = None) -> bytes:
    """The filter for this machine (or for ``machine``, as ``uname -m`` names
    it). A native ``socket`` call whose family is AF_UNIX gets EPERM (on
    x86_64, through the x32 numbers too), and so does every io_uring call;
    on the 32-bit compat entry, whose ``socketcall`` hides its arguments,
    ``socketcall`` is refused whole, io_uring and ``socket`` like the native
    ones."""
    machine = machine or platform.machine()
    native, compat = _ARCHES[machine]
    x32 = machine == "x86_64"
    lines: list[tuple[int, int, str | None, str | None] | str] = [
        (_LD_W_ABS, _ARCH, None, None),
        (_JEQ_K, native.audit, None, "compat"),
        (_LD_W_ABS, _NR, None, None),
    ]
    refused = [*_IO_URING, *((nr | _X32_BIT for nr in _IO_URING) if x32 else ())]
    lines += [(_JEQ_K, nr, "deny", None) for nr in refused]
    lines.append((_JEQ_K, native.socket, "family", None))
    if x32:
        lines.append((_JEQ_K, native.socket | _X32_BIT, "family", None))
    lines.append((_RET_K, _ALLOW, None, None))
    lines.append("compat")
    if compat is not None:
        lines += [(_JEQ_K, compat.audit, None, "allow"), (_LD_W_ABS, _NR, None, None)]
        compat_refused = [*_IO_URING, *([] if compat.socketcall is None else [compat.socketcall])]
        lines += [(_JEQ_K, nr, "deny", None) for nr in compat_refused]
        lines.append((_JEQ_K, compat.socket, "family", "allow"))
    else:
        lines.append((_RET_K, _ALLOW, None, None))
    lines += [
        "family",
        (_LD_W_ABS, _ARG0, None, None),
        (_JEQ_K, AF_UNIX, "deny", None),
        "allow",
        (_RET_K, _ALLOW, None, None),
        "deny",
        (_RET_K, _DENY, None, None),
    ]
    return _assemble(lines)


def file_descriptor() -> int:
    """An open, readable descriptor holding the filter, positioned at its start
    (bwrap reads it to the end); the caller passes it on and closes it."""
    fd = os.memfd_create("capsule-seccomp", 0)
    os.write(fd, program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
