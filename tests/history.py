"""Moved to ``support.history``: this name stays only so branches written
before the move keep importing; new code imports ``support.history``."""

from support.history import (
    P1,
    P2,
    Cli,
    History,
    audit,
    forge,
    forge_target,
    forge_whole_read,
    git,
    make_history,
    record,
    record_on_a_deleted_branch,
)

__all__ = [
    "P1",
    "P2",
    "Cli",
    "History",
    "audit",
    "forge",
    "forge_target",
    "forge_whole_read",
    "git",
    "make_history",
    "record",
    "record_on_a_deleted_branch",
]
