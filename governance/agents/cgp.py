"""``capsule cgp``'s session: a Context Graph Protocol provider over NDJSON,
one envelope a line, handshake first, until ``shutdown`` or end of input.

Requirement ids (H1, Q1, B1, ...) are the anchors of the CGP specification,
``contextgraph/1``. Each line is answered on its own: a malformed line or a
failed request gets a typed ``error`` and the provider keeps serving (R1).
"""

from __future__ import annotations

import calendar
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import IO, Any

import pygit2

from governance import __version__
from governance.agents import cgp_frames
from governance.agents.cgp_goal import goal_frames, goal_verdict, is_goal_frame
from governance.agents.cgp_records import record_anchor, record_entries
from governance.core.snapshot import Snapshot
from governance.errors import CapsuleError, coded

PROTOCOL_VERSION = "contextgraph/1.0"
_VERSION = re.compile(r"contextgraph/([0-9]+)\.[0-9]+(?:-draft)?")
# The protocol's UTC profile (F4): ASCII digits only ([0-9], not \d).
_TIMESTAMP = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?Z"
)
_EPOCH = date(1970, 1, 1).toordinal()

# Bounds, so that no input makes the provider work for minutes.
MAX_LINE_BYTES = 1 << 20
MAX_ANCHORS = 64
MAX_VERIFY_FRAMES = 256
U32 = (1 << 32) - 1

BAD_REQUEST = "bad_request"
INCOMPATIBLE_VERSION = "incompatible_version"
UNSUPPORTED_KIND = "unsupported_kind"
INTERNAL = "internal"
# Our own codes are namespaced (U3): ``capsule:<the command's error code>``.


