"""Fuzz every surface a hostile client or commit reaches (issue 22 item 8): the
MCP wire and tools, CGP envelopes, packets, policies, capsules and records,
with lone surrogates, NUL, huge numbers, deep nesting and over-long strings
among the strategies. Each answer is coded (a registered code with its exit
code), never a traceback, and a session goes on after a bad message.

``pytest tests/test_fuzz.py --hypothesis-profile=fuzz`` runs many more
examples (conftest.py); CI runs the default count."""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from mcp import Client

from governance.agents import cgp, wire
from governance.agents.server import make_server
from governance.agents.tools import Workspace
from governance.cli import main
from governance.errors import REGISTRY
from support.cgp_session import assert_valid
from support.gitrepo import POLICY, ROADMAP, Repo, isolated, packet_yaml
from support.mcp import TOOLS

pytestmark = pytest.mark.slow

PACKET = "packets/P-1/packet.yml"
LONE = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])

# --- strategies ------------------------------------------------------------------

texts = st.one_of(
    st.text(max_size=24),
    st.builds(lambda a, s, b: a + s + b, st.text(max_size=6), LONE, st.text(max_size=6)),
    st.sampled_from(["\x00", "a\x00b", "\x1b[2J", "../../etc/passwd", "packets/P-1/packet.yml",
                     "P-1", "HEAD", "docs/roadmap.md#phase-2", "\u202e", "-h", "--json"]),
    st.integers(1, 4).map(lambda n: "x" * 10**n * 10),  # up to 100,000 characters
)  # fmt: skip
numbers = st.one_of(
    st.integers(),
    st.sampled_from([0, -1, 2**31, 2**63, -(2**63) - 1, 10**400]),
    st.floats(allow_nan=False, allow_infinity=False),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=16,
)


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


deep = st.builds(nested, st.sampled_from([50, 900, 5000, 100_000]), scalars)
anything = st.one_of(values, deep)


def dumped(value: Any) -> bytes:
    """``value`` as one JSON line; a lone surrogate travels as a ``\\ud800`` escape."""
    try:
        return json.dumps(value, ensure_ascii=True).encode("ascii") + b"\n"
    except RecursionError:
        return b"[" * 100_000 + b"]" * 100_000 + b"\n"


def examples(default: int) -> int:
    """A property test's example count: ``default`` in CI, the profile's when a
    longer run asks for more (``--hypothesis-profile=fuzz``)."""
    assert settings.default is not None
    loaded = settings.default.max_examples
    return loaded if loaded > 100 else default


def registered(code: str, exit_code: int) -> None:
    """``code`` is a registered code, answered with its exit code, and no bug."""
    assert code in REGISTRY, code
    assert code != "internal_error"
    assert exit_code == REGISTRY[code].exit_code, (code, exit_code)


# --- a repository --------------------------------------------------------------------


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return {**os.environ, **isolated(tmp_path_factory.mktemp("fuzz-home"))}


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, home: dict[str, str]) -> Repo:
    """A repository the surfaces only read: P-1 over the roadmap and notes."""
    r = Repo(tmp_path_factory.mktemp("fuzz") / "repo", env=home)
    r.write("policies/capsule.yml", POLICY)
    r.write("docs/roadmap.md", ROADMAP)
    r.write("docs/notes.md", "# Notes\n\nSome notes.\n")
    r.write(PACKET, packet_yaml("P-1", ["docs/roadmap.md#phase-2", "docs/notes.md"]))
    r.write("packets/P-1/context.md", "# Context\n\nWhy this work exists.\n")
    r.commit("initial")
    return r


@contextlib.contextmanager
def captured(where: Path) -> Iterator[tuple[io.TextIOWrapper, io.TextIOWrapper]]:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.chdir(where), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def run_json(where: Path, argv: list[str]) -> tuple[int, dict[str, Any]]:
    """``capsule ARGV --json`` in process: its exit code and its document."""
    with captured(where) as (out, err):
        code = main([*argv, "--json"])
    out.flush()
    err.flush()
    assert b"Traceback" not in err.buffer.getvalue()  # type: ignore[attr-defined]
    document = json.loads(out.buffer.getvalue())  # type: ignore[attr-defined]
    assert isinstance(document, dict)
    if code not in (0, 1):
        registered(document["error"]["code"], code)
    return code, document


# --- MCP -----------------------------------------------------------------------------------

KEYS = ["path", "packet", "packets", "at", "goal", "capsule", "all", "record", "spec", "paths",
        "exact_tokens", "render", "max_reads", "target_tokens"]  # fmt: skip


