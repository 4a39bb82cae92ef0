"""Real git repositories in temp folders, with reproducible commit ids: the
policy text, the packet helper and the git environment, once for the tests
and the benchmarks."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

POLICY = """\
target_tokens: 12000
hard_limit_tokens: 16000
reserve_tokens: 1500
max_required_reads: 8
estimator: utf8_bytes_div_3_ceil
"""

ROADMAP = """\
# Roadmap

Intro text.

## Phase 1

First phase.

## Phase 2

Second phase, with é and 日本.

### Details

Nested details stay in phase 2.

## Phase 3

Last.
"""


# Who commits: pinned, so commit ids are the same on every machine.
IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.invalid",
}


def isolated(home: Path | str) -> dict[str, str]:
    """The variables that make every git alike: no system or user configuration
    (``home`` is HOME, its ``gitconfig`` the global one) and a pinned identity."""
    return {
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(Path(home) / "gitconfig"),
        **IDENTITY,
    }


def dates(tick: int) -> dict[str, str]:
    """Author and committer dates for the ``tick``-th git call of a repository."""
    when = f"2026-01-01T00:00:{tick % 60:02d}Z"
    return {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}


def clean_environ() -> dict[str, str]:
    """This process's environment without any GIT_* variable (a hook's GIT_DIR
    or GIT_INDEX_FILE must not reach another repository's git)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def git_env(home: Path | str) -> dict[str, str]:
    """A whole environment for git outside pytest (the benchmarks): clean and
    isolated. Inside the tests, conftest.py sets ``isolated`` for every test."""
    return {**clean_environ(), **isolated(home)}


def packet_yaml(
    packet_id: str,
    reads: Sequence[str],
    *,
    title: str | None = None,
    objective: str = "Carry the work forward.",
    **extra: str,
) -> str:
    lines = [
        f"id: {packet_id}",
        f"title: {title or f'Work item {packet_id}'}",
        f"objective: {objective}",
        "scope: docs",
        "dependencies: []",
        "contracts: []",
    ]
    lines += [f"{key}: {value}" for key, value in extra.items()]
    lines.append("required_reads:" + ("" if reads else " []"))
    # JSON strings are valid YAML double-quoted scalars, escapes included.
    lines += [f"  - {json.dumps(read)}" for read in reads]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


class Repo:
    """A real git repository in a temp folder, with reproducible commit ids."""

    def __init__(
        self, path: Path, env: Mapping[str, str] | None = None, *, init: bool = True
    ) -> None:
        """``env``: the environment git runs in (default: this process's, which
        conftest.py isolates for every test); ``init=False`` for a repository
        that exists already."""
        self.path = path
        self.env = env
        self._tick = 0
        if init:
            path.mkdir(parents=True, exist_ok=True)
            self.git("init", "-q", "-b", "main")

    def git(self, *args: str, check: bool = True, when: str | None = None) -> str:
        """Run git here; ``when`` (an ISO 8601 date) dates what it commits
        instead of the next tick's date."""
        self._tick += 1
        stamp = dates(self._tick)
        if when is not None:
            stamp = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
        env = {**(os.environ if self.env is None else self.env), **stamp}
        done = subprocess.run(
            ["git", *args], cwd=self.path, env=env, check=check, capture_output=True, text=True
        )
        return done.stdout.strip()

    def partial_clone(self, into: Path, object_filter: str) -> Path:
        """A clone of this repository at ``into`` with ``--filter=object_filter``
        (``blob:none``, ``tree:0``) and no checkout, as a CI runner might make."""
        self.git("config", "uploadpack.allowFilter", "true")
        subprocess.run(
            ["git", "clone", "-q", f"--filter={object_filter}", "--no-checkout",
             f"file://{self.path}", str(into)],
            env=self.env, check=True, capture_output=True,
        )  # fmt: skip
        return into

    def write(self, rel: str, content: str | bytes) -> Path:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_bytes(content.encode("utf-8"))
        return target

    def commit(self, message: str = "change", *, when: str | None = None) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message, when=when)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")


def error_of(
    cli: Callable[..., Result], repo: Repo, argv: Sequence[str]
) -> tuple[int, dict[str, Any]]:
    """The exit code and the ``error`` object of ``capsule ARGV --json`` in ``repo``,
    which must end in a coded error, never a traceback."""
    result = cli([*argv, "--json"], cwd=repo.path)
    assert "Traceback" not in result.err
    error: dict[str, Any] = json.loads(result.out)["error"]
    return result.code, error


def write_raw_tree(path: Path, data: bytes) -> str:
    """Write ``data`` as a tree object as given (``--literally``), as an old,
    foreign or hostile git might have; its id."""
    done = subprocess.run(
        ["git", "hash-object", "-t", "tree", "-w", "--literally", "--stdin"],
        cwd=path,
        input=data,
        capture_output=True,
        check=True,
        env=clean_environ(),
    )
    return done.stdout.decode().strip()


def commit_with_a_tree_for_a_file(repo: Repo, path: str = "docs/notes.md") -> str:
    """A commit beside HEAD whose ``path`` entry (mode 100644, one folder deep)
    names a tree object, which only a hand-made or corrupt object says."""
    folder, name = path.split("/")
    git_repo = pygit2.Repository(str(repo.path))
    head = git_repo[repo.head()]
    assert isinstance(head, pygit2.Commit)
    tree = head.tree[folder]
    assert isinstance(tree, pygit2.Tree)
    raw = b"".join(
        b"%o %s\x00%s" % (e.filemode, e.name.encode(), (tree.id if e.name == name else e.id).raw)
        for e in tree
    )
    forged = write_raw_tree(repo.path, raw)
    builder = git_repo.TreeBuilder(head.tree)
    builder.insert(folder, pygit2.Oid(hex=forged), pygit2.enums.FileMode.TREE)
    who = pygit2.Signature("T", "t@example.invalid", 1767225600, 0)
    return str(git_repo.create_commit(None, who, who, "forged", builder.write(), [head.id]))


def blob_claiming(path: Path, size: int) -> str:
    """A loose blob object whose header says ``size`` bytes and whose body is
    a few bytes (and not what its id hashes): git's object header, which the
    size checks read, is real; any read of the whole blob fails. A check that
    passes on it judged the size from the header and never read the blob. Its
    id, for a tree entry (``git update-index --cacheinfo``)."""
    raw = b"blob %d\x00" % size + b"# A few bytes\n"
    oid = hashlib.sha1(b"claiming " + raw).hexdigest()
    folder = path / ".git" / "objects" / oid[:2]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / oid[2:]).write_bytes(zlib.compress(raw))
    return oid
