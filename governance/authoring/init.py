"""``capsule init``: a commented default policy and one example packet for a
repository, written only where nothing is in the way."""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pygit2

from governance.core import adr
from governance.core.capsule import CONTEXT_FILE, PACKET_FILE, PACKETS_DIR, POLICY_PATH
from governance.core.paths import refuse_linked_folders
from governance.core.policy import Policy
from governance.core.snapshot import Snapshot
from governance.errors import FILE_EXISTS, NO_WORKING_TREE, OUTPUT_FAILED, CapsuleError, UsageError

EXAMPLE_ID = "EXAMPLE-1"
EXAMPLE_PACKET = f"{PACKETS_DIR}/{EXAMPLE_ID}/{PACKET_FILE}"
EXAMPLE_CONTEXT = f"{PACKETS_DIR}/{EXAMPLE_ID}/{CONTEXT_FILE}"
# The example reads the repository's README whole when it is committed, clean
# and this small: with the packet and context it fits the default target.
README = "README.md"
README_MAX_BYTES = 24_000

CI_WORKFLOW = "hooks/github-workflow.yml"
# Where the snippet pins git-capsule: a full commit id, to be replaced by the reviewed one.
PIN = "0" * 40
PRE_COMMIT = f"""\
repos:
  - repo: https://github.com/OWNER/git-capsule
    rev: {PIN}  # the full commit id you reviewed: a tag can move
    hooks:
      - id: capsule-packets
      - id: capsule-records
      - id: capsule-push
"""


def policy_text() -> str:
    """The default policy, one comment per value; it parses to ``Policy()``."""
    d = Policy()
    return f"""\
# The capsule policy: every capsule is built under the policy committed at
# its build commit, so a later change here never changes an old capsule.
#
# These values are the limits of {adr.ADR}, which capsule/1 enforces: change
# any to tighten it (a lower target, hard limit or read count, a larger
# reserve), never to loosen it; a looser number is refused by build, check
# and the hooks as loosens_adr_limit (exit 2).

# The most a capsule may cost, in estimated tokens (the capsule file's
# UTF-8 bytes / 3, rounded up); at most {adr.MAX_TARGET_TOKENS}. A packet may set its own
# budget.target_tokens, held to the same limit.
target_tokens: {d.target_tokens}

# No capsule may exceed this, less reserve_tokens, whatever its target;
# at most {adr.MAX_HARD_LIMIT_TOKENS}.
hard_limit_tokens: {d.hard_limit_tokens}

# Tokens kept free under the hard limit for the agent's own answer; at
# least {adr.MIN_RESERVE_TOKENS}.
reserve_tokens: {d.reserve_tokens}

# The most required_reads a packet may list (at most {adr.MAX_REQUIRED_READS}); split a
# packet that needs more.
max_required_reads: {d.max_required_reads}

# How tokens are estimated; {d.estimator} is the only estimator of capsule/1.
estimator: {d.estimator}

# The largest file (bytes) a path#heading read may parse ({d.max_heading_source_bytes >> 20} MiB).
max_heading_source_bytes: {d.max_heading_source_bytes}

# The most lines that may be headings in the file of a path#heading read.
max_heading_count: {d.max_heading_count}
"""


def _noted(value: str, note: str) -> str:
    return f"{value:<32}# {note}"


def packet_text(reads_readme: bool) -> str:
    scope = f"[{README}]" if reads_readme else "[docs/]"
    reads = "\n" + _noted(f"  - {README}", "a whole file") if reads_readme else " []"
    return f"""\
# An execution packet: a unit of work an agent is asked to continue, and the
# exact evidence it must read first. Build it into a capsule at a commit:
#   capsule build {EXAMPLE_PACKET}
{_noted(f"id: {EXAMPLE_ID}", "the name of the packet's folder")}
title: Example - replace with the name of the work
objective: Replace with what the work must achieve, in one sentence.
{_noted(f"scope: {scope}", "what the work may change")}
{_noted("dependencies: []", "ids of packets to finish first")}
{_noted("contracts:", "rules the work must keep")}
  - Replace with a rule the work must keep.
# Each read is `path` (a whole file) or `path#heading-slug` (one heading's
# section; `capsule outline PATH` lists every heading with its selector and
# cost). At most max_required_reads of {POLICY_PATH}.
required_reads:{reads}
"""


