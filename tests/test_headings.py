from __future__ import annotations

import json
import logging
import re
import string
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.core import headings
from governance.core.headings import (
    Heading,
    Section,
    line_count,
    parse_headings,
    split_lines,
)
from governance.core.slug import github_slug
from governance.core.tree import Tree

_FIXTURES: list[dict[str, str]] = json.loads(
    (Path(__file__).parent / "data" / "github-slugger-fixtures.json").read_text(encoding="utf-8")
)


Parse = Callable[[str], list[Heading]]
# Every heading test runs twice: through parse_headings (the line scan where it
# answers) and through the markdown-it parse alone.
BOTH = pytest.mark.parametrize(
    "parse", [parse_headings, headings._parse_fully], ids=["scan_first", "markdown_it"]
)


def _slugs(parse: Parse, text: str) -> list[str]:
    return [heading.slug for heading in parse(text)]


@BOTH
def test_atx_levels_and_lines(parse: Parse) -> None:
    text = "# One\n## Two\n### Three\n#### Four\n##### Five\n###### Six\n####### Seven\n"
    headings = parse(text)
    assert [(h.level, h.text, h.line, h.end_line) for h in headings] == [
        (1, "One", 1, 1),
        (2, "Two", 2, 2),
        (3, "Three", 3, 3),
        (4, "Four", 4, 4),
        (5, "Five", 5, 5),
        (6, "Six", 6, 6),
    ]


@BOTH
def test_closing_hashes_are_not_text(parse: Parse) -> None:
    assert parse("## Closed ##\n### Also   ###   \n") == [
        Heading(line=1, end_line=1, level=2, text="Closed", slug="closed"),
        Heading(line=2, end_line=2, level=3, text="Also", slug="also"),
    ]


@BOTH
def test_setext_headings_span_their_underline(parse: Parse) -> None:
    text = "Intro\n\nBig\n===\n\nSmall\n---\n"
    assert parse(text) == [
        Heading(line=3, end_line=4, level=1, text="Big", slug="big"),
        Heading(line=6, end_line=7, level=2, text="Small", slug="small"),
    ]


@BOTH
def test_multiline_setext_keeps_newline_which_the_slug_deletes(parse: Parse) -> None:
    (heading,) = parse("First\nsecond  \nthird\n=====\n")
    assert (heading.line, heading.end_line) == (1, 4)
    assert heading.text == "First\nsecond\nthird"
    assert heading.slug == "firstsecondthird"


@BOTH
@pytest.mark.parametrize(
    "text",
    [
        "```\n# fenced\n```\n",
        "~~~md\n# tilde fenced\n~~~\n",
        "````\n```\n# nested fence\n```\n````\n",
        "Para\n\n    # indented code\n",
        "<div>\n# inside html\n</div>\n",
        "<!--\n# in a comment\n-->\n",
        "---\ntitle: x\n# yaml comment\n---\n",
        "---  \n# trailing spaces on the fence\n...\t\n",
        "####### seven hashes\n",
        "#no-space\n",
        "\\# escaped\n",
    ],
)
def test_not_headings(parse: Parse, text: str) -> None:
    assert parse(text) == []


@BOTH
def test_front_matter_keeps_line_numbers(parse: Parse) -> None:
    text = "---\ntitle: Doc\ntags: [a]\n---\n# After\n\nBody\n---\n"
    assert parse(text) == [
        Heading(line=5, end_line=5, level=1, text="After", slug="after"),
        Heading(line=7, end_line=8, level=2, text="Body", slug="body"),
    ]


@BOTH
def test_front_matter_must_start_on_line_one(parse: Parse) -> None:
    assert _slugs(parse, "\n---\n# Visible\n---\n") == ["visible"]


@BOTH
def test_unclosed_front_matter_is_a_thematic_break(parse: Parse) -> None:
    assert parse("---\n# Visible\n") == [
        Heading(line=2, end_line=2, level=1, text="Visible", slug="visible")
    ]


def _blank_line_by_line(text: str) -> str:
    # The rule as it reads: the first line is `---` (trailing spaces or tabs
    # allowed), the first later line that is `---` or `...` closes it, and
    # every line through the closing one is blanked, its line end kept.
    lines = re.findall(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+", text)
    if not lines or not re.fullmatch(r"---[ \t]*", lines[0].rstrip("\r\n")):
        return text
    for index in range(1, len(lines)):
        if re.fullmatch(r"(?:---|\.\.\.)[ \t]*", lines[index].rstrip("\r\n")):
            blanked = [line[len(line.rstrip("\r\n")) :] for line in lines[: index + 1]]
            return "".join(blanked + lines[index + 1 :])
    return text


@settings(max_examples=500)
@given(
    st.lists(
        st.sampled_from(["---", "...", "--- ", "---\t", "-- -", "....", "a: 1", "# x", "", " ---"]),
        max_size=8,
    ),
    st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=8, max_size=8),
    st.booleans(),
)
def test_front_matter_is_blanked_as_the_rule_reads(
    lines: list[str], ends: list[str], last_end: bool
) -> None:
    # The blanking finds its closing line by one search; the rule read line by line agrees.
    text = "".join(line + end for line, end in zip(lines, ends, strict=False))
    if lines and not last_end:
        text = text[: -len(ends[len(lines) - 1])]
    assert headings._blank_front_matter(text) == _blank_line_by_line(text)


