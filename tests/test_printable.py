from __future__ import annotations

import pytest

from governance.output import printable


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("docs/plain.md#intro", "docs/plain.md#intro"),
        ("caf\u00e9 \u65e5\u672c", "caf\u00e9 \u65e5\u672c"),
        ("\x1b[2J\x1b[31mRED\a.json", "\\x1b[2J\\x1b[31mRED\\x07.json"),
        ("a\rb\nc\td", "a\\x0db\\x0ac\\x09d"),
        ("evil\u202etxt.md", "evil\\u202etxt.md"),
        ("line\u2028sep", "line\\u2028sep"),
        ("bad\udcffbyte", "bad\\xffbyte"),
        ("lone\ud800", "lone\\ud800"),
        ("\x85next", "\\x85next"),
    ],
)
def test_printable_escapes_what_a_terminal_would_act_on(raw: str, expected: str) -> None:
    shown = printable(raw)
    assert shown == expected
    assert shown.isprintable()
