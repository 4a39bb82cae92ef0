"""capsule render: the Markdown view, its fences, its escaping, its goldens."""

from __future__ import annotations

import importlib.util
import os
import pty
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.common.utils import unescapeAll
from markdown_it.token import Token

from governance.agents.render import _fenced, code, escape_info, fence_for, render_markdown
from governance.core.reader import read_capsule
from governance.output import printable
from support.gitrepo import POLICY, Repo, Result, packet_yaml

GOLDEN_DIR = Path(__file__).parent / "golden"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "make_render_golden", GOLDEN_DIR / "make_render_golden.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _parse(view: str) -> list[Token]:
    return MarkdownIt("commonmark").parse(view)


def _as_commonmark_sees(text: str) -> str:
    # A CommonMark parser normalises line endings and replaces NUL before it
    # reads a block; the view's bytes keep them (see test_fence_holds_exact_bytes).
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")


def _info(token: Token) -> str:
    # CommonMark: the info string is trimmed, then escapes and entities decoded.
    return unescapeAll(token.info.strip(" "))


def _parts(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(locator, text) of every part, in the view's order."""
    parts = [(document["packet"]["path"], document["packet"]["text"])]
    parts.append((document["context"]["path"], document["context"]["text"]))
    parts += [(read["locator"], read["text"]) for read in document["reads"]]
    return parts


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    generator = _generator()
    data = next(iter(generator.build_capsules(tmp_path_factory.mktemp("hostile")).values()))
    capsule = read_capsule(data)
    return capsule.document, render_markdown(capsule)


def test_render_goldens_regenerate_byte_for_byte(tmp_path: Path) -> None:
    built = _generator().build_all(tmp_path)
    assert built
    for path, data in built.items():
        assert path.read_bytes() == data, f"{path.name} drifted: rerun make_render_golden.py"


def test_render_golden_check_mode_fails_on_drift(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generator = _generator()
    copies = {}
    for packet, golden in generator.GOLDEN.items():
        copies[packet] = tmp_path / golden.name
        copies[packet].write_bytes(golden.read_bytes())
    monkeypatch.setattr(generator, "GOLDEN", copies)
    assert generator.main(["--check"]) == 0
    first = next(iter(copies.values()))
    first.write_bytes(first.read_bytes().replace(b"HOSTILE-1", b"HOSTILE-2", 1))
    assert generator.main(["--check"]) == 1


def test_fence_holds_exact_bytes_of_every_hostile_part(
    hostile: tuple[dict[str, Any], str],
) -> None:
    document, view = hostile
    fences = [t for t in _parse(view) if t.type == "fence"]
    parts = _parts(document)
    # One fence per part: no content closed its fence early or opened another.
    assert len(fences) == len(parts)
    for token, (locator, text) in zip(fences, parts, strict=True):
        body = text if text.endswith("\n") else text + "\n"
        assert token.content == _as_commonmark_sees(body), locator
        assert _info(token) == printable(locator)
        # The raw view carries the very bytes, CR included, between the fences.
        opening = token.markup + " " + escape_info(locator) + "\n"
        assert opening + body + token.markup + "\n" in view


def test_hostile_metadata_is_code_and_never_markup(hostile: tuple[dict[str, Any], str]) -> None:
    document, view = hostile
    tokens = _parse(view)
    # Only our own headings: one title, three sections, one per part.
    headings = [t.tag for t in tokens if t.type == "heading_open"]
    assert headings == ["h1", "h2", "h2", "h2"] + ["h3"] * len(_parts(document))
    inline = [child for t in tokens if t.type == "inline" for child in t.children or []]
    assert not [c for c in inline if c.type in ("html_inline", "em_open", "strong_open")]
    assert not [c for c in inline if c.type in ("link_open", "image")]
    assert not [t for t in tokens if t.type == "html_block"]
    spans = {c.content for c in inline if c.type == "code_inline"}
    expected = [document["question"], document["id"]]
    expected += [read["locator"] for read in document["reads"]]
    expected += [read["heading"]["text"] for read in document["reads"] if read["heading"]]
    for text in expected:
        assert printable(text) in spans, text
    # The separators in paths are shown as escapes, never as line breaks.
    assert "docs/line\\u2028break.md" in spans
    assert "docs/nel\\x85name.md" in spans
    assert "\u2028" not in view
    assert "\x85" not in view


def test_hostile_view_names_the_capsule_and_its_parts(
    hostile: tuple[dict[str, Any], str],
) -> None:
    document, view = hostile
    data = (GOLDEN_DIR / "HOSTILE-1.render.md").read_bytes().decode("utf-8")
    assert view == data
    assert f"- commit: {document['commit']}\n" in view
    assert document["trust"] in view
    for read in document["reads"]:
        assert f"- selected sha256: {read['selected_sha256']}\n" in view
        assert f"- lines: {read['lines'][0]}-{read['lines'][1]}\n" in view
    # The whole file without a final line feed says so above its fence.
    assert view.count("- ends without a line feed") == 1


def test_fence_width_is_one_more_than_the_longest_run() -> None:
    assert fence_for("plain") == "```"
    assert fence_for("````\n") == "~~~"
    assert fence_for("~~~~~\n```\n") == "````"
    # A tie goes to the backtick.
    assert fence_for("````` ~~~~~") == "``````"
    # A run in mid-line counts too: the rule is about the content, not lines.
    assert fence_for("a ``````` b ~~~") == "~~~~"


FENCE_TEXT = st.text(alphabet=st.sampled_from("`~ \n\tab#>-*\r"), max_size=80)


@settings(max_examples=300, deadline=None)
@given(text=FENCE_TEXT, locator=st.text(max_size=20))
def test_property_no_content_closes_its_fence(text: str, locator: str) -> None:
    view = "".join(["# title\n\n", *_fenced(text, locator), "\nafter\n"])
    tokens = _parse(view)
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1
    body = text if text.endswith("\n") or not text else text + "\n"
    assert fences[0].content == _as_commonmark_sees(body)
    assert _info(fences[0]) == printable(locator)
    # What follows the fence is still a paragraph of ours.
    assert tokens[-2].content == "after"


@settings(max_examples=300, deadline=None)
@given(text=st.text(min_size=1, max_size=40))
def test_property_code_span_reads_back_exactly(text: str) -> None:
    tokens = _parse(f"- label: {code(text)}\n")
    inline = [t for t in tokens if t.type == "inline"]
    assert len(inline) == 1
    children = inline[0].children or []
    assert [c.type for c in children] == ["text", "code_inline"]
    assert children[1].content == printable(text).replace("\n", " ")


def test_info_string_keeps_edge_spaces_and_backticks() -> None:
    view = "".join(["``` ", escape_info(" a`b&c\\d "), "\nx\n```\n"])
    assert _info(_parse(view)[0]) == " a`b&c\\d "


def _built(repo: Repo, cli: Callable[..., Result], tmp_path: Path) -> Path:
    out = tmp_path / "p1.json"
    assert cli(["build", "packets/P-1/packet.yml", "-o", str(out)], cwd=repo.path).code == 0
    return out


def test_cli_render_prints_the_view_exactly(
    repo: Repo, cli: Callable[..., Result], tmp_path: Path
) -> None:
    capsule = _built(repo, cli, tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "governance", "render", str(capsule)],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == render_markdown(read_capsule(capsule.read_bytes())).encode()
    assert done.stdout.startswith(b"# Capsule `P-1`\n")


def test_cli_render_output_file(repo: Repo, cli: Callable[..., Result], tmp_path: Path) -> None:
    capsule = _built(repo, cli, tmp_path)
    view = tmp_path / "view.md"
    result = cli(["render", str(capsule), "--format", "markdown", "-o", str(view)])
    assert result.code == 0
    assert result.out == ""
    assert view.read_bytes().decode() == render_markdown(read_capsule(capsule.read_bytes()))


@pytest.mark.parametrize(
    ("edit", "code_"),
    [
        (lambda d: d.replace(b'"id":"P-1"', b'"id": "P-1"'), "non_canonical"),
        (lambda d: d.replace(b"Second phase", b"Second phaze"), "capsule_corrupt"),
        (lambda d: d.replace(b"capsule/1", b"capsule/9"), "unsupported_schema"),
        (lambda d: b"not json", "capsule_malformed"),
    ],
)
def test_cli_render_refuses_a_capsule_failing_the_pre_checks(
    repo: Repo,
    cli: Callable[..., Result],
    tmp_path: Path,
    edit: Callable[[bytes], bytes],
    code_: str,
) -> None:
    capsule = _built(repo, cli, tmp_path)
    capsule.write_bytes(edit(capsule.read_bytes()))
    result = cli(["render", str(capsule)])
    assert result.code == 2
    assert result.out == ""
    assert f"[{code_}]" in result.err


def test_cli_render_on_a_terminal_escapes_controls(tmp_path: Path) -> None:
    # A content line with an escape sequence: a pipe gets it exact, a terminal
    # gets it shown as \x1b.
    r = Repo(tmp_path / "repo")
    r.write("policies/capsule.yml", POLICY)
    r.write("docs/ansi.md", "# Ansi\n\nred \x1b[31mtext\x1b[0m\n")
    r.write("packets/A-1/packet.yml", packet_yaml("A-1", ["docs/ansi.md"]))
    r.write("packets/A-1/context.md", "# Context\n")
    r.commit("ansi")
    capsule = tmp_path / "a.json"
    built = subprocess.run(
        [sys.executable, "-m", "governance", "build", "packets/A-1/packet.yml", "-o", str(capsule)],
        cwd=r.path,
        capture_output=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    piped = subprocess.run(
        [sys.executable, "-m", "governance", "render", str(capsule)],
        capture_output=True,
        check=True,
    )
    assert b"red \x1b[31mtext" in piped.stdout
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "governance", "render", str(capsule)],
            stdout=follower,
            stderr=subprocess.PIPE,
            check=False,
        )
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0
    assert b"\x1b" not in shown
    assert b"red \\x1b[31mtext" in shown