@BOTH
def test_block_quote_and_list_headings_count(parse: Parse) -> None:
    headings = parse("> # Quoted\n\n- ## Listed\n")
    assert [(h.line, h.level, h.slug) for h in headings] == [(1, 1, "quoted"), (3, 2, "listed")]


@BOTH
def test_inline_code_is_kept(parse: Parse) -> None:
    assert _slugs(parse, "## The `foo` API\n") == ["the-foo-api"]


@BOTH
def test_emphasis_and_link_markup_is_dropped(parse: Parse) -> None:
    (heading,) = parse("## *Fast* [path](x)\n")
    assert heading.text == "Fast path"
    assert heading.slug == "fast-path"


@BOTH
def test_strikethrough_html_and_entities(parse: Parse) -> None:
    (heading,) = parse("# ~~Old~~ <b>new</b> &amp; \\*star\\*\n")
    assert heading.text == "Old new & *star*"
    assert heading.slug == "old-new--star"


@BOTH
def test_images_contribute_nothing(parse: Parse) -> None:
    (heading,) = parse("# ![Logo *alt*](logo.png) Project\n")
    # GitHub keeps the space left behind by the image, hence the leading dash.
    assert heading.text == " Project"
    assert heading.slug == "-project"


@BOTH
def test_autolink_text_is_kept(parse: Parse) -> None:
    assert _slugs(parse, "# See <https://example.com/a>\n") == ["see-httpsexamplecoma"]


@BOTH
def test_symbols_and_ampersand(parse: Parse) -> None:
    assert _slugs(parse, "## C++ & Rust\n") == ["c--rust"]


@BOTH
def test_slug_is_github_slug_of_text(parse: Parse) -> None:
    text = "# A *b* `c`\n## ![i](x) D <em>e</em>\nF\nG\n---\n"
    for heading in parse(text):
        assert heading.slug == github_slug(heading.text)


@BOTH
def test_heading_after_table(parse: Parse) -> None:
    assert parse("| a | b |\n|---|---|\n| 1 | 2 |\n# After\n") == [
        Heading(line=4, end_line=4, level=1, text="After", slug="after")
    ]


@BOTH
def test_crlf_and_cr_line_numbers(parse: Parse) -> None:
    text = "# One\r\n\r\nbody\r\n## Two\rtext\r### Three"
    headings = parse(text)
    assert [(h.line, h.slug) for h in headings] == [(1, "one"), (4, "two"), (6, "three")]
    assert line_count(text.encode()) == 6


@BOTH
def test_byte_order_mark_is_ignored(parse: Parse) -> None:
    assert parse("\ufeff# Title\n") == [
        Heading(line=1, end_line=1, level=1, text="Title", slug="title")
    ]


@BOTH
def test_heading_on_last_line_without_newline(parse: Parse) -> None:
    data = b"para\n\n# Last"
    (heading,) = parse(data.decode())
    assert heading.line == line_count(data) == 3


_DOC = """\
# Top
intro
## Alpha
alpha body
### Alpha detail
detail body
## Beta
beta body
# Next
next body
## Beta
again
"""


def sections_for_slug(headings: list[Heading], total: int, slug: str) -> list[Section]:
    tree = Tree(headings, total)
    return [tree.sections[i] for i in tree.by_slug.get(slug, [])]


@BOTH
def test_subsection_stays_inside_its_parent(parse: Parse) -> None:
    headings = parse(_DOC)
    total = line_count(_DOC.encode())
    assert sections_for_slug(headings, total, "alpha") == [
        Section(heading=headings[1], first_line=3, last_line=6)
    ]
    assert sections_for_slug(headings, total, "top") == [
        Section(heading=headings[0], first_line=1, last_line=8)
    ]
    assert sections_for_slug(headings, total, "alpha-detail") == [
        Section(heading=headings[2], first_line=5, last_line=6)
    ]


@BOTH
def test_last_section_runs_to_end_of_file(parse: Parse) -> None:
    headings = parse(_DOC)
    (section,) = sections_for_slug(headings, 12, "next")
    assert (section.first_line, section.last_line) == (9, 12)


