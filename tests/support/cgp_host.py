"""A Context Graph Protocol host for the tests, written after the reference
host the protocol's conformance runner drives (``contextgraph-host``): the
same spawn (environment scrubbed to PATH and HOME, the child in its own
session), the same handshake version, correlation ids minted ``q1``, ``q2``,
... for a provider that declares correlation, ``verify`` in lock-step and
answered by full identity, the same decoding rules for what the provider
writes, and the same shutdown (two seconds' grace, then the process group is
killed).

A line this host cannot decode fails the exchange, as it fails the reference
host's reader (which then fails every exchange in flight): decoding follows the
reference's typed envelopes, so a reply that the schema's loose fields allow
but the typed host refuses (a lone surrogate, a float where a u32 is due, a kind
outside the closed vocabulary) is caught here too.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import select
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

PROTOCOL_VERSION = "contextgraph/1.0-draft"
HANDSHAKE_TIMEOUT = 10.0
QUERY_TIMEOUT = 30.0
SHUTDOWN_GRACE = 2.0
MAX_LINE_BYTES = 16 * 1024 * 1024
U32 = (1 << 32) - 1

FRAME_KINDS = ("snippet", "symbol", "fact", "doc", "memory", "episode", "graph")
REPRESENTATIONS = ("full", "compact", "reference")
VERDICTS = ("valid", "stale", "gone", "unknown")
ENVELOPES = (
    "handshake",
    "handshake_ack",
    "query",
    "frames",
    "verify",
    "verified",
    "shutdown",
    "error",
)

# One counter for the whole process, as the reference host mints its ids.
_next_id = itertools.count(1)


def next_correlation_id() -> str:
    return f"q{next(_next_id)}"


class HostError(Exception):
    """What the reference host reports as a ``HostError``: ``kind`` names the
    variant (crashed, timeout, wire, provider, unexpected, correlation, ...)."""

    def __init__(self, kind: str, message: str, code: str | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.code = code


# --- decoding: the reference host's typed envelopes -----------------------------


def _no_lone_surrogate(value: Any, where: str) -> None:
    # serde_json refuses a lone surrogate escape in any string it decodes.
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise HostError("wire", f"{where}: a lone surrogate in a string") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _no_lone_surrogate(key, where)
            _no_lone_surrogate(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _no_lone_surrogate(item, f"{where}[{index}]")


def _string(obj: dict[str, Any], name: str, where: str, *, optional: bool = False) -> None:
    value = obj.get(name)
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise HostError("wire", f"{where}.{name} must be a string")


def _boolean(obj: dict[str, Any], name: str, where: str) -> None:
    if obj.get(name) is not None and not isinstance(obj[name], bool):
        raise HostError("wire", f"{where}.{name} must be a boolean")


def _u32(obj: dict[str, Any], name: str, where: str, *, optional: bool = False) -> None:
    value = obj.get(name)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= U32:
        raise HostError("wire", f"{where}.{name} must be an integer from 0 to {U32}")


def _number(obj: dict[str, Any], name: str, where: str) -> None:
    value = obj.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise HostError("wire", f"{where}.{name} must be a number")


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise HostError("wire", f"{where} must be an object")
    return value


def _array(obj: dict[str, Any], name: str, where: str) -> list[Any]:
    value = obj.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise HostError("wire", f"{where}.{name} must be an array")
    return value


def _frame(frame: Any, where: str) -> None:
    frame = _object(frame, where)
    _string(frame, "id", where)
    if frame.get("kind") not in FRAME_KINDS:
        raise HostError("wire", f"{where}.kind must be one of {', '.join(FRAME_KINDS)}")
    _string(frame, "title", where)
    for name in (
        "content",
        "content_digest",
        "uri",
        "canonical_content_hash",
        "tokenizer_ref",
        "valid_from",
        "valid_to",
        "recorded_at",
        "citation_label",
    ):
        _string(frame, name, where, optional=True)
    if frame.get("representation", "full") not in REPRESENTATIONS:
        raise HostError("wire", f"{where}.representation is not a representation")
    _number(frame, "score", where)
    _u32(frame, "token_cost", where)
    _u32(frame, "canonical_token_cost", where, optional=True)
    for index, provenance in enumerate(_array(frame, "provenance", where)):
        entry = _object(provenance, f"{where}.provenance[{index}]")
        _string(entry, "type", f"{where}.provenance[{index}]")
        for name in ("uri", "range", "digest", "method", "by"):
            _string(entry, name, f"{where}.provenance[{index}]", optional=True)
    for index, relation in enumerate(_array(frame, "relations", where)):
        edge = _object(relation, f"{where}.relations[{index}]")
        _string(edge, "rel", f"{where}.relations[{index}]")
        _string(edge, "target_uri", f"{where}.relations[{index}]")
        _string(edge, "display_name", f"{where}.relations[{index}]", optional=True)


def _frame_id(identity: Any, where: str) -> None:
    identity = _object(identity, where)
    _string(identity, "provider_id", where)
    _string(identity, "frame_id", where)
    _string(identity, "content_digest", where, optional=True)


def decode_line(line: bytes) -> dict[str, Any]:
    """One provider line as the reference host decodes it, or HostError("wire")."""
    try:
        envelope = json.loads(line.decode("utf-8", "replace"))
    except ValueError as exc:
        raise HostError("wire", f"not JSON: {exc}") from None
    _no_lone_surrogate(envelope, "envelope")
    envelope = _object(envelope, "envelope")
    kind = envelope.get("type")
    if kind not in ENVELOPES:
        raise HostError("wire", f"unknown envelope type {kind!r}")
    if kind == "handshake_ack":
        _string(envelope, "protocol_version", kind)
        provider = _object(envelope.get("provider"), f"{kind}.provider")
        _string(provider, "name", f"{kind}.provider")
        _string(provider, "version", f"{kind}.provider")
        flow = _object(provider.get("data_flow"), f"{kind}.provider.data_flow")
        for name in ("reads", "writes", "egress"):
            _boolean(flow, name, f"{kind}.provider.data_flow")
        if not all(isinstance(s, str) for s in _array(flow, "egress_scopes", kind)):
            raise HostError("wire", "egress_scopes must be strings")
        capabilities = _object(envelope.get("capabilities"), f"{kind}.capabilities")
        query = _object(capabilities.get("query", {}), f"{kind}.capabilities.query")
        if not all(isinstance(k, str) for k in _array(query, "kinds", kind)):
            raise HostError("wire", "capabilities.query.kinds must be strings")
        for name in ("correlation", "graph", "verify", "resolve"):
            _boolean(capabilities, name, f"{kind}.capabilities")
        _string(capabilities, "embeddings_fingerprint", f"{kind}.capabilities", optional=True)
    elif kind == "frames":
        _string(envelope, "id", kind, optional=True)
        result = _object(envelope.get("result"), f"{kind}.result")
        if not isinstance(result.get("frames"), list):
            raise HostError("wire", "frames.result.frames must be an array")
        if not isinstance(result.get("truncated"), bool):
            raise HostError("wire", "frames.result.truncated must be a boolean")
        _u32(result, "dropped_estimate", f"{kind}.result", optional=True)
        for index, frame in enumerate(result["frames"]):
            _frame(frame, f"frames.result.frames[{index}]")
    elif kind == "verified":
        response = _object(envelope.get("response"), f"{kind}.response")
        for index, entry in enumerate(_array(response, "verdicts", kind)):
            where = f"verified.response.verdicts[{index}]"
            verdict = _object(entry, where)
            _frame_id(verdict.get("frame"), f"{where}.frame")
            if verdict.get("status") not in VERDICTS:
                raise HostError("wire", f"{where}.status is not a verdict")
            _string(verdict, "replacement_digest", where, optional=True)
    elif kind == "error":
        _string(envelope, "id", kind, optional=True)
        _string(envelope, "code", kind, optional=True)
        _string(envelope, "message", kind)
    return envelope


def family(version: str) -> str:
    return version.split(".", 1)[0]


def identity_key(identity: dict[str, Any]) -> tuple[str, str, str | None]:
    """A FrameId's equality: all three members, an absent digest being None."""
    return (identity["provider_id"], identity["frame_id"], identity.get("content_digest"))


