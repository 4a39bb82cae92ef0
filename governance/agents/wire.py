"""The stdio transport of ``capsule mcp``: one JSON-RPC message a line each
way, as the SDK's own transport, with an answer for every request line.

The SDK's transport drops a line its JSON parser refuses without a word, and
the client waits until it times out. Its parser refuses a lone surrogate
(``"\\ud800"``), which JavaScript's ``JSON.stringify`` sends for a string
holding one, and so does it bytes that are not UTF-8. Here such a line is
parsed again by the standard library, bytes that are not UTF-8 held as lone
surrogates, and passed on: the handlers refuse every string that is not
Unicode text with a code (``unencodable``). A line that is no JSON at all gets
``Parse error``, and a request that is no JSON-RPC request ``Invalid
Request``, both with ``id`` null where the id itself cannot be answered.
What goes out is what the SDK writes, or, for a message holding such a string
after all (repository text), the same with each shown as U+FFFD."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import IO, Any, NamedTuple

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from governance.output import shown_json

# A line longer than this is refused unread past it: a capsule argument is at
# most 16 MiB (tools.MAX_INPUT_BYTES), which JSON escapes can about double.
MAX_LINE_BYTES = 48 << 20
_CHUNK = 1 << 20
TOO_LONG = f"Invalid Request: a line of over {MAX_LINE_BYTES} bytes, skipped unread"


def unencodable(value: Any, where: str) -> str | None:
    """Where in ``value`` (``where.key[2]``) the first string, or key, that is
    not Unicode text sits: one holding a lone surrogate, as a JSON ``\\ud800``
    escape or a byte that is not UTF-8 arrives. None when every one is text.
    Walked without recursion: a client's nesting is not this stack's depth."""
    todo: list[tuple[Any, str]] = [(value, where)]
    while todo:
        item, at = todo.pop()
        if isinstance(item, str):
            if not _is_text(item):
                return at
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                name = key if isinstance(key, str) else str(key)
                if not _is_text(name):
                    return f"{at} (a key)"
                todo.append((child, f"{at}.{name}"))
        elif isinstance(item, list | tuple):
            todo.extend((child, f"{at}[{i}]") for i, child in reversed(list(enumerate(item))))
    return None


def _is_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _error(request_id: Any, code: int, message: str) -> SessionMessage:
    return SessionMessage(
        types.JSONRPCError(
            jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
        )
    )


def _answerable(request_id: Any) -> bool:
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return False
    return isinstance(request_id, int) or _is_text(request_id)


class Read(NamedTuple):
    """What one line from the client asks: a message to serve, or an answer to
    send back in its place, or neither (a blank line; a broken notification or
    response, which JSON-RPC never answers)."""

    serve: SessionMessage | None = None
    answer: SessionMessage | None = None


def read_line(line: bytes) -> Read:
    """One line from the client, parsed (see the module's docstring)."""
    if len(line) > MAX_LINE_BYTES:
        return Read(answer=_error(None, types.INVALID_REQUEST, TOO_LONG))
    try:
        parsed = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        pass
    else:
        return Read(SessionMessage(parsed))
    text = line.decode("utf-8", "surrogateescape")
    if not text.strip():
        return Read()
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return Read(answer=_error(None, types.PARSE_ERROR, "Parse error: the line is not JSON"))
    if not isinstance(value, dict):
        return Read(answer=_error(None, types.INVALID_REQUEST, "Invalid Request: not an object"))
    if "id" in value and not _answerable(value["id"]):
        return Read(
            answer=_error(
                None,
                types.INVALID_REQUEST,
                "Invalid Request: the id is neither an integer nor a string of Unicode text",
            )
        )
    try:
        return Read(
            SessionMessage(types.jsonrpc_message_adapter.validate_python(value, by_name=False))
        )
    except (ValidationError, RecursionError):
        pass
    if "id" in value and "method" in value:
        return Read(
            answer=_error(
                value["id"], types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request"
            )
        )
    return Read()


def write_line(message: types.JSONRPCMessage) -> bytes:
    """``message`` as one line for the client."""
    try:
        text = message.model_dump_json(by_alias=True, exclude_unset=True)
    except ValueError:
        # Text that is not UTF-8 in an answer (a path from history): shown as
        # U+FFFD, as the command line's --json shows it.
        document = shown_json(message.model_dump(by_alias=True, exclude_unset=True))
        text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8") + b"\n"


def _lines(wire: IO[bytes]) -> Iterator[bytes]:
    """Each line from the client, one longer than MAX_LINE_BYTES cut there and
    the rest of it skipped unkept."""
    while line := wire.readline(MAX_LINE_BYTES + 1):
        if len(line) > MAX_LINE_BYTES:
            while (rest := wire.readline(_CHUNK)) and not rest.endswith(b"\n"):
                pass
        yield line


@contextmanager
def _claimed() -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """The wire: private copies of descriptors 0 and 1, while 0 reads the null
    device and 1 writes to stderr, so nothing else in this process (a library,
    a child it starts) can read a request or write into the answers. Both are
    put back on the way out."""
    saved = [os.dup(0), os.dup(1)]
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    wire_in = os.fdopen(os.dup(saved[0]), "rb")
    wire_out = os.fdopen(os.dup(saved[1]), "wb")
    try:
        yield wire_in, wire_out
    finally:
        for handle in (wire_in, wire_out):
            with suppress(OSError):
                handle.close()
        for fd, copy in enumerate(saved):
            os.dup2(copy, fd)
            os.close(copy)


Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


@asynccontextmanager
async def stdio() -> AsyncIterator[Streams]:
    """The server's read and write streams over this process's stdin and stdout."""
    with _claimed() as (wire_in, wire_out):
        to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        to_client, from_server = anyio.create_memory_object_stream[SessionMessage](0)
        answers = to_client.clone()
        lines = _lines(wire_in)

        async def reader() -> None:
            async with to_server, answers:
                while (line := await _next(lines)) is not None:
                    read = read_line(line)
                    if read.answer is not None:
                        await answers.send(read.answer)
                    if read.serve is not None:
                        await to_server.send(read.serve)

        async def writer() -> None:
            async with from_server:
                async for message in from_server:
                    data = write_line(message.message)
                    await anyio.to_thread.run_sync(_write, wire_out, data)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reader)
            tasks.start_soon(writer)
            try:
                yield from_client, to_client
            finally:
                to_client.close()


async def _next(lines: Iterator[bytes]) -> bytes | None:
    # Abandoned on cancel: a thread blocked reading stdin cannot be interrupted.
    return await anyio.to_thread.run_sync(next, lines, None, abandon_on_cancel=True)


def _write(wire: IO[bytes], data: bytes) -> None:
    wire.write(data)
    wire.flush()
