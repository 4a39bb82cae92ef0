"""Every heading of one Markdown file at a snapshot, or every definition of a
Python file: its selector, lines and cost."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from typing import Any

from governance.core import symbols
from governance.core.budget import estimate_tokens
from governance.core.excerpt import (
    Parsed,
    check_heading_source,
    decode_source,
    parse_source,
    refuse_heading_count,
    section_excerpt,
)
from governance.core.headings import heading_lines, line_count, split_lines
from governance.core.locator import parse_locator
from governance.core.policy import heading_limits
from governance.core.repository import Source
from governance.core.snapshot import Snapshot
from governance.core.tree import Tree
from governance.core.unnamed import candidate_locator
from governance.errors import INVALID_LOCATOR, SOURCE_TOO_LARGE, SourceError


@dataclass(frozen=True)
class Entry:
    level: int
    text: str
    slug: str
    # The locator naming this heading alone: qualified where its slug
    # repeats, structural or with an ordinal where that is not enough.
    locator: str
    first_line: int
    last_line: int
    n_bytes: int
    depth: int
    parent: int | None  # index of the nearest enclosing heading in the outline

    @property
    def estimated_tokens(self) -> int:
        return estimate_tokens(self.n_bytes)

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "text": self.text,
            "slug": self.slug,
            "locator": self.locator,
            "lines": [self.first_line, self.last_line],
            "bytes": self.n_bytes,
            "estimated_tokens": self.estimated_tokens,
            "depth": self.depth,
            "parent": self.parent,
        }


@dataclass(frozen=True)
class Outline:
    path: str
    commit: str
    blob: str
    n_bytes: int
    line_count: int
    entries: tuple[Entry, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "commit": self.commit,
            "blob": self.blob,
            "bytes": self.n_bytes,
            "estimated_tokens": estimate_tokens(self.n_bytes),
            "lines": self.line_count,
            "headings": [entry.to_json() for entry in self.entries],
        }


def outline(snapshot: Snapshot, path: str) -> Outline:
    """The outline of ``path`` at ``snapshot``, read with the same fail-closed
    rules as a build (tracked regular blob, safe path, UTF-8, clean in the
    working tree when the snapshot checks it)."""
    return _outline(snapshot, path)[0]


@dataclass(frozen=True)
class Resolved:
    """What one locator names: the heading's outline entry, and whether the
    fragment was read as GitHub's anchor (``notes-1``) or as a selector."""

    asked: str
    github_anchor: bool
    outline: Outline
    index: int

    @property
    def entry(self) -> Entry:
        return self.outline.entries[self.index]

    def to_json(self) -> dict[str, Any]:
        return {
            "asked": self.asked,
            "read_as": "github_anchor" if self.github_anchor else "selector",
            "path": self.outline.path,
            "commit": self.outline.commit,
            "blob": self.outline.blob,
            **self.entry.to_json(),
        }


def resolve(snapshot: Snapshot, locator: str) -> Resolved:
    """The heading ``locator`` names, and the selector to build it by. A
    single slug that is GitHub's anchor of a heading (``notes-1`` for the
    second ``Notes``) is read as GitHub reads it; any other fragment as a
    build reads it, failing as a build fails."""
    selector = parse_locator(locator)
    if selector.slug is None:
        raise SourceError(
            f"{locator}: --resolve takes a heading locator, path#anchor or path#selector",
            code=INVALID_LOCATOR,
            locator=locator,
        )
    found, tree, source, parsed = _outline(snapshot, selector.path)
    if not selector.steps and not selector.parents:
        index = tree.anchors.get(selector.slug)
        if index is not None:
            return Resolved(locator, True, found, index)
    excerpt = section_excerpt(selector, source, parsed)
    index = next(i for i, e in enumerate(found.entries) if e.first_line == excerpt.first_line)
    return Resolved(locator, False, found, index)


