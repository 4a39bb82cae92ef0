"""Every benchmark script still runs: each ``bench/*.py`` at its smallest
setting (``--smoke``), as its own process. Figures are printed, never
asserted; only that the script runs to the end and prints them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
# The scripts, not the modules they share (bench/corpus.py): what runs as __main__.
SCRIPTS = sorted(
    p for p in (ROOT / "bench").glob("*.py") if 'if __name__ == "__main__"' in p.read_text()
)


def test_there_are_benchmarks_to_run() -> None:
    assert {p.name for p in SCRIPTS} >= {"bench_audit.py", "bench_build.py", "bench_hook.py"}
    assert "corpus.py" not in {p.name for p in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_each_benchmark_runs_at_its_smallest_setting(script: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), "--smoke"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "a benchmark prints its figures"
