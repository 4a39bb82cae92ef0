"""``capsule mcp``: the tools of ``agents.catalog`` and the repository's
packets, capsules and records served over MCP with the official SDK's
low-level server, on the stdio transport of ``agents.wire``. With ``wire``,
the only module importing the SDK.

A tool error is a result with ``isError: true`` and no structured content:
the TypeScript SDK's client (1.32) validates structured content against the
tool's output schema whenever there is some, errors included, and the Python
SDK's skips it on errors; a result without it passes both. Its text names the
stable code, the message and the advice; a second text holds the same as the
command line's ``{"error": {...}}``."""

from __future__ import annotations

import json
import logging
import urllib.parse
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from governance import __version__, errors
from governance.agents import tools, wire
from governance.agents.catalog import INSTRUCTIONS, Tool, catalog
from governance.agents.inputs import input_schema
from governance.agents.tools import Workspace
from governance.core.capsule import CONTEXT_FILE, PACKET_FILE, PACKETS_DIR
from governance.errors import CapsuleError, SourceError, UsageError, coded
from governance.output import message, printable, shown_json

logger = logging.getLogger(__name__)

URI_PREFIX = "capsule://"
# The code MCP gives a resource that does not exist (the specification's).
RESOURCE_NOT_FOUND = -32002
_NOT_FOUND = {errors.SOURCE_MISSING, errors.INVALID_PACKET_ID}


def error_document(error: CapsuleError) -> dict[str, Any]:
    """``{"error": {"code", "message", "advice"?, ...details}}``."""
    document = error.to_json()
    advice = errors.advice(error.code)
    if advice:
        found = document["error"]
        document["error"] = {"code": found["code"], "message": found["message"], "advice": advice}
        document["error"].update(found)
    return shown_json(document)  # type: ignore[no-any-return]


def error_result(error: CapsuleError) -> types.CallToolResult:
    """A tool error any host reads: ``error [code]: message`` and the advice, then
    the error as JSON; no structured content."""
    document = error_document(error)
    text = message(f"error [{error.code}]: {error.message}")
    if "advice" in document["error"]:
        text += "\n" + printable(f"advice: {document['error']['advice']}")
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text=text),
            types.TextContent(type="text", text=json.dumps(document, ensure_ascii=False)),
        ],
        is_error=True,
    )


def not_text(where: str) -> UsageError:
    """The error for a string that is not Unicode text at ``where``."""
    return UsageError(
        f"{printable(where)}: not Unicode text (a lone surrogate, such as the JSON escape "
        "\\ud800 alone, or a byte that is not UTF-8): send every string as UTF-8 text",
        code=errors.INVALID_ARGUMENTS,
        argument=printable(where),
    )


def _invalid(exc: ValidationError) -> CapsuleError:
    # Field names and pydantic's words only, one per argument: the rejected
    # values are the caller's, and an optional argument's second branch (null)
    # says nothing.
    problems: dict[str, str] = {}
    for err in exc.errors():
        loc = [str(p) for p in err["loc"] if p not in ("none",)]
        name = loc[0] if loc else "arguments"
        if err["type"] == "extra_forbidden":
            problems.setdefault(name, "not an argument of this tool")
        elif err["type"] != "none_required":
            problems.setdefault(name, err["msg"][:1].lower() + err["msg"][1:])
    shown = "; ".join(f"{printable(name)}: {why}" for name, why in problems.items())
    return UsageError(
        f"invalid arguments: {shown}",
        code=errors.INVALID_ARGUMENTS,
        arguments=[printable(name) for name in problems],
    )


def _answer(ws: Workspace, tool: Tool, arguments: dict[str, Any]) -> types.CallToolResult:
    if not ws.write_enabled and "record" in arguments and tool.name.endswith("build"):
        return error_result(
            UsageError(
                "writing a record is disabled: the server was started without --enable-write",
                code=errors.WRITE_DISABLED,
            )
        )
    try:
        given = tool.input.model_validate(arguments)
    except ValidationError as exc:
        return error_result(_invalid(exc))
    try:
        value = tool.call(ws, given)
    except CapsuleError as error:
        return error_result(error)
    except Exception as exc:
        reported = coded(exc)
        if reported is None:
            # A bug: the traceback goes to stderr, the client gets a coded answer.
            logger.exception("%s failed", tool.name)
            reported = CapsuleError(
                f"{tool.name} failed unexpectedly ({type(exc).__name__}); the server's "
                "stderr has the traceback",
                code=errors.INTERNAL_ERROR,
            )
        return error_result(reported)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=tool.text(value))],
        structured_content=value,
    )