# --- the connection ---------------------------------------------------------------


class Connection:
    """The raw, framed pipe to a provider child (the reference's
    RawStdioConnection): no handshake until asked."""

    def __init__(self, argv: Sequence[str], label: str | None = None) -> None:
        env = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
        try:
            self.process = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise HostError("spawn", f"{argv[0]}: {exc}") from None
        self.label = label or argv[0]
        self._buffer = b""
        self.stderr = b""

    def send_raw_line(self, line: str) -> None:
        data = line if line.endswith("\n") else line + "\n"
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(data.encode("utf-8"))
            self.process.stdin.flush()
        except BrokenPipeError:
            raise HostError("crashed", f"{self.label} closed its input") from None

    def send(self, envelope: dict[str, Any]) -> None:
        self.send_raw_line(json.dumps(envelope, ensure_ascii=False, separators=(",", ":")))

    def read_raw_line(self, timeout: float) -> bytes | None:
        """The next line, None at the end of the provider's output."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            if not ready:
                raise HostError("timeout", f"{self.label}: no line within {timeout:g} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                rest, self._buffer = self._buffer, b""
                return rest or None
            self._buffer += chunk
            if b"\n" not in self._buffer and len(self._buffer) > MAX_LINE_BYTES:
                raise HostError("transport", f"a line over {MAX_LINE_BYTES} bytes")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line + b"\n"

    def recv(self, timeout: float = QUERY_TIMEOUT) -> dict[str, Any]:
        line = self.read_raw_line(timeout)
        if line is None:
            raise HostError("crashed", f"{self.label} closed its output")
        return decode_line(line)

    def handshake(self) -> tuple[dict[str, Any], dict[str, Any]]:
        self.send({"type": "handshake", "protocol_version": PROTOCOL_VERSION})
        ack = self.recv(HANDSHAKE_TIMEOUT)
        if ack["type"] != "handshake_ack":
            raise HostError("unexpected", f"expected handshake_ack, got {ack['type']}")
        if family(ack["protocol_version"]) != family(PROTOCOL_VERSION):
            raise HostError("version", f"provider speaks {ack['protocol_version']}")
        return ack["provider"], ack["capabilities"]

    def shutdown(self) -> str:
        """Send shutdown and wait out the grace; how the child ended."""
        with contextlib.suppress(HostError):
            self.send({"type": "shutdown"})
        try:
            code = self.process.wait(timeout=SHUTDOWN_GRACE)
        except subprocess.TimeoutExpired:
            self.kill()
            return "killed after the grace"
        finally:
            self._collect()
        return f"exited with status {code}"

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._collect()

    def _collect(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None and not stream.closed:
                with contextlib.suppress(OSError):
                    stream.close()
        if self.process.stderr is not None and not self.process.stderr.closed:
            if self.process.poll() is not None:
                self.stderr += self.process.stderr.read()
            self.process.stderr.close()


@dataclass
class Provider:
    """A registered stdio provider (the reference's StdioProvider): handshaken
    once, its identity and capabilities kept."""

    id: str
    connection: Connection
    info: dict[str, Any] = field(default_factory=dict)
    capabilities: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def spawn(cls, provider_id: str, argv: Sequence[str]) -> Provider:
        connection = Connection(argv, provider_id)
        try:
            info, capabilities = connection.handshake()
        except HostError:
            connection.kill()
            raise
        return cls(provider_id, connection, info, capabilities)

    def query(self, query: dict[str, Any]) -> dict[str, Any]:
        """The frames result, or HostError (an ``error`` reply is kind
        ``provider`` with its code)."""
        correlated = self.capabilities.get("correlation") is True
        sent = next_correlation_id() if correlated else None
        envelope: dict[str, Any] = {"type": "query", "query": query}
        if sent is not None:
            envelope["id"] = sent
        self.connection.send(envelope)
        reply = self._reply(sent)
        if reply["type"] == "frames":
            result: dict[str, Any] = reply["result"]
            return result
        if reply["type"] == "error":
            raise HostError("provider", reply["message"], reply.get("code"))
        raise HostError("unexpected", f"expected frames, got {reply['type']}")

    def _reply(self, sent: str | None) -> dict[str, Any]:
        """The reply that answers the exchange whose id is ``sent``: the
        reference reader drops a frames or error whose id no exchange waits for
        (an id-less one while a correlated query waits, one with an id during a
        lock-step exchange) and keeps waiting, here until the timeout."""
        deadline = time.monotonic() + QUERY_TIMEOUT
        while True:
            reply = self.connection.recv(max(deadline - time.monotonic(), 0))
            echoed = reply.get("id") if reply["type"] in ("frames", "error") else None
            if echoed == sent:
                return reply

    def verify(self, identities: list[dict[str, Any]]) -> dict[str, Any]:
        self.connection.send({"type": "verify", "request": {"frames": identities}})
        reply = self._reply(None)
        if reply["type"] == "verified":
            response: dict[str, Any] = reply["response"]
            return response
        if reply["type"] == "error":
            raise HostError("provider", reply["message"], reply.get("code"))
        raise HostError("unexpected", f"expected verified, got {reply['type']}")


@dataclass(frozen=True)
class Dropped:
    identity: dict[str, Any]
    reason: str  # stale, gone, unknown, no_digest, verify_unsupported, verify_failed
    detail: str | None = None  # the replacement digest, or the failure


@dataclass
class VerifyOutcome:
    retained: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)


class Host:
    """The reference host's one-provider surface: query, verify_frames, shutdown."""

    def __init__(self) -> None:
        self.providers: dict[str, Provider] = {}

    def add_stdio(self, provider_id: str, argv: Sequence[str]) -> Provider:
        provider = Provider.spawn(provider_id, argv)
        self.providers[provider_id] = provider
        return provider

    def query_provider(self, provider_id: str, query: dict[str, Any]) -> dict[str, Any]:
        return self.providers[provider_id].query(query)

    def verify_frames(self, held: list[dict[str, Any]]) -> VerifyOutcome:
        """Default deny: a frame is kept only on an explicit ``valid``, matched
        by its full identity, never by position."""
        outcome = VerifyOutcome()
        for provider_id in dict.fromkeys(h["provider_id"] for h in held):
            frames = [h for h in held if h["provider_id"] == provider_id]
            provider = self.providers.get(provider_id)
            if provider is None:
                outcome.dropped += [Dropped(f, "unknown_provider") for f in frames]
                continue
            if provider.capabilities.get("verify") is not True:
                outcome.dropped += [Dropped(f, "verify_unsupported") for f in frames]
                continue
            verifiable = [f for f in frames if f.get("content_digest") is not None]
            outcome.dropped += [Dropped(f, "no_digest") for f in frames if f not in verifiable]
            if not verifiable:
                continue
            try:
                response = provider.verify(verifiable)
            except HostError as exc:
                outcome.dropped += [Dropped(f, "verify_failed", str(exc)) for f in verifiable]
                continue
            answers = [(identity_key(v["frame"]), v) for v in response.get("verdicts") or []]
            for frame in verifiable:
                verdict = next((v for key, v in answers if key == identity_key(frame)), None)
                status = verdict["status"] if verdict else "unknown"
                if status == "valid":
                    outcome.retained.append(frame)
                elif status == "stale":
                    assert verdict is not None
                    replacement = verdict.get("replacement_digest")
                    outcome.dropped.append(Dropped(frame, "stale", replacement))
                else:
                    outcome.dropped.append(Dropped(frame, status))
        return outcome

    def shutdown(self) -> dict[str, str]:
        return {pid: provider.connection.shutdown() for pid, provider in self.providers.items()}

    def kill(self) -> None:
        for provider in self.providers.values():
            provider.connection.kill()