@BOTH
def test_repeated_heading_gives_every_section(parse: Parse) -> None:
    headings = parse(_DOC)
    found = sections_for_slug(headings, 12, "beta")
    assert [(s.first_line, s.last_line) for s in found] == [(7, 8), (11, 12)]
    assert all(s.heading.slug == "beta" for s in found)


@BOTH
def test_missing_slug_gives_nothing(parse: Parse) -> None:
    assert sections_for_slug(parse(_DOC), 12, "gamma") == []


@BOTH
def test_setext_section_starts_at_its_text_line(parse: Parse) -> None:
    text = "Title\n=====\nbody\n\nSub\n---\nmore\n\nOther\n=====\n"
    headings = parse(text)
    assert [(h.line, h.end_line, h.level) for h in headings] == [(1, 2, 1), (5, 6, 2), (9, 10, 1)]
    (section,) = sections_for_slug(headings, line_count(text.encode()), "title")
    assert (section.first_line, section.last_line) == (1, 8)


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        (b"", []),
        (b"a", [b"a"]),
        (b"a\n", [b"a\n"]),
        (b"a\r\nb", [b"a\r\n", b"b"]),
        (b"a\rb\n", [b"a\r", b"b\n"]),
        (b"\n\n", [b"\n", b"\n"]),
        (b"a\r\r\nb", [b"a\r", b"\r\n", b"b"]),
        # Only \r and \n end lines; other "line breaks" are text to markdown-it.
        (b"a\x0bb\x0cc\x1cd\xc2\x85e\xe2\x80\xa8f", [b"a\x0bb\x0cc\x1cd\xc2\x85e\xe2\x80\xa8f"]),
    ],
)
def test_split_lines(data: bytes, lines: list[bytes]) -> None:
    assert split_lines(data) == lines
    assert line_count(data) == len(lines)


# What split_lines was: every run up to and including \r\n, \r or \n, and a last
# run without one.
_LINES_BY_REGEX = re.compile(rb"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")
# Bytes that are a line break somewhere (str.splitlines, Unicode, ASCII
# separators) beside arbitrary ones, so every mix of them comes up.
_BREAKING = st.lists(
    st.sampled_from([b"\r", b"\n", b"\r\n", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e"])
    | st.sampled_from([b"\x85", b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"a", b" "])
    | st.binary(max_size=3)
).map(b"".join)


@settings(max_examples=500)
@given(st.binary() | _BREAKING)
def test_split_lines_splits_where_the_regular_expression_did(data: bytes) -> None:
    assert split_lines(data) == _LINES_BY_REGEX.findall(data)


@given(st.binary())
def test_split_lines_round_trips(data: bytes) -> None:
    lines = split_lines(data)
    assert b"".join(lines) == data
    assert len(lines) == line_count(data)
    assert all(line for line in lines)


_LINE_KINDS = ["# Heading", "## Sub heading", "paragraph text", "", "  ", "> # quoted"]


@BOTH
@given(
    st.lists(
        st.tuples(st.sampled_from(_LINE_KINDS), st.sampled_from(["\n", "\r\n", "\r"])),
        min_size=1,
        max_size=12,
    ),
    st.booleans(),
)
def test_heading_lines_agree_with_split_lines(
    parse: Parse, rows: list[tuple[str, str]], terminate_last: bool
) -> None:
    text = "".join(body + end for body, end in rows)
    if not terminate_last:
        text = text[: -len(rows[-1][1])]
    lines = split_lines(text.encode())
    headings = parse(text)
    expected = [
        number for number, line in enumerate(lines, start=1) if line.lstrip(b"> ").startswith(b"#")
    ]
    assert [h.line for h in headings] == expected
    for heading in headings:
        assert lines[heading.line - 1].rstrip(b"\r\n").endswith(heading.text.encode())


def _escape(text: str) -> str:
    return "".join("\\" + ch if ch in string.punctuation else ch for ch in text)


@BOTH
def test_github_rendered_fixture_document(parse: Parse) -> None:
    # github-slugger's fixtures are the anchors GitHub gave to a gist made of one "# input"
    # heading per case (or the case's markdownOverwrite, used where edge spaces matter).
    # Rebuilding that document and replaying the slugger's counter must give every anchor.
    document = "\n\n".join(
        entry.get("markdownOverwrite") or "# " + _escape(entry["input"]) for entry in _FIXTURES
    )
    headings = parse(document)
    assert len(headings) == len(_FIXTURES) == 78
    occurrences: dict[str, int] = {}
    anchors: list[str] = []
    for heading in headings:
        anchor = heading.slug
        while anchor in occurrences:
            occurrences[heading.slug] += 1
            anchor = f"{heading.slug}-{occurrences[heading.slug]}"
        occurrences[anchor] = 0
        anchors.append(anchor)
    assert anchors == [entry["expected"] for entry in _FIXTURES]
    assert [h.text for h in headings] == [entry["input"] for entry in _FIXTURES]


@BOTH
def test_reference_link_in_heading_resolves_with_the_documents_definitions(parse: Parse) -> None:
    # Inline markup of headings is parsed apart from the block pass; the link
    # reference definitions the block pass collects must still apply.
    text = "## [Title][ref] and [Other][missing]\n\n[ref]: https://example.invalid/\n"
    (heading,) = parse(text)
    assert heading.text == "Title and [Other][missing]"
    assert heading.slug == "title-and-othermissing"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="\\`*_~[]!<&\r\n\x00"), max_size=40))
