"""Whom the agents run as: root gives each its own unused uid and gid, picked
at random for this run; anyone else runs them as themselves."""

from __future__ import annotations

import grp
import os
import pwd
import secrets
from dataclasses import dataclass
from typing import Any

from governance.continuation.processes import list_processes
from governance.errors import AGENT_USER_UNAVAILABLE, UsageError

SLOTS = ("a", "b")

# The dedicated ids agents get when the runner is root: far above any range
# that distributions hand out to users or services.
DEDICATED_IDS = (0x60000000, 0x6FFFFFFF)


@dataclass(frozen=True)
class RunAs:
    """The user an agent runs as."""

    name: str | None
    uid: int
    gid: int
    dedicated: bool

    @property
    def isolation(self) -> str:
        return "dedicated_uid" if self.dedicated else "mode_bits_only"

    def describe(self) -> str:
        if self.dedicated:
            return f"dedicated uid {self.uid}"
        return f"uid {self.uid}" + ("" if self.name is None else f" ({self.name})")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "uid": self.uid,
            "gid": self.gid,
            "privilege_dropped": self.dedicated,
            "isolation": self.isolation,
        }


def agent_users(count: int = len(SLOTS)) -> tuple[RunAs, ...]:
    """Whom the agents run as: root gives each its own unused uid and gid;
    anyone else runs them as themselves (then only the mode bits and the
    emptiness check guard the workspace)."""
    if os.geteuid() == 0:
        return tuple(RunAs(None, number, number, True) for number in _unused_ids(count))
    uid = os.geteuid()
    try:
        name: str | None = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = None
    return tuple(RunAs(name, uid, os.getegid(), False) for _ in range(count))


def _mapped(path: str) -> Ranges:
    """The ids this user namespace can use, as inclusive ranges."""
    try:
        with open(path, encoding="ascii") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return [(0, 0xFFFFFFFE)]
    ranges = []
    for line in lines:
        inside, _, length = (int(word) for word in line.split())
        ranges.append((inside, inside + length - 1))
    return ranges


Ranges = list[tuple[int, int]]


def _intersect(first: Ranges, second: Ranges) -> Ranges:
    found = []
    for low_a, high_a in first:
        for low_b, high_b in second:
            low, high = max(low_a, low_b), min(high_a, high_b)
            if low <= high:
                found.append((low, high))
    return found


def _unused_ids(count: int) -> list[int]:
    """``count`` distinct numbers, each free as a uid and as a gid: no passwd or
    group entry, and no process running with it."""
    ranges = _intersect(
        _intersect([DEDICATED_IDS], _mapped("/proc/self/uid_map")), _mapped("/proc/self/gid_map")
    )
    busy: set[int] = set()
    for process in list_processes():
        busy.update(process.uids)
        busy.update(process.gids)
    chosen: list[int] = []
    for _ in range(1000):
        if len(chosen) == count or not ranges:
            break
        low, high = ranges[secrets.randbelow(len(ranges))]
        candidate = low + secrets.randbelow(high - low + 1)
        if candidate in busy or candidate in chosen or _has_entry(candidate):
            continue
        chosen.append(candidate)
    if len(chosen) < count:
        raise UsageError(
            "cannot find unused ids for the agents between "
            f"{DEDICATED_IDS[0]} and {DEDICATED_IDS[1]} in this user namespace",
            code=AGENT_USER_UNAVAILABLE,
        )
    return chosen


def _has_entry(number: int) -> bool:
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(number)
        except KeyError:
            continue
        return True
    return False
