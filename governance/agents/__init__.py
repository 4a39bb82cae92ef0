"""What an agent calls: the Markdown view of a capsule (``render``), the MCP
server's tools (``tools``, pure library code returning JSON-ready values,
listed with their titles, descriptions and models by ``catalog``, ``inputs``
and ``outputs``) and their wiring to the MCP SDK (``server``, with its stdio
transport ``wire``: the only modules that import the SDK, and only when
``capsule mcp`` runs; answer texts in ``summaries``), client registration
snippets (``mcpconfig``), exact token counts (``tokens``, the optional
tokenizer), and the CGP provider (``cgp*``).

May import: the standard library, pygit2, ``governance.core``,
``governance.history``, ``governance.guards``, ``governance.authoring``,
``governance.errors`` and ``governance.output``; the optional extras: the MCP
SDK in ``server`` and ``wire`` (its pydantic in ``catalog``, ``inputs`` and
``outputs`` too) and the tokenizer in ``tokens``, nowhere else. Never
``governance.commands`` or ``governance.cli``.
"""