def test_plain_heading_text_renders_as_itself(text: str) -> None:
    # parse_headings skips the inline parse of a heading with none of the
    # characters an inline rule starts at: markdown-it must agree it is plain.
    content = text.strip(" \t")
    if not content:
        return
    inline = headings._parser().parseInline(content, {})[0]
    assert headings._render(inline.children or []) == content


@BOTH
@settings(max_examples=120, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 6), st.text(st.characters(blacklist_categories=["Cs"]), max_size=30)
        ),
        min_size=1,
        max_size=6,
    )
)
def test_skipping_the_inline_parse_changes_no_heading(
    parse: Parse, lines: list[tuple[int, str]]
) -> None:
    # The same document with every heading's inline parse forced must give the
    # same headings, texts and slugs.

    text = "".join(f"{'#' * level} {title}\n\nBody.\n\n" for level, title in lines)
    fast = parse(text)
    saved = headings._MARKUP
    headings._MARKUP = re.compile(r"(?s).|^")
    try:
        slow = parse(text)
    finally:
        headings._MARKUP = saved
    assert fast == slow


def test_rule_logging_is_skipped_only_while_nobody_listens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    text = "# Title\n\nSome text.\n\n## Part\n"
    assert headings._parse_fully(text)
    for name in headings._RULE_LOGGERS:
        # Restored after the parse: the class's debug() again.
        assert "debug" not in vars(logging.getLogger(name))
    with caplog.at_level(logging.DEBUG, logger="markdown_it"):
        headings._parse_fully(text)
    assert any(record.name.startswith("markdown_it.rules_block.") for record in caplog.records)


_HEADING_TEXTS = st.lists(
    st.sampled_from(
        [
            "Title",
            "`code`",
            "*em*",
            "a_b_",
            "&amp;",
            "&copy; x",
            "\\*",
            "![i](x) T",
            "<b>x</b>",
            "~~s~~",
        ]
    )
    | st.text(alphabet="ab `*_&;<>!~\\é", max_size=8),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200)
@given(_HEADING_TEXTS, st.lists(st.integers(1, 6), min_size=8, max_size=8))
def test_a_remembered_heading_is_the_heading_parsed_afresh(
    texts: list[str], levels: list[int]
) -> None:
    # The last heading of each source text is remembered: the same headings
    # whether remembered, forgotten or parsed in full, also when the same
    # texts come again at other lines or levels.
    doc = "".join(
        f"{'#' * level} {text}\n\nbody\n" for text, level in zip(texts, levels, strict=False)
    )
    first = parse_headings(doc)
    again = parse_headings(doc)
    headings._RENDERED.clear()
    afresh = parse_headings(doc)
    assert first == again == afresh == headings._parse_fully(doc)
    moved = "para\n\n" + doc.replace("\n# ", "\n## ")
    assert parse_headings(moved) == headings._parse_fully(moved)
    assert parse_headings(doc) == first


def test_remembered_heading_texts_are_bounded() -> None:
    for n in range(headings._RENDERED_MAX + 10):
        parse_headings(f"# Heading {n}\n")
    assert len(headings._RENDERED) <= headings._RENDERED_MAX
    long = "x" * (headings._RENDERED_LONGEST + 1)
    assert parse_headings(f"# {long}\n")[0].text == long
    assert long not in headings._RENDERED


def _markdown_it_render(content: str) -> str:
    return headings._render(headings._parser().parseInline(content, {})[0].children or [])


@settings(max_examples=600)
@given(st.text(alphabet="`` a\u00a0\u3000b#-:é\t", max_size=24))
def test_code_spans_render_as_markdown_it_renders_them(content: str) -> None:
    # Headings whose only markup is backticks are rendered without markdown-it.
    assert headings._code_spans(content) == _markdown_it_render(content)


@pytest.mark.parametrize(
    "content",
    [
        *["`a`", "`` a ` b ``", "` `", "`  `", "` a`", "``a`", "a `b` c `d", "`a` `` ` ``"],
        *["```", "` \t `", "` \u00a0 `", "`\u3000`"],
    ],
)
def test_code_spans_in_headings(content: str) -> None:
    assert headings._code_spans(content) == _markdown_it_render(content)
    assert parse_headings(f"# {content}\n") == headings._parse_fully(f"# {content}\n")
