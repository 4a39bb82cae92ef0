"""The continuation proof: two fresh agents, one capsule, one decision.

``prompt`` holds the fixed instruction text and ``verdict`` the seven checks
over two results. ``proof`` is the library call behind ``capsule continuation
verify`` and ``run``; the runner behind ``run`` is split by job: ``preflight``
(commands, the agent's user can run them, environment), ``users`` (dedicated
uids), ``limits`` (rlimits, no new privileges, a non-dumpable runner),
``workspace``, ``delivery`` (the prompt file and the hashes of what each
agent was handed), ``isolation`` (bwrap namespaces) and ``seccomp`` (its
filter against Unix sockets), ``processes`` (listing and killing),
``stopping`` (SIGTERM and SIGHUP), ``supervision`` (the loop that runs the
agents) and ``evidence`` (what the run adds up to). Modules
here import ``governance.core``, ``governance.errors`` and
``governance.output``, never ``governance.commands``.
This file is imported when the CLI starts: it holds only the two numbers the
command's help shares with the runner.
"""

DEFAULT_TIMEOUT = 300.0
# A day: longer is a mistake, and far longer overflows the clocks it is added to.
MAX_TIMEOUT = 86400.0
