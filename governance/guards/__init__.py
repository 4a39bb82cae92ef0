"""What stops a bad change before it lands: ``capsule check`` (``check``), the
staged tree as a snapshot (``staged``), the pre-commit hooks' checks
(``hooks``, with a record's verdict as failure lines in ``record_check`` and
its signature rules in ``signed_records``), the pre-push guard (``push``) and
the plain git hooks (``githook``). Guards return reports; the commands print.

May import: ``governance.core``, ``governance.history``, ``governance.errors``
and ``governance.output`` (atomic writes).
"""