class Refusal(Exception):
    """A request answered with an ``error`` envelope."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def major_family(version: str) -> str | None:
    """``contextgraph/1.0-draft`` -> ``contextgraph/1``: the part before the
    first dot (SPEC 3.1); None for a string outside the grammar."""
    match = _VERSION.fullmatch(version)
    return f"contextgraph/{match.group(1)}" if match else None


def handshake_ack() -> dict[str, Any]:
    return {
        "type": "handshake_ack",
        "protocol_version": PROTOCOL_VERSION,
        "provider": {
            "name": cgp_frames.PROVIDER_NAME,
            "version": __version__,
            # Reads the repository's committed objects; keeps nothing; sends
            # nothing anywhere but its own stdout.
            "data_flow": {
                "reads": True,
                "writes": False,
                "egress": False,
                "egress_scopes": ["local-only"],
            },
        },
        "capabilities": {
            "query": {"kinds": ["doc"]},
            "correlation": True,
            "graph": False,
            "embeddings_fingerprint": None,
            "verify": True,
        },
    }


def _u32(query: dict[str, Any], name: str) -> int:
    value = query.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= U32:
        raise Refusal(BAD_REQUEST, f"query.{name} must be an integer from 0 to {U32}")
    return value


def _strings(query: dict[str, Any], name: str, limit: int | None = None) -> list[str]:
    value = query.get(name, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise Refusal(BAD_REQUEST, f"query.{name} must be a list of strings")
    if limit is not None and len(value) > limit:
        raise Refusal(BAD_REQUEST, f"query.{name}: at most {limit} entries")
    return value


def pin_seconds(value: Any) -> int:
    """``as_of`` as Unix seconds, rounded down (commit times are whole
    seconds, so a commit is at or before the pin exactly when it is at or
    before this); ``bad_request`` for anything outside the UTC profile (F4)."""
    match = _TIMESTAMP.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise Refusal(BAD_REQUEST, "query.as_of must be a UTC time, YYYY-MM-DDTHH:MM:SS[.f]Z")
    year, month, day, hour, minute, second = map(int, match.groups())
    days = (31, 29 if calendar.isleap(year) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    if not (1 <= month <= 12 and 1 <= day <= days[month - 1]):
        raise Refusal(BAD_REQUEST, f"query.as_of: {value} is not a day of the calendar")
    if hour > 23 or minute > 59 or second > 60:  # 60: a leap second
        raise Refusal(BAD_REQUEST, f"query.as_of: {value} is not a time of day")
    if year == 0:
        return -(1 << 63)  # before the year 1, so before any commit
    return (date(year, month, day).toordinal() - _EPOCH) * 86400 + (
        hour * 3600 + minute * 60 + second
    )


@dataclass
class Session:
    """One connection's state: the repository, and whether the handshake is done."""

    repo: pygit2.Repository
    ready: bool = False
    done: bool = False

    def handle(self, envelope: Any) -> dict[str, Any] | None:
        """The reply to one decoded line, or None (a shutdown, an ignored notification)."""
        if not isinstance(envelope, dict) or not isinstance(envelope.get("type"), str):
            return _error(BAD_REQUEST, "an envelope is a JSON object with a string type")
        kind = envelope["type"]
        correlation = envelope.get("id")
        echoed = correlation if isinstance(correlation, str) and _text(correlation) else None
        try:
            where = lone_surrogate(envelope)
            if where is not None:
                # Held as a lone surrogate escape, it is no text a reply could
                # carry (no UTF-8 holds it): refused where it enters.
                raise Refusal(BAD_REQUEST, f"{where} holds a lone surrogate: not Unicode text")
            if correlation is not None and echoed is None:
                raise Refusal(BAD_REQUEST, "id must be a non-empty string")
            if kind == "handshake":
                return self._handshake(envelope)
            if kind == "shutdown":
                self.done = True
                return None
            if kind in ("query", "verify"):
                if not self.ready:
                    raise Refusal(BAD_REQUEST, f"{kind} before handshake: send handshake first")
                if kind == "query":
                    return _with_id(self._query(envelope.get("query")), echoed)
                return self._verify(envelope.get("request"))
            if echoed is None and len(envelope) == 1:
                return None  # an unrecognised notification is ignored (SPEC 2.1)
            raise Refusal(BAD_REQUEST, f"this provider does not serve {kind!r} envelopes")
        except Refusal as refusal:
            return _with_id(_error(refusal.code, refusal.message), echoed)
        except CapsuleError as exc:
            return _with_id(_error(f"capsule:{exc.code}", exc.message), echoed)
        except Exception as exc:
            # A bug or an unexpected git failure: say so and keep serving (R1).
            reported = coded(exc)
            if reported is not None:
                return _with_id(_error(f"capsule:{reported.code}", reported.message), echoed)
            return _with_id(_error(INTERNAL, f"{type(exc).__name__}: {exc}"), echoed)

    def _handshake(self, envelope: dict[str, Any]) -> dict[str, Any]:
        version = envelope.get("protocol_version")
        family = major_family(version) if isinstance(version, str) else None
        if family is None:
            raise Refusal(BAD_REQUEST, "handshake.protocol_version must be contextgraph/M.N")
        ours = major_family(PROTOCOL_VERSION)
        if family != ours:
            # H3: a named error, never a hang; the host may handshake again.
            raise Refusal(
                INCOMPATIBLE_VERSION,
                f"this provider speaks {ours} ({PROTOCOL_VERSION}); {version} is another "
                "major family",
            )
        self.ready = True
        return handshake_ack()

    def _query(self, query: Any) -> dict[str, Any]:
        if not isinstance(query, dict):
            raise Refusal(BAD_REQUEST, "query must be an object")
        goal = query.get("goal")
        if not isinstance(goal, str) or not goal:
            raise Refusal(BAD_REQUEST, "query.goal must be a non-empty string")
        max_frames = _u32(query, "max_frames")
        max_tokens = _u32(query, "max_tokens")
        kinds = _strings(query, "kinds")
        anchors = _strings(query, "anchors", MAX_ANCHORS)
        if query.get("embedding") is not None:
            raise Refusal(
                BAD_REQUEST, "this provider declares no embedding space (E1): send no embedding"
            )
        # Q1: only doc frames are served; asked for other kinds only, say so.
        if kinds and "doc" not in kinds:
            raise Refusal(UNSUPPORTED_KIND, "this provider serves only 'doc' frames")
        packets = anchored(anchors)
        if query.get("as_of") is None:
            snapshot: Snapshot | None = cgp_frames.head(self.repo)
        else:
            # F4: the tree as it stood at the pin, never content dated after it.
            snapshot = cgp_frames.as_of(self.repo, pin_seconds(query["as_of"]))
        if snapshot is None:
            return {"type": "frames", "result": {"frames": [], "truncated": False}}
        candidates: list[dict[str, Any]] = []
        if packets:
            for packet, (anchor, record) in packets.items():
                served = cgp_frames.packet_frames(self.repo, snapshot, packet)
                # What became of the record (the anchor's, or the newest) at HEAD.
                entries = record_entries(self.repo, packet, record=record, cache=snapshot.cache)
                for each in served:
                    each["uri"] = anchor
                    each["provenance"] += [dict(entry) for entry in entries]
                candidates += served
        else:
            # No packet anchor: the sections capsule suggest proposes for the goal.
            candidates = goal_frames(self.repo, snapshot, goal)
        frames, dropped = cgp_frames.fit(candidates, max_frames, max_tokens)
        result: dict[str, Any] = {"frames": frames, "truncated": dropped > 0}
        if dropped:
            result["dropped_estimate"] = dropped
        return {"type": "frames", "result": result}

    def _verify(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict) or not isinstance(request.get("frames"), list):
            raise Refusal(BAD_REQUEST, "verify.request.frames must be a list")
        identities = request["frames"]
        if len(identities) > MAX_VERIFY_FRAMES:
            raise Refusal(BAD_REQUEST, f"verify: at most {MAX_VERIFY_FRAMES} frames a request")
        for identity in identities:
            if not isinstance(identity, dict) or not all(
                isinstance(identity.get(key), str) and identity[key]
                for key in ("provider_id", "frame_id")
            ):
                raise Refusal(BAD_REQUEST, "each frame identity needs provider_id and frame_id")
            if not isinstance(identity.get("content_digest"), str | None):
                raise Refusal(BAD_REQUEST, "content_digest must be a string or null")
        now = cgp_frames.head(self.repo)
        verifier = cgp_frames.Verifier(self.repo, now)
        verdicts = []
        for given in identities:
            identity = _identity(given)
            if is_goal_frame(identity["frame_id"]):
                verdicts.append(goal_verdict(self.repo, now, identity))
            else:
                verdicts.append(verifier.verdict(identity))
        return {"type": "verified", "response": {"verdicts": verdicts}}


