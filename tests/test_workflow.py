"""The shipped CI workflow under the linters its users run: zizmor (security,
--pedantic) and actionlint (syntax, expressions, shell). Both install with the
test extra and run offline."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "hooks/github-workflow.yml"
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN))
    assert found, f"{name} is not installed beside this Python: `make test` installs the test extra"
    return found


def test_zizmor_pedantic_finds_nothing() -> None:
    # --offline: no GitHub API (impostor commits, known vulnerable actions are
    # online audits); the pins are checked against the fetched releases by hand.
    done = subprocess.run(
        [tool("zizmor"), "--offline", "--pedantic", "--no-progress", str(WORKFLOW)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr


def test_actionlint_finds_nothing() -> None:
    done = subprocess.run(
        [tool("actionlint"), "-no-color", str(WORKFLOW)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("unsafe", "finding"),
    [
        # A value pasted into a script, where it can expand into code.
        (
            'capsule audit --shard "${SHARD}/${SHARDS}"',
            "capsule audit --shard ${{ matrix.shard }}/${{ strategy.job-total }}",
        ),
    ],
)
def test_zizmor_would_see_an_expression_in_a_script(
    tmp_path: Path, unsafe: str, finding: str
) -> None:
    # The linter really reads this workflow: the expression the workflow
    # moved into the environment is found again once put back.
    text = WORKFLOW.read_text()
    assert unsafe in text
    broken = tmp_path / "workflow.yml"
    broken.write_text(text.replace(unsafe, finding, 1))
    done = subprocess.run(
        [tool("zizmor"), "--offline", "--pedantic", "--no-progress", str(broken)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "template-injection" in done.stdout + done.stderr
