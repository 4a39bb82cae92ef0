"""What every MCP test expects of ``capsule mcp``'s tool list."""

# The tools, in the order tools/list gives them.
TOOLS = (
    "capsule_list_packets",
    "capsule_build",
    "capsule_outline",
    "capsule_suggest",
    "capsule_verify",
    "capsule_status",
    "capsule_replay",
    "capsule_check",
    "capsule_audit",
)
