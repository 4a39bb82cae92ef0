"""The heading line scan gives the full parse's headings wherever it answers:
parse_headings (scan first) against the markdown-it parse alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from governance.core.headings import Heading, _blank_front_matter, _parse_fully, parse_headings
from governance.core.headings_blocks import BLOCK_NAMES, UNSETTLED_NAMES
from governance.core.headings_labels import TRIM
from governance.core.headings_scan import _LINE, scan_headings

ROOT = Path(__file__).resolve().parents[1]


def scanned(text: str) -> list[tuple[int, int, int, str]] | None:
    """The scan's answer on what markdown-it is given for ``text``."""
    return scan_headings(_blank_front_matter(text.removeprefix("\ufeff")))


def answers_as_the_parse(text: str, answers: bool) -> None:
    """The scan answers ``text`` (or declines it, ``answers`` False), and
    parse_headings gives the full parse's headings either way."""
    assert (scanned(text) is not None) is answers
    assert parse_headings(text) == _parse_fully(text)


# The pieces generated documents are made of: every construct that can change
# what a line means (containers, fences, indentation, setext, tables, link
# definitions, HTML), so the differential test meets the cases the scan must
# decline as well as those it answers.
INDENTS = ["", "", "", " ", "  ", "   ", "    ", "     ", "\t", " \t", "  \t"]
MARKERS = ["- ", "* ", "+ ", "1. ", "1) ", "10. ", "-\t", "-   ", "-      ", "2.  ", "- - "]
QUOTES = ["", "", "", "", "", "", "", "", "> ", ">", "> > ", ">>"]
BODIES = [
    "# Title", "## Sub *em* `code`", "### Three ###", "#### four #", "###### six",
    "####### seven", "#no space", "#", "# ", "## a#", "# a | b", "# & amp &amp; \\#",
    "# ![img](x) after", "# [link](url)", "# [r]", "# \u202eodd\u3000", "#\tTab",
    "```", "```", "```py", "````", "~~~", "~~~", "~~~ info", "``` a`b", "```` ~", "``` |x",
    "~~~~~", "```  ", "`` `",
    "===", "---", "...", "- - -", "***", "-", "1.", "* ",
    "| a | b |", "|---|---|", "--- | ---", ":-: | -", "a | b",
    "[r]: /url", "[r]:", '"title"', "[r]",
    "<div>", "</div>", "<!-- c -->", "<!--", "-->", "<!-->", "a --> b", "<pre>", "</pre>",
    "<script>", "</SCRIPT>", "<style x>", "<?php", "?>", "<!DOCTYPE html>", "<![CDATA[",
    "]]>", "<details>", "<summary>x</summary>", '<a href="x">', "<img src=x />", "<b>t</b>",
    "<search>", "<source>", "</DIV>", "<http://x>", "<div|x>", "<", ">", ">>", "> > # q",
    ">\t# t", ">  # two", "[a]: /u", "[A  b]: /u", "# [a]", "# [a b]", "# [x][a]", "# [\u1e9e]",
    "[\u1e9e]: /u", "[ss]: /u", "[a", "b]: /u", "# x \\[a\\]", "# [a\\]b]", "Title", "===",
    "# [a](/x)", "# ![a](b.png)", "# [a](javascript:x)", "# [a](DATA:x)", "# [[a]](/x)",
    "# [a](/x y)", "# [a](b)(c)", "# [a](<b>)", "# [a](`b)`", "# [a]()", "# `[a]`",
    "# `[a]` [a]", "# [`a`]", "# ``[a]` ``", "# `` `[a]``", "# <b>`</b>[a]`",
    "text", "text", "text", "more *text*", "", "", "", "  ", "Caf\u00e9 \u65e5\u672c",
]  # fmt: skip
NESTED = ["- - - - - - - - - a", "- - - - - - - - - - a", " " * 16 + "- a", " " * 18 + "- a"]