def anchored(anchors: list[str]) -> dict[str, tuple[str, str | None]]:
    """Each packet the anchors name, once, in anchor order (the first anchor
    naming it wins): the anchor, and the record path a record anchor names
    (None for a packet anchor)."""
    found: dict[str, tuple[str, str | None]] = {}
    for anchor in anchors:
        packet = cgp_frames.packet_id_of(anchor)
        if packet is not None:
            found.setdefault(packet, (cgp_frames.PACKET_ANCHOR + packet, None))
        elif (named := record_anchor(anchor)) is not None:
            found.setdefault(named[0], (anchor, named[1]))
    return found


def _text(value: str) -> bool:
    """Non-empty and encodable as UTF-8 (no lone surrogate)."""
    try:
        return bool(value.encode("utf-8"))
    except UnicodeEncodeError:
        return False


def lone_surrogate(envelope: dict[str, Any]) -> str | None:
    """The first member (``query.anchors[2]``) of ``envelope`` whose key or
    string value holds a lone surrogate, or None. Iterative: JSON nests only as
    deep as the decoder allows, but the walk must not recurse either."""
    stack: list[tuple[str, Any]] = [("envelope", envelope)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            if not value.isascii() and not _text(value):
                return where
        elif isinstance(value, dict):
            for key, item in value.items():
                if not key.isascii() and not _text(key):
                    return f"a member name in {where}"
                stack.append((key if where == "envelope" else f"{where}.{key}", item))
        elif isinstance(value, list):
            stack += [(f"{where}[{index}]", item) for index, item in enumerate(value)]
    return None


def _identity(given: dict[str, Any]) -> dict[str, Any]:
    # Echoed in full (V2), but only the members a FrameId has.
    identity = {"provider_id": given["provider_id"], "frame_id": given["frame_id"]}
    if "content_digest" in given:
        identity["content_digest"] = given["content_digest"]
    return identity


def _error(code: str, message: str) -> dict[str, Any]:
    return {"type": "error", "code": code, "message": message}


def _with_id(reply: dict[str, Any], echoed: str | None) -> dict[str, Any]:
    # H4: the request's id, verbatim, on its frames or error.
    if echoed is not None:
        reply["id"] = echoed
    return reply


def _lines(stream: IO[bytes]) -> Iterator[bytes | None]:
    """Each line of ``stream`` without its newline; None for a line over
    MAX_LINE_BYTES, whose rest is read and dropped unkept."""
    while True:
        line = stream.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while (rest := stream.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                pass
            yield None
            continue
        yield line.rstrip(b"\r\n")


def encode(envelope: dict[str, Any]) -> bytes:
    """One NDJSON line: JSON escapes every newline inside strings, so the
    envelope holds no literal one (SPEC 2.1)."""
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def written(reply: dict[str, Any]) -> bytes:
    """``encode(reply)``; should the reply hold what UTF-8 cannot (a lone
    surrogate from a repository's undecodable path), an ``internal`` error in
    its place, so that nothing a host or a repository sends ends the session."""
    try:
        return encode(reply)
    except UnicodeEncodeError:
        correlation = reply.get("id")
        echoed = correlation if isinstance(correlation, str) and _text(correlation) else None
        return encode(_with_id(_error(INTERNAL, "the reply is not encodable as UTF-8"), echoed))


def decode(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Refusal(
            BAD_REQUEST, f"the line is not a JSON envelope ({type(exc).__name__})"
        ) from None


def serve(repo: pygit2.Repository, stdin: IO[bytes], stdout: IO[bytes]) -> int:
    """Serve one host on ``stdin``/``stdout`` until ``shutdown`` or end of input (R2)."""
    session = Session(repo)
    for line in _lines(stdin):
        if line is None:
            reply: dict[str, Any] | None = _error(
                BAD_REQUEST, f"the line is over {MAX_LINE_BYTES} bytes; it was dropped"
            )
        elif not line.strip():
            continue
        else:
            try:
                reply = session.handle(decode(line))
            except Refusal as refusal:
                reply = _error(refusal.code, refusal.message)
        if reply is not None:
            stdout.write(written(reply))
            stdout.flush()
        if session.done:
            break
    return 0
