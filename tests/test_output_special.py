"""--output onto a path that is not a regular file."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

from gitrepo import Repo, Result
from governance.output import write_atomic


def test_regression_output_to_a_fifo_is_written_not_replaced(tmp_path: Path) -> None:
    # `capsule build -o /dev/null` run as root renamed its temp file over
    # /dev/null, leaving a regular file there for every process of the machine.
    # A FIFO stands in for the device: it must still be one, and get the bytes.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_atomic(str(fifo), b"capsule bytes\n")
    reader.join(timeout=10)
    assert received == [b"capsule bytes\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["fifo"]


def test_build_output_to_a_fifo(repo: Repo, cli: Callable[..., Result], tmp_path: Path) -> None:
    fifo = tmp_path / "capsule.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    result = cli(["build", "packets/P-1/packet.yml", "-o", str(fifo)], cwd=repo.path)
    reader.join(timeout=10)
    assert result.code == 0
    assert received[0].startswith(b'{"budget":')
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_regular_file_is_still_replaced_atomically(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"old")
    before = os.stat(target).st_ino
    write_atomic(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert os.stat(target).st_ino != before