line = st.one_of(
    st.builds(
        lambda indent, markers, quote, body: indent + "".join(markers) + quote + body,
        st.sampled_from(INDENTS),
        st.lists(st.sampled_from(MARKERS), max_size=2),
        st.sampled_from(QUOTES),
        st.sampled_from(BODIES),
    ),
    st.sampled_from(NESTED),
)
documents = st.builds(
    lambda lines, end: "\n".join(lines) + end,
    st.lists(line, max_size=24),
    st.sampled_from(["\n", ""]),
)


@settings(
    max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
@given(documents)
def test_the_scan_gives_the_parse_s_headings_or_declines(text: str) -> None:
    answer = scanned(text)
    full = _parse_fully(text)
    assert parse_headings(text) == full
    if answer is not None:
        assert [(h.line, h.end_line, h.level) for h in full] == [a[:3] for a in answer]


# Whole lines of the kinds the scan's later rules judge: list items it cannot
# bound (lazy lines), text at column 0 after a blank line, tags alone on a
# line, definitions after paragraphs, items, fences and comments, headings
# linking to them (the pieces of the random runs that checked those rules).
LINES = [
    "- a", "1. a", "* **x**", "- # h", "- [a]: /q", "  - c", "    - b", "lazy", "text", "  text",
    "", "", "", "# H", " # H1", "  # h", "    # x", "# [a]", "# [a][b]", "## x [b]", "# `[b]` [a]",
    "# [a](/u)", "[a]: /x", '[a]: /x "t"', '"t"', "(t)", "[b]: /y", "  [a]: /x", "    [a]: /x",
    "> [a]: /z", "[a]: javascript:x", "[a]: <x>", "```", " ```", "  ```", "~~~", "<div>", "</div>",
    "<!--", "-->", "<br>", "<a href=x>", "</span>", "***", "---", "===", "| t |", "|---|",
    "    code", "\tx", "> q", "Title",
    # A reviewer's kinds, which found two holes the ones above did not.
    "- 1.", "- 1)", "  1.", "- - x", "-", "[foo]: /u", "[bar]: /v", "# [foo][bar](/u)", "# [bar]",
    "- [bar]: /x", "> [foo]: /y", "  <br>", "<span>", "</x>", "a | b", "--|--",
]  # fmt: skip
line_documents = st.builds(
    lambda lines, end: "\n".join(lines) + end,
    st.lists(st.sampled_from(LINES), max_size=14),
    st.sampled_from(["\n", ""]),
)


@settings(
    max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
@given(line_documents)
def test_lines_of_lists_links_and_tags_give_the_parse_s_headings(text: str) -> None:
    assert parse_headings(text) == _parse_fully(text)


# Lazy lines: a blockquote's lines, then lines without '>' that markdown-it
# may take into it (a paragraph's lazy continuation, or a line that ends the
# quote reading, after a fence, a list item, an HTML block or a heading in it).
QUOTED = ["> ", ">", "> > ", ">  ", "> - ", "> 1. ", ">     ", "    > ", "> ```", "> <div>"]
LAZY = [
    "lazy", "lazy text", "1.5 x", "2023 was", "2. x", "1) x", "- x", "* x", "+ x", "[r]: /u",
    "[a] b", "<div>", "<!-- c", "***", "---", "___", "===", "=x", "|---|", "a | b", "| a |",
    "    # x", "    code", "     - y", "  # h", "   lazy", "\tlazy", "# after", "```", "~~~",
    "`x` y", "_a_", "*a*", "\\# no", "Title", "",
]  # fmt: skip
quoted_line = st.one_of(
    st.builds(str.__add__, st.sampled_from(QUOTED), st.sampled_from(BODIES)),
    st.sampled_from(LAZY),
)
quoted_documents = st.builds(
    lambda lines, end: "\n".join(lines) + end,
    st.lists(quoted_line, max_size=16),
    st.sampled_from(["\n", ""]),
)


@settings(
    max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
@given(quoted_documents)
def test_lazy_lines_of_blockquotes_give_the_parse_s_headings(text: str) -> None:
    test_the_scan_gives_the_parse_s_headings_or_declines.hypothesis.inner_test(text)  # type: ignore[attr-defined]


# Each was a divergence of the first line scan (it answered, and wrongly).
DIVERGENCES = {
    "fence_in_list_item_closed_by_the_item": ("- a\n\n  ```\n# x\n```\n", ["x"]),
    "unclosed_fence_in_list_item": ("- a\n  ```\n# x\n", ["x"]),
    "tilde_fence_in_ordered_item": ("1. a\n\n   ~~~\n# y\n~~~\n", ["y"]),
    "blockquote_after_list_marker": ("- > # x\n", ["x"]),
    "html_after_list_marker": ("- <div>\n\n  text\n  <div>\n  # x\n", []),
    "ten_nested_lists_on_one_line": ("- - - - - - - - - - a\n\n# x\n", []),
    "ten_nested_lists_by_indent": ("".join("  " * i + "- a\n" for i in range(10)) + "# x\n", []),
    "heading_as_table_header": ("# a | b\n--- | ---\n", []),
    "fence_as_table_header": ("``` | x\n--- | ---\n# h\n```\n", ["h"]),
    "setext_underline_indented_in_list_item": ("- a\n     ---\n", ["a"]),
    "setext_underline_after_tab_in_list_item": ("- a\n\t---\n", ["a"]),
    # The item continues lazily, so the scan did not bound it: "text" is its
    # line, and the underline at column 0 a lazy one of its paragraph, no
    # heading's (found by a random differential run).
    "setext_underline_under_a_line_of_an_unbounded_item": (
        "x\n- a\n  lazy\nb\n  # h\n  text\n===\n",
        ["h"],
    ),
    # A lone '-' matched the pattern as a setext underline: under no paragraph
    # it is an empty list item, and the line indented after it is its content.
    "empty_item_read_as_an_underline": ("- \n    # Title\n", ["Title"]),
    "empty_item_without_a_space": ("text\n\n-\n  ## Sub\n", ["Sub"]),
    # A '<' line that opens no HTML block is a paragraph's text, which a tag
    # alone (kind 7) cannot interrupt: it was taken for a settled block.
    "tag_line_after_a_paragraph_of_angle_text": ("<http://x>\n</pre>\n# Title\n", ["Title"]),
    # An item line followed by another was settled as an item even where it
    # cannot interrupt the paragraph above (ordered, not from 1): it is text.
    "ordered_item_lines_continuing_a_paragraph": ("####### 7\n10. a\n10. # T\n", []),
}


@pytest.mark.parametrize(("text", "texts"), DIVERGENCES.values(), ids=DIVERGENCES.keys())
def test_known_divergences(text: str, texts: list[str]) -> None:
    assert [h.text for h in _parse_fully(text)] == texts
    assert [h.text for h in parse_headings(text)] == texts


@pytest.mark.parametrize("depth", range(1, 13))
@pytest.mark.parametrize("form", ["chained", "two", "three", "tab"])
def test_deep_lists(depth: int, form: str) -> None:
    # markdown-it drops the rest of a document past 20 levels (10 lists).
    if form == "chained":
        text = "- " * depth + "a\n"
    else:
        step = {"two": "  ", "three": "   ", "tab": "\t"}[form]
        text = "".join(step * i + "- a\n" for i in range(depth))
    text += "\n# After\n"
    assert parse_headings(text) == _parse_fully(text)


_DEEP_LINES = "".join("  " * i + "- x\n" for i in range(12))


@pytest.mark.parametrize(
    "text",
    [
        # YAML in a fence of a list item, as design documents hold it.
        "- item:\n\n  ```yaml\n"
        + "".join("  " + line + "\n" for line in _DEEP_LINES.split("\n")[:-1])
        + "  ```\n\n# After\n",
        # Indented code at the top level, and an HTML block.
        "Text\n\n"
        + "".join("    " + line + "\n" for line in _DEEP_LINES.split("\n")[:-1])
        + "\n# After\n",
        "<div>\n" + _DEEP_LINES + "</div>\n\n# After\n",
    ],
    ids=["fence_in_item", "indented_code", "html_block"],
)
def test_deep_list_lines_where_no_list_nests_are_no_list(text: str) -> None:
    # The nesting is judged where lists nest, not on every line: these answer.
    assert scanned(text) is not None
    assert parse_headings(text) == _parse_fully(text)


def test_a_deep_list_in_an_item_the_scan_did_not_bound_is_declined() -> None:
    # The item continues lazily, so its lines are judged as they stand; the
    # innermost is 10 lists deep, where markdown-it drops the rest.
    text = "- a\nlazy\n" + "".join("  " * i + "- x\n" for i in range(1, 12)) + "\n# After\n"
    assert scanned(text) is None
    assert parse_headings(text) == _parse_fully(text)


@pytest.mark.parametrize(
    "text",
    [
        "Para\ngraph\n=====\n",
        "> a\nlazy\n> # x\n",
        "> a\nlazy\n===\n",
        "> a\n    # lazy, indented\n",
        "> # Title\nlazy\n2. x\n    # x\n",
        "> # Title\nlazy\n---\n",
        "> ```\nfoo\n> # x\n",
        # A tag alone after indented code starts an HTML block of kind 7.
        "    code\n<a href=x>\n# h\n",
        "<search>\n# a\n",
        ">\tx\n# y\n",
        # A list item the scan could not bound (a paragraph's line, perhaps):
        # what follows may be in it.
        "para\n2. a\n\n  > # q\n",
        "para\n2. a\n\n    # x\n",
        "- a\nlazy\n    # x\n",
        # Definitions the scan can neither prove nor rule out: after a
        # thematic break or indented code, under a marker, a refused one.
        "# [ref][r]\n\n***\n[r]: /u\n",
        # After an item that holds a definition, not a paragraph: at column
        # 0 it ends the list and is a definition (found by a random run).
        "# See [c]\n\n- [a]: /x\n[c]: /c\n",
        "# [ref][r]\n\n    code\n[r]: /u\n",
        "# [A]\n\n> [a]: /u\n",
        "a\r\n# b\r\n",
        "x\x00\n# y\n",
        "# [a]\n\n- [a]: /u\n",
        "# [a]\n\n  - [a]: /u\n",
        "# [a]\n\n[a]: javascript:x\n",
        "- a\n\n    ```\n  # in the fence\n",
    ],
)
def test_it_declines_what_a_line_scan_cannot_settle(text: str) -> None:
    assert scanned(text) is None
    assert parse_headings(text) == _parse_fully(text)


@pytest.mark.parametrize(
    "text",
    [
        "# One #\n\n```sh\n# not a heading\n```\n\n## Two ##\n~~~\n# no\n~~~~\n### Three\n",
        "```py\ndef f():\n    # a comment\n\treturn 1\n```\n# After\n",
        "- item\n\n  ```\n  # in the fence\n  ```\n# After\n",
        "- item\n   ```\n   # in the fence\n   ```\n  ## In the item\n",
        "# One\n---\n## Two\n\n```\nx\n```\n---\n",
        "| a | b |\n|---|---|\n# After | table\n\ntext\n",
        "---\ntitle: x\n# a comment\n---\n# H\n",
        "---\n# No front matter\n",
        "```\n<div>\n> quoted\n- # x\n```\n# After\n",
        "### `capsule init [--json]`\n\ntext [a](b)\n",
        "<!-- toc -->\n- [Summary](#summary)\n<!-- /toc -->\n\n## Summary\n",
        "<!--\n# not a heading\n\n-->\n# After\n",
        "<details>\n<summary>x</summary>\n# inside\n\n# After\n",
        "<pre>\n\n# no\n</pre>\n# Yes\n",
        "> # Quoted\n> text\n>\n> ```\n> # code\n> ```\n\n# After\n",
        "> a\n---\n# After\n",
        "- item\n\n    ```sh\n    # a comment\n    ```\n\n  # In the item\n",
        "1. a\n   - b\n\n     > # Deep\n2. c\n# After\n",
        "Title\n=====\n\nSub\n---\n",
        "- a\n  ===\n",
        "  > # at column 2, in no list item\n",
        "    # indented code\n\n\t# and a tab\n",
        # A closer indented 5 closes a fence of a list item whose content is at 2.
        "- a\n\n  ```\n  # x\n     ```\n  # y\n",
        "# [Optional] Beta\n\n[kep]: https://example.com\n",
        "| a | b |\n|---|---|\n| <div> | x |\n\n# After\n",
        # Lazy lines of a blockquote, with nothing after the first that could
        # be a heading or start a block.
        "> Note: a paragraph\ncontinued lazily\n> and quoted again\n\n## After\n",
        "> # Quoted\n> ```\nlazy, ending the quote's reading\n\n# After\n",
        "> - item\nlazy [link](x) `code`\n\n- # Next item\n",
    ],
)
def test_it_answers_plain_documents(text: str) -> None:
    answer = scanned(text)
    assert answer is not None
    assert parse_headings(text) == _parse_fully(text)
    expected = [(h.line, h.end_line, h.level) for h in _parse_fully(text)]
    assert expected == [a[:3] for a in answer]


def _markdown_files() -> list[Path]:
    found = [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("packets/**/*.md")]
    return sorted(found)


def _rfcs() -> list[Path]:
    return sorted((ROOT / "tests" / "data" / "rfcs").rglob("*.md"))


def test_the_vendored_rfcs() -> None:
    # Real documents nobody here wrote: HTML, quotes, nested lists and fences.
    answered = 0
    for path in _rfcs():
        text = path.read_text(encoding="utf-8")
        assert parse_headings(text) == _parse_fully(text), path
        answered += scanned(text) is not None
    assert len(_rfcs()) == 50
    assert answered >= 47  # 22 before blockquotes, HTML and list items were scanned


def test_block_names_are_markdown_its() -> None:
    from markdown_it.common.html_blocks import block_names  # noqa: PLC0415 (this test only)

    # Where versions differ the scan declines ("search" is CommonMark 0.31's).
    assert set(block_names) - UNSETTLED_NAMES == BLOCK_NAMES - UNSETTLED_NAMES


def test_this_repositorys_markdown() -> None:
    answered = 0
    for path in _markdown_files():
        text = path.read_text(encoding="utf-8")
        assert parse_headings(text) == _parse_fully(text), path
        answered += scanned(text) is not None
    assert answered >= len(_markdown_files()) // 2


@settings(max_examples=400, deadline=None)
@given(st.text(st.sampled_from("ab é#$%+-:=@^{}|/.,;?'\"()0123456789\t`*_~[]!<>&\\"), max_size=20))
def test_heading_text_renders_as_the_parse_does(title: str) -> None:
    text = f"# {title}\n\npara\n\n## x {title} y ##\n"
    assert parse_headings(text) == _parse_fully(text)


def test_the_line_pattern_has_the_groups_the_scan_unpacks() -> None:
    # scan_headings takes a line's groups at once, in this order.
    assert list(_LINE.groupindex.items()) == [
        ("indent", 1),
        ("atx", 2),
        ("rest", 3),
        ("fence", 4),
        ("info", 5),
        ("under", 6),
        ("block", 7),
        ("item", 8),
        ("ref", 9),
    ]
    assert _LINE.groups == 9


def test_trim_is_markdown_its() -> None:
    from markdown_it.common.utils import MD_TRIM_CHARS  # noqa: PLC0415 (only this test needs it)

    assert set(TRIM) == set(MD_TRIM_CHARS)


@pytest.mark.parametrize(
    "document",
    [
        "# One\\n\\ntext\\n\\n## Two\\n",
        "<!-- toc -->\\n> # One\\n\\n- item\\n\\n  ## Two\\n",
    ],
)
def test_a_plain_file_needs_no_markdown_parser(document: str) -> None:
    probe = (
        "import sys\n"
        "from governance.core.headings import parse_headings\n"
        f"print(len(parse_headings('{document}')))\n"
        "print('markdown_it' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.split() == ["2", "False"]


def test_headings_are_one_type() -> None:
    # The scan path builds the same Heading values the parse does.
    assert parse_headings("# A\n") == [Heading(line=1, end_line=1, level=1, text="A", slug="a")]


@pytest.mark.parametrize("marker", ["- ", "1. "])
def test_a_long_run_of_list_markers_is_declined_in_bounded_memory(marker: str) -> None:
    # One line of a million list markers: the nesting check counted them with a
    # repeated group, whose state grew by some 170 bytes a character (1.2 GiB
    # for a file of 7 MiB). Declined within 256 MiB of address space.
    probe = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (256 << 20, 256 << 20))\n"
        "from governance.core.headings_scan import scan_headings\n"
        f"print(scan_headings({marker!r} * (1 << 20) + 'x\\n'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert done.stdout.split() == ["None"], done.stderr[-2000:]


@pytest.mark.parametrize(
    ("heading", "answers"),
    [
        # An inline link's text is its own, defined label or not.
        ("# Rust RFCs - [RFC Book](https://x.io/) - [Active RFC List](https://y.rs/)", True),
        ("# See ![Active RFC List](list.png)", True),
        # Where markdown-it may read the label as a reference after all: a
        # destination validateLink refuses, one it may not parse, a nested label.
        ("# See [Active RFC List](javascript:go)", False),
        ("# See [Active RFC List](Data:x)", False),
        ("# See [Active RFC List](a b)", False),
        ("# See [Active RFC List](<a>)", False),
        ("# See [[Active RFC List]](/a)", False),
        ("# See [Active RFC List]", False),
    ],
)
def test_an_inline_link_s_label_is_no_reference(heading: str, answers: bool) -> None:
    # Defined in a quote, where the scan proves no definition.
    text = f"{heading}\n\nbody\n\n> [Active RFC List]: ../README.md#active-rfc-list\n"
    answers_as_the_parse(text, answers)


@pytest.mark.parametrize(
    ("heading", "answers"),
    [
        ("### Impact on `[replace]`", True),
        ("### Impact on ``[replace]` `` and `` `[replace]``", True),
        # A bracket outside the code may still open a link.
        ("### Impact on `x` [replace]", False),
        ("### Impact on [replace] `x`", False),
        # Its label holds the backticks: not the label defined.
        ("### Impact on [`replace`]", True),
        # Before a backtick, a tag or an escape may come first: not judged.
        ("### Impact on <b>`</b>[replace]`", False),
    ],
)
def test_brackets_in_code_spans_open_no_link(heading: str, answers: bool) -> None:
    text = f"{heading}\n\n```toml\n[replace]\n```\n\n> [replace]: https://x\n"
    answers_as_the_parse(text, answers)


@pytest.mark.parametrize(
    ("between", "answers"),
    [
        # A heading, a fence or a block at column 0 or 1 ends every list: an
        # indented line after it is the top level's (indented code) again.
        ("# Next\n", True),
        ("```\ncode\n```\n", True),
        ("<div>\nx\n</div>\n", True),
        ("> quote\n", True),
        # So does a line at column 0 after a blank line, which no item holds
        # (and no paragraph continues lazily).
        ("plain text\n", True),
        # A heading or text at column 2 may be the item's: the list goes on.
        ("  # In the item\n", False),
        ("  more of the item\n", False),
    ],
)
def test_a_block_at_column_0_ends_a_list_the_scan_did_not_bound(
    between: str, answers: bool
) -> None:
    # The first item continues lazily: the scan cannot bound it.
    text = f"- item\nlazy line\n\n{between}\n    <div>\n"
    answers_as_the_parse(text, answers)


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("# See [a]\n\n[a]: /x\n", "See a"),
        # A paragraph's line, no definition: the brackets are text.
        ("# See [a]\n\ntext\n[a]: /x\n", "See [a]"),
        ("# See [a]\n\nsome text\n[b]: /z\n[a]: /x\n\n[a]: /y\n", "See a"),
        # A lazy line of an item's paragraph, then one after a blank line at
        # column 0, which no item holds (the design documents' template).
        ("# See [a]\n\n* **Question?**\nNone.\n[a]: /x\n\n[a]: /y\n", "See a"),
        # A fence's lines and an HTML block's define nothing.
        ("# See [a]\n\n```\n[a]: /u\n```\n\n<!--\n[a]: /v\n-->\n", "See [a]"),
        ("# See [a][b] and [c]\n\n[b]: /x\n   [c]: https://c.example/c?d=1\n", "See a and c"),
        ("# See [a]\n\n[a]: /x\n'a title'\n", "See a"),
        ("# The [`try!`] macro\n\n[`try!`]: https://doc.rs/try.html\n", "The try! macro"),
        # Defined after the heading, at the end, as design documents do.
        ("# One [A B]\n\ntext\n\n## Two\n\n[a  b]: /x\n[other]: /y\n", "One A B"),
    ],
)  # fmt: skip
def test_a_heading_links_to_a_definition_the_scan_proved(text: str, rendered: str) -> None:
    assert scanned(text) is not None
    headings = parse_headings(text)
    assert headings == _parse_fully(text)
    assert headings[0].text == rendered


def test_a_definition_s_title_on_the_next_line_underlines_nothing() -> None:
    # markdown-it takes "foo" for the title: the underline is a paragraph's.
    text = '[a]: /x\n"foo"\n===\n\n# See [a]\n'
    assert parse_headings(text) == _parse_fully(text)
    assert [h.text for h in parse_headings(text)] == ["See a"]


@pytest.mark.parametrize(
    "text",
    [
        # "1." is an empty item, no paragraph's text: the next line is no
        # lazy one (the tag starts an HTML block, the definition is one).
        "- 1.\n<br>\n# h\n",
        "x\n- 2)\n<br>\n# h\n",
        "> - 1.\n> <br>\n> # h\n",
        "- 1.\n[foo]: /u\n\n# [foo]\n",
        # "[bar]" is the label of the full reference "[foo][bar]", whatever
        # follows it: defined by a line the scan did not prove.
        "- [bar]: /x\n# [foo][bar](/u)\n",
        "> [bar]: /x\n\n# [foo][bar](/u)\n",
        "- [bar]: /x\n\n# ![foo][bar](/u)\n",
        # A second review, of rules older than this stop: a tab in a quote's
        # content indentation is 1 or 2 columns there, not 4 ...
        "> \t# foo",
        "> \t```\n> # x",
        " > \t# foo",
        "-  > \t# foo",
        "> a\n>\n> \t# foo",
        # ... and markdown-it folds the case of raw tag names in ASCII only.
        "<\u017fcript>\n# h",
        "<script>\n</\u017fcript>\n# h\n</script>",
        "<scr\u0131pt>\n# h",
        # A third: markdown-it tries a table before a list, so a marker's
        # line holding "|" above a delimiter row is a table's header.
        "- a|b\n  -|-\n    # h",
        "1. a|b\n   -|-\n     # h",
    ],
)
def test_found_by_a_cold_review(text: str) -> None:
    # Counterexamples a reviewer found to this stop's rules (in_paragraph's
    # plain item, the inline-link exemption): the scan must agree or decline.
    assert parse_headings(text) == _parse_fully(text)


@pytest.mark.parametrize(
    "text",
    [
        "para\n<a href=x>\n# h\n",
        "![diagram](x.png)\n<br/>\n\n# After\n",
        "* **Question?**\nAnswer.\n</UNRESOLVED>\n\n# After\n",
    ],
)
def test_a_tag_alone_after_a_paragraph_s_line_is_its_text(text: str) -> None:
    # An HTML block of kind 7 may not end a paragraph: the line is text.
    assert scanned(text) is not None
    assert parse_headings(text) == _parse_fully(text)


@pytest.mark.parametrize(
    ("text", "answers"),
    [
        # The definition comes after the heading: the labels are searched
        # when the heading asks, in the whole text all the same.
        ("# Intro\n\ntext\n\n## Drawbacks [optional]\n\n> [optional]: https://x\n", False),
        ("# Intro\n\n## Drawbacks [optional]\n\n[other]: https://x\n", True),
        ("# Intro\n\n## Plain\n\n[optional]: https://x\n", True),
    ],
)
def test_a_heading_s_brackets_are_judged_by_every_definition(text: str, answers: bool) -> None:
    answers_as_the_parse(text, answers)
