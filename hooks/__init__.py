"""Entry points of the pre-commit hooks (installed as ``capsule_hooks``).

Thin on purpose: each parses its argv and calls ``governance.commands._hooks``."""
