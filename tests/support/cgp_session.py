"""Drive the real ``capsule cgp`` provider as a subprocess, one NDJSON line at a
time, recording the session and validating every envelope it emits against
the vendored envelope schema."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

DATA = Path(__file__).resolve().parents[1] / "data" / "cgp"
TIMEOUT = 60.0


@cache
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((DATA / "contextgraph-envelope.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def assert_valid(envelope: Any) -> None:
    errors = sorted(validator().iter_errors(envelope), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]


class Provider:
    """``capsule cgp --repo REPO``, running."""

    def __init__(self, repo: Path) -> None:
        self.transcript: list[tuple[str, str]] = []  # ("host" | "provider", line)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "governance", "cgp", "--repo", str(repo)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ},
        )
        self._buffer = b""

    def send_raw(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.transcript.append(("host", line.decode("utf-8", "replace").rstrip("\n")))
        self.process.stdin.write(line)
        self.process.stdin.flush()

    def send(self, envelope: Any) -> None:
        self.send_raw(json.dumps(envelope, ensure_ascii=False).encode("utf-8") + b"\n")

    def recv(self) -> dict[str, Any]:
        """The next envelope the provider writes; it must validate."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], TIMEOUT)
            assert ready, f"no reply within {TIMEOUT} s"
            chunk = os.read(fd, 1 << 16)
            assert chunk, f"the provider closed stdout: {self.stderr()}"
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        text = line.decode("utf-8")
        self.transcript.append(("provider", text))
        envelope = json.loads(text)
        assert isinstance(envelope, dict)
        assert_valid(envelope)
        return envelope

    def ask(self, envelope: Any) -> dict[str, Any]:
        self.send(envelope)
        return self.recv()

    def handshake(self, version: str = "contextgraph/1.0") -> dict[str, Any]:
        return self.ask({"type": "handshake", "protocol_version": version})

    def query(self, request_id: str | None = None, **query: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"goal": "hand over the packet", "max_frames": 64}
        body["max_tokens"] = 1_000_000
        body.update(query)
        envelope: dict[str, Any] = {"type": "query", "query": body}
        if request_id is not None:
            envelope["id"] = request_id
        return self.ask(envelope)

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def wait(self) -> int:
        return self.process.wait(timeout=TIMEOUT)

    def rest(self) -> bytes:
        """Everything else the provider writes before it exits."""
        assert self.process.stdout is not None
        return self._buffer + self.process.stdout.read()

    def stderr(self) -> str:
        assert self.process.stderr is not None
        if self.process.poll() is None:
            return "(still running)"
        return self.process.stderr.read().decode("utf-8", "replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()

    def ndjson(self) -> str:
        return "".join(f"{line}\n" for _, line in self.transcript)