def _arguments() -> st.SearchStrategy[dict[str, Any]]:
    # No deep nesting and no lone surrogate here: the SDK's in-process client
    # recurses into the arguments and encodes them before the server sees them;
    # the wire test above sends both as bytes, and test_mcp.py over stdio.
    return st.dictionaries(st.sampled_from(KEYS) | texts, values, max_size=4).filter(
        lambda arguments: wire.unencodable(arguments, "arguments") is None
    )


@given(line=st.one_of(st.binary(max_size=64), anything.map(dumped), st.builds(
    lambda method, params, rid: dumped({"jsonrpc": "2.0", "id": rid, "method": method,
                                        "params": params}),
    st.sampled_from(["tools/call", "tools/list", "initialize", "resources/read"]) | texts,
    anything, scalars)))  # fmt: skip
def test_fuzz_mcp_wire_line_is_served_answered_or_dropped(line: bytes) -> None:
    read = wire.read_line(line)
    assert read.serve is None or read.answer is None
    if read.answer is not None:
        answer = json.loads(wire.write_line(read.answer.message))
        assert answer["jsonrpc"] == "2.0"
        assert answer["error"]["code"] in (-32700, -32600)


# The SDK's own client cannot send a tool name that is not text (it encodes the
# name into a header first); such a name over stdio is test_mcp.py's.
names = st.sampled_from(TOOLS) | texts.filter(lambda name: wire.unencodable(name, "name") is None)


@settings(max_examples=examples(25))
@given(calls=st.lists(st.tuples(names, _arguments()), min_size=1, max_size=3))
def test_fuzz_mcp_tools_answer_each_call_and_the_session_goes_on(
    shared: Repo, calls: list[tuple[str, dict[str, Any]]]
) -> None:
    server = make_server(Workspace.open(str(shared.path)))

    async def session() -> list[Any]:
        async with Client(server) as client:
            answers = [await client.call_tool(name, arguments) for name, arguments in calls]
            answers.append(await client.call_tool("capsule_list_packets", {}))
            return answers

    *answers, last = anyio.run(session)
    for result in answers:
        if result.is_error:
            document = json.loads(result.content[1].text)
            assert document["error"]["code"] in REGISTRY
            assert document["error"]["code"] != "internal_error"
        else:
            assert isinstance(result.structured_content, dict)
    assert not last.is_error
    assert last.structured_content["packets"][0]["id"] == "P-1"


# --- CGP -------------------------------------------------------------------------------

_QUERY = {"goal": "phase two", "max_frames": 8, "max_tokens": 100_000,
          "anchors": ["capsule://packets/P-1"]}  # fmt: skip
_HELD = {"provider_id": "h", "frame_id": "capsule:P-1@" + "0" * 40 + "/packet"}


def _mutated(base: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """``base`` with some fields replaced, added or dropped."""
    return st.builds(
        lambda changes, dropped: {
            **{k: v for k, v in base.items() if k not in dropped},
            **changes,
        },
        st.dictionaries(st.sampled_from([*base, "as_of", "kinds", "id"]) | texts, anything,
                        max_size=3),
        st.sets(st.sampled_from(list(base))),
    )  # fmt: skip


envelopes = st.one_of(
    anything,
    st.builds(lambda t, rid, q: {"type": t, "id": rid, "query": q},
              st.just("query") | texts, scalars, _mutated(_QUERY) | anything),
    st.builds(lambda rid, frames: {"type": "verify", "id": rid, "request": {"frames": frames}},
              scalars, st.lists(_mutated(_HELD) | anything, max_size=3)),
    st.builds(lambda v: {"type": "handshake", "protocol_version": v},
              st.sampled_from(["contextgraph/1.0", "contextgraph/2.0"]) | texts),
)  # fmt: skip


def _ended(envelope: Any) -> bool:
    return isinstance(envelope, dict) and envelope.get("type") == "shutdown"


@settings(max_examples=examples(30))
@given(sent=st.lists(envelopes | st.binary(max_size=48), min_size=1, max_size=5))
def test_fuzz_cgp_envelopes_get_an_envelope_each_and_the_session_goes_on(
    shared: Repo, sent: list[Any]
) -> None:
    assume(not any(_ended(item) for item in sent))
    lines = [dumped({"type": "handshake", "protocol_version": "contextgraph/1.0"})]
    lines += [item.replace(b"\n", b" ") + b"\n" if isinstance(item, bytes) else dumped(item)
              for item in sent]  # fmt: skip
    lines += [
        dumped({"type": "query", "id": "last", "query": _QUERY}),
        dumped({"type": "shutdown"}),
    ]
    out = io.BytesIO()
    import pygit2  # noqa: PLC0415 (the same import the command makes)

    assert cgp.serve(pygit2.Repository(str(shared.path)), io.BytesIO(b"".join(lines)), out) == 0
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    for reply in replies:
        assert_valid(reply)
        assert reply.get("code") != "internal"
    # The handshake, then an answer or nothing (a blank line, a notification)
    # for each line, and the last query served: the session went on.
    assert replies[0]["type"] == "handshake_ack"
    assert replies[-1]["type"] == "frames"
    assert replies[-1]["id"] == "last"


# --- packets, policies, capsules and records ---------------------------------------------------


def _yaml_of(value: Any) -> str:
    # JSON is YAML: a document of any shape; surrogates and NUL as escapes.
    return dumped(value).decode("ascii")


packets = st.one_of(
    _mutated({"id": "P-1", "goal": "Ship phase two.", "question": "What is phase two?",
              "required_reads": ["docs/roadmap.md#phase-2"], "contracts": [],
              "dependencies": [], "budget": {"target_tokens": 5000}}).map(_yaml_of),
    anything.map(_yaml_of),
    st.text(max_size=200),
)  # fmt: skip
policies = st.one_of(
    _mutated({"target_tokens": 12000, "hard_limit_tokens": 16000, "reserve_tokens": 1500,
              "max_required_reads": 8}).map(_yaml_of),
    anything.map(_yaml_of),
    st.text(max_size=200),
)  # fmt: skip


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory, home: dict[str, str]) -> Repo:
    """A repository each example commits its packet and policy into."""
    r = Repo(tmp_path_factory.mktemp("fuzz") / "scratch", env=home)
    r.write("docs/roadmap.md", ROADMAP)
    r.write("packets/P-1/context.md", "# Context\n\nWhy.\n")
    return r


