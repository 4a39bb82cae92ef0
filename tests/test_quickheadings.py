"""The quick heading scan agrees with the full parse wherever it answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from governance.authoring.quickheadings import quick_headings
from governance.core.headings import parse_headings

ROOT = Path(__file__).resolve().parents[1]

LINES = [
    "# Title", "## Sub *em* `code`", "### Three ###", "#### four #", "###### six", "####### seven",
    "#no space", "# ", "#", "  # indented two", "   ### three", "    # code", "\t# tab",
    "## trailing #s ##   ", "## a#", "# & amp &amp; \\# escaped", "# ![img](x) after",
    "# [link](url)", "# [ref][r]", "[r]: /url", "Paragraph text.", "more text", "",
    "```", "```sh", "````", "~~~", "~~~ info", "``` a`b", "- item", "- # list heading",
    "1. # numbered", "  - nested", "> # quoted", "<div>", "</div>", "<!-- c -->", "---", "===",
    "***", "| a | b |", "|---|---|", "| # c | d |", "Caf\u00e9 \u65e5\u672c", "# \u202eodd",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=30), st.booleans())
def test_quick_scan_equals_the_parse_where_it_answers(lines: list[str], final: bool) -> None:
    text = "\n".join(lines) + ("\n" if final else "")
    quick = quick_headings(text)
    if quick is not None:
        assert quick == parse_headings(text)


@pytest.mark.parametrize(
    "text",
    [
        "Title\n=====\n",
        "---\ntitle: x\n---\n# H\n",
        "> # quoted\n",
        "- # in a list\n",
        "<div>\n# in html\n</div>\n",
        "# [ref][r]\n\n[r]: /u\n",
        "a\r\n# b\r\n",
        "x\x00\n# y\n",
    ],
)
def test_it_declines_what_a_line_scan_cannot_settle(text: str) -> None:
    assert quick_headings(text) is None


def test_fenced_code_and_closing_sequences() -> None:
    text = "# One #\n\n```sh\n# not a heading\n```\n\n## Two ##\n~~~\n# no\n~~~~\n### Three\n"
    assert quick_headings(text) == parse_headings(text)
    assert [h.slug for h in quick_headings(text) or []] == ["one", "two", "three"]


def test_this_repositorys_docs() -> None:
    answered = 0
    for path in sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md"]):
        text = path.read_text(encoding="utf-8")
        quick = quick_headings(text)
        if quick is not None:
            answered += 1
            assert quick == parse_headings(text), path
    assert answered >= 3


@settings(max_examples=400, deadline=None)
@given(st.text(st.sampled_from("ab é#$%+-:=@^{}|/.,;?'\"()0123456789\t`*_~[]!<>&\\"), max_size=20))
def test_heading_text_renders_as_the_parse_does(title: str) -> None:
    text = f"# {title}\n\npara\n\n## x {title} y ##\n"
    quick = quick_headings(text)
    if quick is not None:
        assert quick == parse_headings(text)
