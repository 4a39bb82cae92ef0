"""What the kernel is told about an agent before it runs (resource limits, no
new privileges) and about the runner itself (non-dumpable)."""

from __future__ import annotations

import ctypes
import functools
import os
import resource
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from governance.continuation.users import RunAs

# Resource limits for every agent. NPROC counts all processes (and threads) of
# a uid, so it is only set for a dedicated uid, never for the runner's own.
NPROC_LIMIT = 256
FSIZE_LIMIT = 1 << 30
# The private memory one process may map (RLIMIT_DATA: its heap and every
# private writable mapping, counted whole when mapped, touched or not). Not
# RLIMIT_AS: address space is not memory, and Node's WebAssembly (hence its
# fetch) reserves some 10 GiB of it, so an address-space bound that stops
# nothing big would stop the model clients agents are made of.
DATA_LIMIT = 4 << 30

_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38


@dataclass(frozen=True)
class Limits:
    """The resource limits an agent starts with."""

    nproc: int | None
    fsize: int
    data: int

    def to_json(self) -> dict[str, Any]:
        return {
            "nproc": self.nproc,
            "fsize": self.fsize,
            "data": self.data,
            "core": 0,
            "no_new_privs": True,
        }


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> None:
    zero = ctypes.c_ulong(0)
    if _libc().prctl(option, ctypes.c_ulong(value), zero, zero, zero) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"prctl({option}): {os.strerror(number)}")


def make_undumpable() -> None:
    """Make /proc/<runner>/{environ,cwd,fd,maps,...} root-only: an agent running
    as the runner's own uid must not read the runner's environment (the values
    behind --pass-env and everything else) or follow its file descriptors.
    /proc/<pid>/cmdline stays world-readable, as for every process."""
    _prctl(_PR_SET_DUMPABLE, 0)


def limits_for(run_as: RunAs) -> Limits:
    """The limits for an agent running as ``run_as``, never above the hard limits."""

    def capped(kind: int, wanted: int) -> int:
        hard = resource.getrlimit(kind)[1]
        return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)

    nproc = capped(resource.RLIMIT_NPROC, NPROC_LIMIT) if run_as.dedicated else None
    return Limits(
        nproc=nproc,
        fsize=capped(resource.RLIMIT_FSIZE, FSIZE_LIMIT),
        data=capped(resource.RLIMIT_DATA, DATA_LIMIT),
    )


def limiter(limits: Limits) -> Callable[[], None]:
    """What the child runs between fork and exec, after it took the agent's uid.

    A ``preexec_fn`` can deadlock when other threads hold locks at fork time;
    the runner has no other threads (one loop serves both agents) and resolves
    ``prctl`` before forking, so the child only makes system calls."""
    prctl = _libc().prctl
    zero = ctypes.c_ulong(0)

    def apply() -> None:
        if limits.nproc is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.nproc, limits.nproc))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.fsize, limits.fsize))
        resource.setrlimit(resource.RLIMIT_DATA, (limits.data, limits.data))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # Setuid programs cannot lift the agent back out of its uid.
        if prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), zero, zero, zero) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")

    return apply
