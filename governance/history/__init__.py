"""Capsules over time: where records live, replay at a declared commit, the
history walk and audit.

May import: ``governance.core`` and ``governance.errors``.
"""
