"""A seccomp filter that refuses ``socket(AF_UNIX, ...)`` to an isolated agent,
as classic BPF for bwrap's ``--seccomp``: abstract Unix sockets live in the
network namespace, so with ``--network host`` two agents could otherwise
meet at one. ``socketpair`` stays allowed (a connected pair reaches no one)."""

from __future__ import annotations

import errno
import os
import platform
import struct

AF_UNIX = 1

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_DENY = 0x00050000 | errno.EPERM  # SECCOMP_RET_ERRNO | EPERM

# Offsets into struct seccomp_data: nr, arch, then args[0] (low half first on
# the little-endian machines below).
_NR, _ARCH, _ARG0 = 0, 4, 16

_X32_BIT = 0x40000000
_NEVER = 0xFFFFFFFF  # no arch or system call has this number
# machine: (audit arch, socket's number, the compat arch and its socket and
# socketcall numbers, or None)
_ARCHES: dict[str, tuple[int, int, tuple[int, int, int] | None]] = {
    "x86_64": (0xC000003E, 41, (0x40000003, 359, 102)),
    # 32-bit ARM has no socketcall on the compat entry.
    "aarch64": (0xC00000B7, 198, (0x40000028, 281, 0xFFFFFFFF)),
}


def supported() -> bool:
    return platform.machine() in _ARCHES


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k & 0xFFFFFFFF)


def program() -> bytes:
    """The filter for this machine. A native ``socket`` call whose family is
    AF_UNIX gets EPERM (on x86_64, through the x32 numbers too); on the 32-bit
    compat entry, whose ``socketcall`` hides its arguments, ``socketcall`` is
    refused whole and ``socket`` like the native one."""
    native, socket_nr, compat = _ARCHES[platform.machine()]
    compat_arch, compat_socket, compat_socketcall = compat or (_NEVER, _NEVER, _NEVER)
    # Jumps are forward only: a target is the next instruction plus the offset.
    ops = [
        _op(_LD_W_ABS, _ARCH),  # 0
        _op(_JEQ_K, native, 0, 5),  # 1: native -> 2, else -> 7
        _op(_LD_W_ABS, _NR),  # 2
        _op(_JEQ_K, socket_nr, 1, 0),  # 3: socket -> 5
        _op(_JEQ_K, socket_nr | _X32_BIT, 0, 8),  # 4: x32 socket -> 5, else allow
        _op(_LD_W_ABS, _ARG0),  # 5
        _op(_JEQ_K, AF_UNIX, 7, 6),  # 6: AF_UNIX -> deny, else allow
        _op(_JEQ_K, compat_arch, 0, 5),  # 7: compat -> 8, else allow
        _op(_LD_W_ABS, _NR),  # 8
        _op(_JEQ_K, compat_socketcall, 4, 0),  # 9: socketcall -> deny
        _op(_JEQ_K, compat_socket, 0, 2),  # 10: socket -> 11, else allow
        _op(_LD_W_ABS, _ARG0),  # 11
        _op(_JEQ_K, AF_UNIX, 1, 0),  # 12: AF_UNIX -> deny, else allow
        _op(_RET_K, _ALLOW),  # 13
        _op(_RET_K, _DENY),  # 14
    ]
    return b"".join(ops)


def file_descriptor() -> int:
    """An open, readable descriptor holding the filter, positioned at its start
    (bwrap reads it to the end); the caller passes it on and closes it."""
    fd = os.memfd_create("capsule-seccomp", 0)
    os.write(fd, program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
