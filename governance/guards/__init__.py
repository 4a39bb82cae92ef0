"""What stops a bad change before it lands: ``capsule check``, the staged
tree as a snapshot, the pre-commit hooks' checks and the plain git hooks.

May import: ``governance.core``, ``governance.history`` and
``governance.errors``.
"""
