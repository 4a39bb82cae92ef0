"""git-capsule: compile execution packets into verifiable context capsules."""

from __future__ import annotations

__version__ = "0.1.0"
