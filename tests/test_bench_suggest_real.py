"""``bench/bench_suggest_real.py`` runs on the vendored rust-lang/rfcs sample
and prints its figures: hit rates beside the baseline, the budget share and
the time against ``git cat-file --batch``. Figures are printed, never
asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def test_the_real_corpus_benchmark_prints_its_figures(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_suggest_real.py"), "--smoke"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"^corpus: 50 Markdown files, [\d,]+ bytes", out, re.M), out
    assert re.search(r"^goals: 6 from 3 RFCs$", out, re.M), out
    assert re.search(r"key hit .* file hit .* base@1 .* budget", out), out
    for kind in ("title", "sentence", "all"):
        assert re.search(rf"^ *{kind} +\d+ +\d+% +[\d.]+ +\d+% +\d+% +\d+% +[\d.]+ +\d+%$",
                         out, re.M), out  # fmt: skip
    assert re.search(r"^time: suggest median \d+ ms, cat-file --batch median \d+ ms, "
                     r"median ratio [\d.]+x$", out, re.M), out  # fmt: skip


def test_the_vendored_sample_keeps_its_licence_notice() -> None:
    sample = ROOT / "tests" / "data" / "rfcs"
    assert (sample / "LICENSE-MIT").is_file()
    assert (sample / "LICENSE-APACHE").is_file()
    notice = (ROOT / "tests" / "data" / "README.md").read_text(encoding="utf-8")
    assert "rust-lang/rfcs" in notice
    assert "LICENSE-MIT" in notice