def _outline(snapshot: Snapshot, path: str) -> tuple[Outline, Tree, Source, Parsed]:
    source = snapshot.source(path)
    # Parsed whole, as a heading read parses it: bounded the same way.
    limits = heading_limits(snapshot)
    limit = limits.source_bytes
    size = snapshot.size(source)
    if size > limit:
        raise SourceError(
            f"{path}: {size:,} bytes {snapshot.where}, more than the {limit:,} a heading read "
            "may parse (max_heading_source_bytes of the policy)",
            code=SOURCE_TOO_LARGE,
            locator=path,
            bytes=size,
            limit=limit,
        )
    snapshot.check_worktree(source)
    data = snapshot.read(source)
    # Before the parse: what follows it grows with the headings.
    if line_count(data) > limits.headings:  # else no more lines that may be headings
        refuse_heading_count(path, path, heading_lines(data), limits.headings, snapshot.where)
    parsed = parse_source(data, locator=path)
    lines, tree = parsed.lines, parsed.tree
    # Byte offset of the start of each line, and of the end of the last one.
    starts = [0, *itertools.accumulate(len(line) for line in lines)]
    entries = tuple(
        Entry(
            level=section.heading.level,
            text=section.heading.text,
            slug=section.heading.slug,
            locator=candidate_locator(path, tree, index),
            first_line=section.first_line,
            last_line=section.last_line,
            n_bytes=starts[section.last_line] - starts[section.first_line - 1],
            depth=tree.depth(index),
            parent=tree.parent[index],
        )
        for index, section in enumerate(tree.sections)
    )
    found = Outline(
        path=path,
        commit=snapshot.commit_id,
        blob=source.blob_id,
        n_bytes=len(data),
        line_count=len(lines),
        entries=entries,
    )
    return found, tree, source, parsed


@dataclass(frozen=True)
class Definition:
    """One ``def``, ``async def`` or ``class`` of a Python file, with the
    locator naming it: ``path#py:NAME``, or its lines where the name is
    defined more than once (which a ``py:`` read refuses)."""

    name: str
    kind: str
    locator: str
    first_line: int
    last_line: int
    n_bytes: int
    depth: int

    @property
    def estimated_tokens(self) -> int:
        return estimate_tokens(self.n_bytes)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "locator": self.locator,
            "lines": [self.first_line, self.last_line],
            "bytes": self.n_bytes,
            "estimated_tokens": self.estimated_tokens,
            "depth": self.depth,
        }


@dataclass(frozen=True)
class PythonOutline:
    path: str
    commit: str
    blob: str
    n_bytes: int
    line_count: int
    definitions: tuple[Definition, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "commit": self.commit,
            "blob": self.blob,
            "bytes": self.n_bytes,
            "estimated_tokens": estimate_tokens(self.n_bytes),
            "lines": self.line_count,
            "definitions": [d.to_json() for d in self.definitions],
        }


def python_outline(snapshot: Snapshot, path: str) -> PythonOutline:
    """Every definition of the Python file ``path``, outermost first in source
    order, read and bounded as a ``py:`` read is (core.symbols)."""
    source = snapshot.source(path)
    selector = parse_locator(f"{path}#py:outline")
    check_heading_source(snapshot, selector, source, heading_limits(snapshot).source_bytes)
    snapshot.check_worktree(source)
    data = snapshot.read(source)
    text = decode_source(data, locator=path)
    found = symbols.symbols(text, locator=path)
    lines = split_lines(data)
    starts = [0, *itertools.accumulate(len(line) for line in lines)]
    names = Counter(symbol.name for symbol in found)
    definitions = tuple(
        Definition(
            name=s.name,
            kind=s.kind,
            locator=(
                f"{path}#py:{s.name}"
                if names[s.name] == 1
                else f"{path}#L{s.first_line}-L{s.last_line}"
            ),
            first_line=s.first_line,
            last_line=s.last_line,
            n_bytes=starts[s.last_line] - starts[s.first_line - 1],
            depth=s.name.count("."),
        )
        for s in found
    )
    return PythonOutline(
        path=path,
        commit=snapshot.commit_id,
        blob=source.blob_id,
        n_bytes=len(data),
        line_count=len(lines),
        definitions=definitions,
    )
