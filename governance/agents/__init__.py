"""What an agent calls: the Markdown view of a capsule (``render``), the MCP
server's tools (``tools``, pure library code returning JSON-ready values) and
their wiring to the MCP SDK (``server``, the only module that imports the
SDK, and only when ``capsule mcp`` runs, with its output models ``outputs``
and answer texts ``summaries``), client registration snippets
(``mcpconfig``), exact token counts (``tokens``, the optional tokenizer), and
the CGP provider (``cgp*``).

May import: the standard library, pygit2, ``governance.core``,
``governance.history``, ``governance.guards``, ``governance.authoring``,
``governance.errors`` and ``governance.output``; the optional extras: the MCP
SDK in ``server`` (its pydantic in ``outputs`` too) and the tokenizer in
``tokens``, nowhere else. Never
``governance.commands`` or ``governance.cli``.
"""
