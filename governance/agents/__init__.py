"""What an agent calls: the Markdown view of a capsule (``render``), the MCP
server's tools (``tools``, pure library code returning JSON-ready values) and
their wiring to the MCP SDK (``server``, the only module that imports the
SDK, and only when ``capsule mcp`` runs), client registration snippets
(``mcpconfig``), exact token counts (``tokens``, the optional tokenizer), and
the CGP provider (``cgp*``).

May import: the standard library, pygit2, ``governance.core``,
``governance.history``, ``governance.guards``, ``governance.authoring``,
``governance.errors`` and ``governance.output``; the optional extras ``mcp``
(in ``server`` only) and the tokenizer (in ``tokens`` only). Never
``governance.commands`` or ``governance.cli``.
"""
