"""What a capsule is made of: the packet, the policy, the snapshot of one
commit, locators, headings and slugs, excerpts, the budget, the canonical
bytes, the trusted capsule/1 builder, the reader and verify.

May import: the standard library, pygit2, markdown-it-py, PyYAML, jsonschema,
and ``governance.errors``. Nothing else of ``governance``: every other stage
builds on this one.
"""
