"""How many processes ``audit --jobs auto`` may keep busy: the CPUs this
process may run on (its affinity), within the CPU quota of its control group
(a container's ``--cpus``, a CI runner's limit) where Linux says one is set,
and one process for each full share of work.

Read from the files Linux publishes (``/proc/self/cgroup`` and the quota
files of cgroup v2 and v1) and never trusted further than they parse: a
missing, unreadable or odd file means no quota. Only the process's own group
and the groups above it count, as the kernel applies each of them.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

# What one more process must have to do before auto starts it: a fork costs a
# few milliseconds, a replay about half of one.
AUTO_ITEMS_PER_PROCESS = 64
# And never more processes than this by itself: each holds caches of its own
# (blobs, parses, libgit2's objects: some tens of MiB), and past a few the
# serial walk bounds the gain. More is the user's call (--jobs N).
AUTO_MAX_PROCESSES = 8

CGROUP_ROOT = Path("/sys/fs/cgroup")
OWN_CGROUPS = Path("/proc/self/cgroup")
# No hierarchy is deeper than this in practice; a longer path is not walked.
MAX_DEPTH = 64
# /proc/self/cgroup is a few lines; more than this is not what it should be.
MAX_CGROUP_FILE = 1 << 16


def usable_cpus(root: Path = CGROUP_ROOT, own: Path = OWN_CGROUPS) -> int:
    """At least 1: the CPUs of this process's affinity (all of the machine's
    where affinity is unknown), no more than its control groups' quota."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    quota = cgroup_quota(root, own)
    return max(1, min(count, quota) if quota is not None else count)


def _read(path: Path, limit: int = 256) -> str | None:
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    return data.decode("ascii", "replace")


def _quota(quota: str, period: str) -> float | None:
    """CPUs a quota and a period allow; None for no limit or no number."""
    try:
        allowed, per = int(quota), int(period)
    except ValueError:
        return None
    if allowed <= 0 or per <= 0:
        return None  # -1 (v1) is no limit
    return allowed / per


def _v2(folder: Path) -> float | None:
    text = _read(folder / "cpu.max")
    fields = text.split() if text is not None else []
    if len(fields) != 2 or fields[0] == "max":
        return None
    return _quota(fields[0], fields[1])


def _v1(folder: Path) -> float | None:
    quota, period = _read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us")
    if quota is None or period is None:
        return None
    return _quota(quota.strip(), period.strip())


def _groups(path: str, mount: Path) -> list[Path]:
    """The folders of the group at ``path`` and of every group above it."""
    parts = [part for part in path.split("/") if part]
    if len(parts) > MAX_DEPTH or any(part in (".", "..") for part in parts):
        return []
    return [mount.joinpath(*parts[:depth]) for depth in range(len(parts), -1, -1)]


def cgroup_quota(root: Path = CGROUP_ROOT, own: Path = OWN_CGROUPS) -> int | None:
    """The fewest whole CPUs any of this process's control groups allows
    (rounded up: 1.5 CPUs keep two busy part of the time), or None."""
    text = _read(own, MAX_CGROUP_FILE)
    if text is None:
        return None
    found: list[float] = []
    for line in text.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            # cgroup v2: one hierarchy, mounted at the root (or at unified/ beside v1).
            for mount in (root, root / "unified"):
                found += [q for q in map(_v2, _groups(path, mount)) if q is not None]
        elif "cpu" in controllers.split(","):
            for mount in (root / controllers, root / "cpu", root / "cpu,cpuacct"):
                found += [q for q in map(_v1, _groups(path, mount)) if q is not None]
    return max(1, math.ceil(min(found))) if found else None