def _tool_listing(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=input_schema(tool.input),
        output_schema=tool.output.model_json_schema(mode="serialization"),
        annotations=types.ToolAnnotations(
            title=tool.title,
            read_only_hint=tool.read_only,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )


# --- resources ------------------------------------------------------------------

_MIME = {".json": "application/json", ".yml": "application/yaml", ".md": "text/markdown"}

TEMPLATES = [
    types.ResourceTemplate(
        uri_template=URI_PREFIX + PACKETS_DIR + "/{id}",
        name="capsule",
        title="A packet's capsule",
        description="The capsule of packet {id} built at HEAD: its exact canonical JSON, as "
        "capsule_build returns it",
        mime_type="application/json",
    ),
    types.ResourceTemplate(
        uri_template=URI_PREFIX + PACKETS_DIR + "/{id}/" + PACKET_FILE,
        name="packet",
        title="A packet",
        description="packets/{id}/packet.yml as committed at HEAD",
        mime_type="application/yaml",
    ),
    types.ResourceTemplate(
        uri_template=URI_PREFIX + PACKETS_DIR + "/{id}/" + CONTEXT_FILE,
        name="context",
        title="A packet's context",
        description="packets/{id}/context.md as committed at HEAD",
        mime_type="text/markdown",
    ),
    types.ResourceTemplate(
        uri_template=URI_PREFIX + PACKETS_DIR + "/{id}/capsules/{record}",
        name="record",
        title="A capsule record",
        description="a capsule record packets/{id}/capsules/{record} (<commit prefix>.json) "
        "as committed at HEAD",
        mime_type="application/json",
    ),
]


def _resource_error(error: CapsuleError, uri: str) -> MCPError:
    code = RESOURCE_NOT_FOUND if error.code in _NOT_FOUND else types.INVALID_PARAMS
    return MCPError(
        code=code,
        message=message(f"error [{error.code}]: {error.message}"),
        data={**error_document(error)["error"], "uri": printable(uri)},
    )


def _listed(ws: Workspace) -> list[types.Resource]:
    if ws.repo.head_is_unborn:
        # A repository without commits yet still gets a server, with no resources.
        return []
    found = [
        types.Resource(
            uri=URI_PREFIX + urllib.parse.quote(f"{PACKETS_DIR}/{p['id']}", safe="/"),
            name=p["id"],
            title=f"capsule of {p['id']}",
            description="the packet's capsule built at HEAD (read when read)",
            mime_type="application/json",
        )
        for p in tools.list_packets(ws)["packets"]
    ]
    for path in tools.committed_files(ws):
        suffix = path[path.rfind(".") :]
        found.append(
            types.Resource(
                uri=URI_PREFIX + urllib.parse.quote(path, safe="/"),
                name=path,
                description="committed at HEAD (read when read)",
                mime_type=_MIME.get(suffix, "text/plain"),
            )
        )
    return found


def _read(ws: Workspace, uri: str) -> types.TextResourceContents:
    """The resource at ``uri``: a packet's capsule, or a packet, context or
    record committed at HEAD, read now."""
    if not uri.startswith(URI_PREFIX):
        raise SourceError(f"{uri}: not a capsule:// resource", code=errors.SOURCE_MISSING)
    # Split before unquoting: %2F is a character of a segment, never a folder.
    parts = [
        urllib.parse.unquote(part, errors="surrogateescape")
        for part in uri[len(URI_PREFIX) :].split("/")
    ]
    path = "/".join(parts)
    kind = len(parts) >= 2 and parts[0] == PACKETS_DIR and parts[1] != ""
    if kind and len(parts) == 2:
        built = tools.build(ws, tools.packet_file(ws, parts[1], id_only=True))
        return types.TextResourceContents(
            uri=uri, mime_type="application/json", text=built["capsule_json"]
        )
    whole = len(parts) == 3 and parts[2] in (PACKET_FILE, CONTEXT_FILE)
    record = len(parts) == 4 and parts[2] == "capsules" and parts[3].endswith(".json")
    if not (kind and (whole or record)):
        raise SourceError(
            f"{path}: no such resource: the templates are "
            + ", ".join(t.uri_template for t in TEMPLATES),
            code=errors.SOURCE_MISSING,
        )
    data = tools.read_committed(ws, path)
    return types.TextResourceContents(
        uri=uri,
        mime_type=_MIME[path[path.rfind(".") :]],
        text=data.decode("utf-8", "replace"),
    )


# --- the server -----------------------------------------------------------------


def make_server(ws: Workspace) -> Server[Any]:
    """The server over ``ws``: tools, resources and resource templates; no
    prompts (none is advertised: there are none)."""
    table = {tool.name: tool for tool in catalog(ws)}
    listing = types.ListToolsResult(tools=[_tool_listing(t) for t in table.values()])

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listing

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        where = wire.unencodable(params.name, "name") or wire.unencodable(
            params.arguments, "arguments"
        )
        if where is not None:
            return error_result(not_text(where))
        tool = table.get(params.name)
        if tool is None:
            return error_result(
                UsageError(
                    f"no tool {printable(params.name)!r} here: the tools are " + ", ".join(table),
                    code=errors.UNKNOWN_TOOL,
                )
            )
        return _answer(ws, tool, dict(params.arguments or {}))

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        try:
            return types.ListResourcesResult(resources=_listed(ws))
        except CapsuleError as error:
            raise _resource_error(error, URI_PREFIX) from None

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = params.uri
        try:
            if wire.unencodable(uri, "uri") is not None:
                raise not_text("uri")
            return types.ReadResourceResult(contents=[_read(ws, uri)])
        except CapsuleError as error:
            raise _resource_error(error, uri) from None
        except Exception as exc:
            reported = coded(exc)
            if reported is None:
                raise
            raise _resource_error(reported, uri) from None

    return Server(
        "git-capsule",
        version=__version__,
        title="git-capsule",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def serve(ws: Workspace) -> None:
    """Serve ``ws`` on stdio until the client closes it."""
    server = make_server(ws)

    async def main() -> None:
        async with wire.stdio() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