CONTEXT_TEXT = f"""\
# Context: {EXAMPLE_ID}

Why this work exists, what has been decided and what must not change. This
file is always included whole in the capsule, beside packet.yml. Replace this
text.
"""


@dataclass(frozen=True)
class Planned:
    path: str  # repository-relative
    data: bytes


@dataclass(frozen=True)
class Plan:
    files: list[Planned]
    reads: list[str]  # the example packet's required_reads


def plan(repo: pygit2.Repository) -> Plan:
    """What ``init`` writes in ``repo``."""
    readme = _readme_fits(repo)
    return Plan(
        files=[
            Planned(POLICY_PATH, policy_text().encode("utf-8")),
            Planned(EXAMPLE_PACKET, packet_text(readme).encode("utf-8")),
            Planned(EXAMPLE_CONTEXT, CONTEXT_TEXT.encode("utf-8")),
        ],
        reads=[README] if readme else [],
    )


def _readme_fits(repo: pygit2.Repository) -> bool:
    """Whether the README is a clean, committed UTF-8 file the example can read
    whole: read through the snapshot at HEAD, as the build will."""
    try:
        snapshot = Snapshot.at(repo, "HEAD")
        source = snapshot.source(README)
        if snapshot.size(source) > README_MAX_BYTES:
            return False
        snapshot.check_worktree(source)
        snapshot.read(source).decode("utf-8")
    except (CapsuleError, UnicodeDecodeError):
        return False
    return True


def _blocked(root: Path, path: str) -> str | None:
    """Why ``path`` cannot be created under ``root`` without touching anything
    already there: the path itself exists, or one of its folders is not a
    folder (a link among them is ``refuse_linked_folders``'s to refuse)."""
    parts = path.split("/")
    for depth in range(1, len(parts) + 1):
        walked = "/".join(parts[:depth])
        try:
            st = os.lstat(root / walked)
        except FileNotFoundError:
            return None
        if depth == len(parts):
            return f"{walked} exists"
        if not stat.S_ISDIR(st.st_mode):
            return f"{walked} is not a folder"
    return None  # pragma: no cover - the last part always returns


def write(repo: pygit2.Repository, planned: list[Planned]) -> list[str]:
    """Create every planned file in the work tree, or none: any of them there
    already (or a folder of it a link or a file) is refused, naming each."""
    if repo.workdir is None:
        raise UsageError(
            "capsule init writes into a work tree; this repository is bare",
            code=NO_WORKING_TREE,
        )
    root = Path(repo.workdir)
    for item in planned:
        refuse_linked_folders(item.path, base=os.fspath(root))
    blocked = [(p.path, why) for p in planned if (why := _blocked(root, p.path)) is not None]
    if blocked:
        raise UsageError(
            "capsule init never overwrites: "
            + "; ".join(why for _, why in blocked)
            + "; nothing was written",
            code=FILE_EXISTS,
            paths=[path for path, _ in blocked],
        )
    written: list[Path] = []
    made: list[Path] = []
    try:
        for item in planned:
            target = root / item.path
            for folder in reversed(target.parents):
                if folder == root or root not in folder.parents:
                    continue
                if not folder.exists():
                    folder.mkdir()
                    made.append(folder)
            # O_EXCL: a file that appeared since the check is never replaced.
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
            written.append(target)
            with os.fdopen(fd, "wb") as handle:
                handle.write(item.data)
    except OSError as exc:
        for path in reversed(written):
            with contextlib.suppress(OSError):
                path.unlink()
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        code = FILE_EXISTS if isinstance(exc, FileExistsError) else OUTPUT_FAILED
        raise UsageError(
            f"{exc.filename}: cannot write: {exc.strerror}; nothing was written", code=code
        ) from None
    return [item.path for item in planned]
