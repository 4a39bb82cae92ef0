"""``path.py#py:Class.method``: a Python definition by its qualified name,
from its first decorator to its last line, through ``ast`` (issue 21,
item 2). It fails closed with codes of its own, is bounded before parsing,
and verifies by content: a definition moved with the same bytes is intact."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.core.locator import parse_locator
from governance.core.symbols import MAX_PYTHON_BYTES, symbols
from governance.errors import INVALID_LOCATOR, SourceError
from support.gitrepo import Repo, packet_yaml

PACKET = "packets/P-1/packet.yml"
CODE = textwrap.dedent(
    '''\
    """A module."""

    import functools


    def top():
        return 1


    @functools.cache
    @staticmethod
    def cached(x):
        """Cached."""
        return x


    class Shape:
        """A shape."""

        def area(self):
            return 0

        class Inner:
            def deep(self):
                def helper():
                    return 2

                return helper()


    async def fetch():
        return await thing()


    if True:
        def guarded():
            return 3
    '''
)


def with_reads(repo: Repo, reads: list[str], files: dict[str, str | bytes] | None = None) -> None:
    for path, content in (files or {"src/app.py": CODE}).items():
        repo.write(path, content)
    repo.write(PACKET, packet_yaml("P-1", reads))
    repo.commit()


def build(cli, repo: Repo) -> dict[str, Any]:
    result = cli(["build", PACKET], cwd=repo.path)
    assert result.code == 0, result.err
    return json.loads(result.out)


def failure(cli, repo: Repo) -> tuple[int, dict[str, Any]]:
    result = cli(["build", PACKET, "--json"], cwd=repo.path)
    assert "Traceback" not in result.err
    return result.code, json.loads(result.out)["error"]


def lines_of(text: str, first: int, last: int) -> str:
    return "".join(text.splitlines(keepends=True)[first - 1 : last])


@pytest.mark.parametrize(
    ("name", "first", "last"),
    [
        ("top", 6, 7),
        ("cached", 10, 14),  # from the first decorator, docstring included
        ("Shape", 17, 28),
        ("Shape.area", 20, 21),
        ("Shape.Inner.deep", 24, 28),
        ("Shape.Inner.deep.helper", 25, 26),
        ("fetch", 31, 32),
        ("guarded", 36, 37),  # inside an if block: its name is its own
    ],
)
def test_a_symbol_selects_its_definitions_lines(
    cli, repo: Repo, name: str, first: int, last: int
) -> None:
    with_reads(repo, [f"src/app.py#py:{name}"])
    read = build(cli, repo)["reads"][0]
    assert read["lines"] == [first, last]
    assert read["text"] == lines_of(CODE, first, last)
    assert read["heading"] is None


def test_a_missing_symbol_is_symbol_missing_naming_the_top_level(cli, repo: Repo) -> None:
    with_reads(repo, ["src/app.py#py:Shape.volume"])
    code, error = failure(cli, repo)
    assert (code, error["code"]) == (3, "symbol_missing")
    assert "top level: Shape, cached, fetch, guarded, top" in error["message"]


def test_two_definitions_of_one_name_are_symbol_ambiguous(cli, repo: Repo) -> None:
    source = (
        "class C:\n    @property\n    def x(self):\n        return 1\n\n"
        "    @x.setter\n    def x(self, v):\n        pass\n"
    )
    with_reads(repo, ["src/c.py#py:C.x"], {"src/c.py": source})
    code, error = failure(cli, repo)
    assert (code, error["code"], error["count"], error["lines"]) == (
        3, "symbol_ambiguous", 2, [[2, 4], [6, 8]],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("def broken(:\n", "invalid syntax"),
        ("x = (" * 300 + ")" * 300 + "\n", "too many nested parentheses"),
        ("x = " + "-" * 100_000 + "1\n", "nests too deeply"),
        ("x = 1" + "+1" * 100_000 + "\n", "nests too deeply"),
    ],
)
def test_a_file_ast_cannot_parse_is_python_invalid(cli, repo: Repo, content: str, why: str) -> None:
    with_reads(repo, ["src/bad.py#py:broken"], {"src/bad.py": content})
    code, error = failure(cli, repo)
    assert (code, error["code"]) == (3, "python_invalid")
    assert why in error["message"]


def test_a_file_that_is_not_utf8_is_refused(cli, repo: Repo) -> None:
    with_reads(repo, ["src/bad.py#py:f"], {"src/bad.py": b"def f():\n    return '\xff'\n"})
    code, error = failure(cli, repo)
    assert (code, error["code"]) == (3, "source_not_utf8")


def test_a_source_over_the_cap_is_refused_from_its_header(cli, repo: Repo) -> None:
    big = "def f():\n    return 1\n" + "# padding\n" * (MAX_PYTHON_BYTES // 10 + 1)
    with_reads(repo, ["src/big.py#py:f"], {"src/big.py": big})
    code, error = failure(cli, repo)
    assert (code, error["code"], error["limit"]) == (3, "source_too_large", MAX_PYTHON_BYTES)
    assert error["bytes"] == len(big)


def test_py_names_a_python_file_only() -> None:
    with pytest.raises(SourceError) as caught:
        parse_locator("docs/notes.md#py:f")
    assert caught.value.code == INVALID_LOCATOR
    for bad in ("src/a.py#py:", "src/a.py#py:1f", "src/a.py#py:a..b", "src/a.py#py:a b"):
        with pytest.raises(SourceError) as caught:
            parse_locator(bad)
        assert caught.value.code == INVALID_LOCATOR, bad
    selector = parse_locator("src/a.py#py:Shape.area")
    assert (selector.symbol, selector.slug, selector.lines, selector.whole) == (
        "Shape.area", None, None, False,
    )  # fmt: skip


def test_a_hostile_name_is_printed_escaped(cli, repo: Repo) -> None:
    with_reads(repo, ["src/app.py#py:x\x1b[31m"])
    result = cli(["build", PACKET], cwd=repo.path)
    assert result.code != 0
    assert "\x1b" not in result.err


# Verify: a symbol names content, not lines.


@pytest.fixture
def recorded(cli, repo: Repo, tmp_path: Path) -> Path:
    with_reads(repo, ["src/app.py#py:Shape.area"])
    target = tmp_path / "capsule.json"
    assert cli(["build", PACKET, "--output", str(target)], cwd=repo.path).code == 0
    return target


def verify(cli, repo: Repo, capsule: Path) -> tuple[int, dict[str, Any]]:
    result = cli(["verify", str(capsule), "--json"], cwd=repo.path)
    report = json.loads(result.out)
    return result.code, {part["locator"]: part for part in report["parts"]}


def test_verify_unchanged(cli, repo: Repo, recorded: Path) -> None:
    code, parts = verify(cli, repo, recorded)
    assert (code, parts["src/app.py#py:Shape.area"]["code"]) == (0, "verified_unchanged")


def test_verify_a_moved_definition_with_the_same_bytes_is_intact(
    cli, repo: Repo, recorded: Path
) -> None:
    repo.write("src/app.py", "import os\n\n" + CODE)
    repo.commit()
    code, parts = verify(cli, repo, recorded)
    part = parts["src/app.py#py:Shape.area"]
    assert (code, part["status"], part["code"]) == (0, "intact", "passage_moved")
    assert part["current"]["lines"] == [22, 23]


def test_verify_a_changed_body_is_stale(cli, repo: Repo, recorded: Path) -> None:
    repo.write("src/app.py", CODE.replace("        return 0\n", "        return 1\n"))
    repo.commit()
    code, parts = verify(cli, repo, recorded)
    part = parts["src/app.py#py:Shape.area"]
    assert (code, part["status"], part["code"]) == (1, "stale", "passage_stale")


def test_verify_a_removed_definition_is_missing(cli, repo: Repo, recorded: Path) -> None:
    repo.write("src/app.py", CODE.replace("def area(self):", "def size(self):"))
    repo.commit()
    code, parts = verify(cli, repo, recorded)
    part = parts["src/app.py#py:Shape.area"]
    assert (code, part["status"], part["code"]) == (1, "missing", "symbol_missing")


def test_a_record_of_symbols_replays_byte_for_byte(cli, repo: Repo) -> None:
    with_reads(repo, ["src/app.py#py:top", "src/app.py#py:Shape.Inner"])
    assert cli(["build", PACKET, "--record"], cwd=repo.path).code == 0
    repo.commit("record")
    result = cli(["audit", "--json"], cwd=repo.path)
    assert result.code == 0, result.out
    assert json.loads(result.out)["counts"]["identical"] == 1


def test_render_names_the_definition(cli, repo: Repo, recorded: Path) -> None:
    result = cli(["render", str(recorded)], cwd=repo.path)
    assert result.code == 0, result.err
    assert "- selection: the Python definition `Shape.area`\n" in result.out


# Every definition of a generated module selects exactly its own lines.

_NAMES = st.sampled_from(["a", "b", "run", "Thing", "_p"])


@st.composite
def modules(draw: st.DrawFn, depth: int = 0) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(_NAMES)
        kind = draw(st.sampled_from(["def", "async def", "class"]))
        decorated = draw(st.booleans())
        if decorated:
            lines.append("@decorator")
        lines.append(f"{kind} {name}():" if kind != "class" else f"class {name}:")
        body = draw(modules(depth + 1)) if depth < 2 and draw(st.booleans()) else ["pass"]
        lines += ["    " + line for line in body]
        lines.append("")
    return lines


@settings(max_examples=200)
@given(modules())
def test_property_each_unique_definition_is_its_own_lines(module: list[str]) -> None:
    text = "\n".join(module) + "\n"
    found = symbols(text, locator="m.py")
    names = [s.name for s in found]
    for symbol in found:
        body = text.splitlines()[symbol.first_line - 1 : symbol.last_line]
        head = body[0].lstrip()
        assert head.startswith(("@decorator", "def ", "async def ", "class "))
        assert head.startswith("@") or symbol.name.rsplit(".", 1)[-1] in head
        if names.count(symbol.name) == 1:
            assert symbol.kind in ("def", "async def", "class")


# capsule outline of a .py file: every definition with the selector that builds it.


def test_outline_lists_every_definition_with_its_selector(cli, repo: Repo) -> None:
    with_reads(repo, ["src/app.py"])
    result = cli(["outline", "src/app.py", "--json"], cwd=repo.path)
    assert result.code == 0, result.err
    listed = json.loads(result.out)["definitions"]
    assert [(d["name"], d["kind"], d["lines"]) for d in listed] == [
        (s.name, s.kind, [s.first_line, s.last_line]) for s in symbols(CODE, locator="src/app.py")
    ]
    area = next(d for d in listed if d["name"] == "Shape.area")
    assert area["locator"] == "src/app.py#py:Shape.area"
    assert area["bytes"] == len(lines_of(CODE, 20, 21).encode())
    assert area["depth"] == 1


def test_outline_text_is_a_table_and_a_summary(cli, repo: Repo) -> None:
    with_reads(repo, ["src/app.py"])
    result = cli(["outline", "src/app.py"], cwd=repo.path)
    assert result.code == 0, result.err
    header, *rows = result.out.splitlines()
    assert header.split() == ["LINES", "BYTES", "TOKENS", "DEFINITION", "SELECTOR"]
    assert any(r.split()[-3:] == ["def", "area", "src/app.py#py:Shape.area"] for r in rows)
    assert "9 definitions" in result.err


def test_every_selector_outline_proposes_builds_its_lines(cli, repo: Repo) -> None:
    source = CODE + "\n\ndef top():\n    return 'again'\n"  # top is now defined twice
    with_reads(repo, ["src/app.py"], {"src/app.py": source})
    listed = json.loads(cli(["outline", "src/app.py", "--json"], cwd=repo.path).out)
    tops = [d["locator"] for d in listed["definitions"] if d["name"] == "top"]
    assert tops == ["src/app.py#L6-L7", "src/app.py#L40-L41"]
    locators = [d["locator"] for d in listed["definitions"]]
    repo.write(PACKET, packet_yaml("P-1", locators[:8]))
    repo.commit()
    reads = build(cli, repo)["reads"]
    assert [r["lines"] for r in reads] == [d["lines"] for d in listed["definitions"][:8]]


def test_outline_of_python_that_does_not_parse_is_python_invalid(cli, repo: Repo) -> None:
    with_reads(repo, ["src/bad.py"], {"src/bad.py": "def broken(:\n"})
    result = cli(["outline", "src/bad.py", "--json"], cwd=repo.path)
    assert (result.code, json.loads(result.out)["error"]["code"]) == (3, "python_invalid")
