from __future__ import annotations

import pytest

from governance.core.globs import PathGlobs


def matches(patterns: list[str], path: str) -> bool:
    globs = PathGlobs(patterns)
    state = globs.start
    parts = path.split("/")
    for part in parts[:-1]:
        state = globs.step(state, part)
        if not globs.descends(state):
            return False
    return globs.matches(globs.step(state, parts[-1]))


@pytest.mark.parametrize(
    ("patterns", "path", "expected"),
    [
        (["packets/*/capsules/*.json"], "packets/P-1/capsules/0123456789ab.json", True),
        (["packets/*/capsules/*.json"], "packets/P-1/capsules/old/x.json", False),
        (["packets/*/capsules/*.json"], "packets/capsules/x.json", False),
        (["packets/*/capsules/*.json"], "packets/P-1/capsules/x.yml", False),
        (["packets/*/capsules/*.json"], "Packets/P-1/capsules/x.json", False),
        (["packets/*/capsules/*.json"], "packets/P-1/capsules/.json", True),
        (["evidence/**/*.json"], "evidence/x.json", True),
        (["evidence/**/*.json"], "evidence/a/b/c/x.json", True),
        (["evidence/**/*.json"], "other/evidence/x.json", False),
        (["**/*.json"], "x.json", True),
        (["**/*.json"], "a/b/x.json", True),
        (["a/**/b/*.json"], "a/b/x.json", True),
        (["a/**/b/*.json"], "a/x/y/b/x.json", True),
        (["a/**/b/*.json"], "a/x/y/c/x.json", False),
        (["r/?.json"], "r/a.json", True),
        (["r/?.json"], "r/ab.json", False),
        (["r/[ab].json"], "r/b.json", True),
        (["r/[ab].json"], "r/c.json", False),
        (["x/*.json", "y/*.json"], "y/1.json", True),
        (["x/*.json", "y/*.json"], "z/1.json", False),
    ],
)
def test_glob_matching(patterns: list[str], path: str, expected: bool) -> None:
    assert matches(patterns, path) is expected


def test_literal_segments_are_looked_up_not_listed() -> None:
    globs = PathGlobs(["packets/*/capsules/*.json", "evidence/*.json"])
    assert globs.literals(globs.start) == frozenset({"packets", "evidence"})
    inside = globs.step(globs.start, "packets")
    assert globs.literals(inside) is None
    assert globs.literals(globs.step(inside, "P-1")) == frozenset({"capsules"})
    assert globs.literals(PathGlobs(["**/*.json"]).start) is None
