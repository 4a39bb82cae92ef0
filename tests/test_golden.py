from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from governance.core.reader import read_capsule

GOLDEN_DIR = Path(__file__).parent / "golden"


def _load_generator():
    spec = importlib.util.spec_from_file_location("make_golden", GOLDEN_DIR / "make_golden.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_regeneration_matches_committed_goldens(tmp_path: Path) -> None:
    built = _load_generator().build_all(tmp_path)
    assert built, "no golden capsules were generated"
    for path, data in built.items():
        assert path.read_bytes() == data, f"{path.name} drifted: rerun make_golden.py"


def test_check_mode_fails_on_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generator = _load_generator()
    # Work on copies: the committed goldens are never touched by the test.
    copies = {}
    for packet, golden in generator.GOLDEN.items():
        copies[packet] = tmp_path / golden.name
        copies[packet].write_bytes(golden.read_bytes())
    monkeypatch.setattr(generator, "GOLDEN", copies)
    assert generator.main(["--check"]) == 0
    first = next(iter(copies.values()))
    first.write_bytes(first.read_bytes().replace(b"GOLD-1", b"GOLD-2", 1))
    assert generator.main(["--check"]) == 1


@pytest.mark.parametrize("name", ["GOLD-1.capsule.json"])
def test_golden_passes_the_reader(name: str) -> None:
    capsule = read_capsule((GOLDEN_DIR / name).read_bytes())
    assert capsule.schema == "capsule/1"


def test_golden_checkable_by_hand_with_json_tool() -> None:
    # docs/format.md shows this: python -m json.tool re-indents, sort keys stable.
    data = (GOLDEN_DIR / "GOLD-1.capsule.json").read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "json.tool", "--sort-keys", "--compact", "--no-ensure-ascii"],
        input=data,
        capture_output=True,
        check=True,
    )
    assert done.stdout == data
    assert json.loads(data)["budget"]["bytes"] == len(data)
