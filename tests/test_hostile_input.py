"""Hostile or odd input gets a coded error and the right exit code, never a
traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support.gitrepo import Repo, error_of, packet_yaml

PACKET = "packets/P-1/packet.yml"


@pytest.mark.parametrize(
    ("where", "text"),
    [
        ("policy", "target_tokens: 12000.0\n"),
        ("packet", packet_yaml("P-1", []) + "budget: {target_tokens: 5000.0}\n"),
        ("packet", packet_yaml("P-1", []) + "? [a, b]\n: c\n"),
        ("packet", packet_yaml("P-1", []).replace("contracts: []", "contracts: " + "[" * 3000)),
        ("packet", packet_yaml("P-1", []) + 'question: "\\ud800"\n'),
        ("packet", packet_yaml("P-1", ["docs/\ud800.md"])),
        ("packet", packet_yaml("P-1", []) + "question: &x [*x]\n"),
        ("policy", "target_tokens: &x [*x]\n"),
    ],
    ids=["policy-float", "packet-float", "complex-key", "deep-nesting", "surrogate-question",
         "surrogate-locator", "packet-self-alias", "policy-self-alias"],
)  # fmt: skip
def test_malformed_yaml_is_exit_2(cli, repo: Repo, where: str, text: str) -> None:
    path = "policies/capsule.yml" if where == "policy" else PACKET
    repo.write(path, text.encode("utf-8", "surrogatepass"))
    repo.commit()
    code, error = error_of(cli, repo, ["build", PACKET])
    assert code == 2
    assert error["code"] == f"{where}_malformed"


@pytest.mark.parametrize(
    "data",
    [b"[" * 100_000 + b"]" * 100_000 + b"\n", b'{"question":"\\ud800"}\n'],
    ids=["deep-nesting", "lone-surrogate"],
)
def test_malformed_capsule_is_exit_2(cli, repo: Repo, tmp_path: Path, data: bytes) -> None:
    capsule = tmp_path / "bad.json"
    capsule.write_bytes(data)
    code, error = error_of(cli, repo, ["verify", str(capsule)])
    assert (code, error["code"]) == (2, "capsule_malformed")


def test_output_into_missing_folder(cli, repo: Repo, tmp_path: Path) -> None:
    code, error = error_of(cli, repo, ["build", PACKET, "-o", str(tmp_path / "no/such/c.json")])
    assert (code, error["code"]) == (2, "output_failed")


def test_closed_pipe_exits_quietly(repo: Repo) -> None:
    # Like `capsule build ... | head -c0`: the reader is gone before we write.
    script = (
        "import os, sys; from governance.cli import main; "
        "r, w = os.pipe(); os.close(r); os.dup2(w, 1); "
        f"sys.exit(main(['build', {PACKET!r}]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=repo.path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 141
    assert "Traceback" not in done.stderr
