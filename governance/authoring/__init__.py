"""Helping a maintainer write packets, deterministically and without a model:
the outline of a Markdown file with the selector and cost of every heading
(``outline``), a starter policy and packet for a repository (``init``), and
proposed reads for a goal and packets made from them (``suggest``, ``new``).
The packet stays the authority: nothing here changes what a build selects.

May import: ``governance.core`` and ``governance.errors``.
"""