@settings(max_examples=examples(20))
@given(packet=packets, policy=st.none() | policies)
def test_fuzz_packet_and_policy_build_or_refuse_with_a_code(
    scratch: Repo, packet: str, policy: str | None
) -> None:
    scratch.write(PACKET, packet.encode("utf-8", "surrogatepass"))
    if policy is None:
        (scratch.path / "policies/capsule.yml").unlink(missing_ok=True)
    else:
        scratch.write("policies/capsule.yml", policy.encode("utf-8", "surrogatepass"))
    scratch.commit()
    code, document = run_json(scratch.path, ["build", PACKET])
    assert code != 1
    if code == 0:
        assert document["schema"] == "capsule/1"


def _edit(document: Any, path: list[int], value: Any) -> Any:
    """``document`` with the node that ``path`` picks (each step an index into
    the keys or items there) replaced by ``value``."""
    if not path or not isinstance(document, dict | list) or not document:
        return value
    step, rest = path[0], path[1:]
    if isinstance(document, dict):
        key = sorted(document)[step % len(document)]
        return {**document, key: _edit(document[key], rest, value)}
    at = step % len(document)
    return [*document[:at], _edit(document[at], rest, value), *document[at + 1 :]]


edits = st.tuples(st.lists(st.integers(0, 50), max_size=4), anything)


@pytest.fixture(scope="module")
def genuine(shared: Repo, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    target = tmp_path_factory.mktemp("genuine") / "genuine.json"
    assert run_json(shared.path, ["build", PACKET, "-o", str(target)])[0] == 0
    loaded: dict[str, Any] = json.loads(target.read_bytes())
    return loaded


def _forged(genuine: dict[str, Any], changes: list[tuple[list[int], Any]], target: Path) -> Path:
    """``genuine`` with each change applied, written to ``target``."""
    document: Any = genuine
    for path, value in changes:
        document = _edit(document, path, value)
    target.write_bytes(dumped(document))
    return target


@settings(max_examples=examples(30))
@given(changes=st.lists(edits, min_size=1, max_size=3))
def test_fuzz_capsule_verify_answers_with_a_code(
    shared: Repo, genuine: dict[str, Any], tmp_path_factory: pytest.TempPathFactory,
    changes: list[tuple[list[int], Any]],
) -> None:  # fmt: skip
    target = _forged(genuine, changes, tmp_path_factory.mktemp("verify") / "capsule.json")
    code, result = run_json(shared.path, ["verify", str(target)])
    if code in (0, 1):
        assert "status" in json.dumps(result)


@settings(max_examples=examples(30))
@given(changes=st.lists(edits, min_size=1, max_size=3))
def test_fuzz_record_replay_answers_with_a_code(
    shared: Repo, genuine: dict[str, Any], tmp_path_factory: pytest.TempPathFactory,
    changes: list[tuple[list[int], Any]],
) -> None:  # fmt: skip
    target = _forged(genuine, changes, tmp_path_factory.mktemp("replay") / "record.json")
    code, result = run_json(shared.path, ["replay", str(target)])
    assert code != 1 or result, result
