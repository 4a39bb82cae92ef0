"""Moved to ``support.gitrepo``: this name stays only so branches written
before the move keep importing; new code imports ``support.gitrepo``."""

from support.gitrepo import (
    IDENTITY,
    POLICY,
    ROADMAP,
    Repo,
    Result,
    clean_environ,
    dates,
    git_env,
    isolated,
    packet_yaml,
)

__all__ = [
    "IDENTITY",
    "POLICY",
    "ROADMAP",
    "Repo",
    "Result",
    "clean_environ",
    "dates",
    "git_env",
    "isolated",
    "packet_yaml",
]
