"""--output onto a path that is not a regular file: refused, left as it is
(issue 9 item 4; tests/test_output_targets.py covers every kind of node)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from governance.errors import CapsuleError
from governance.output import write_atomic
from support.gitrepo import Repo, Result


def test_regression_output_to_a_fifo_is_refused_not_replaced(tmp_path: Path) -> None:
    # `capsule build -o /dev/null` run as root renamed its temp file over
    # /dev/null, leaving a regular file there for every process of the machine.
    # A FIFO stands in for the device: it must still be one, and nothing is
    # written into it either (that would follow it).
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(CapsuleError) as caught:
        write_atomic(str(fifo), b"capsule bytes\n")
    assert caught.value.code == "output_not_file"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["fifo"]


def test_build_output_to_a_fifo(repo: Repo, cli: Callable[..., Result], tmp_path: Path) -> None:
    fifo = tmp_path / "capsule.fifo"
    os.mkfifo(fifo)
    result = cli(["build", "packets/P-1/packet.yml", "-o", str(fifo), "--json"], cwd=repo.path)
    assert result.code == 2
    assert json.loads(result.out)["error"]["code"] == "output_not_file"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_regular_file_is_still_replaced_atomically(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"old")
    before = os.stat(target).st_ino
    write_atomic(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert os.stat(target).st_ino != before
