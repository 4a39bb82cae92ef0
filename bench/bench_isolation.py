"""Benchmark: what namespace isolation adds to the start of a continuation agent.

Two figures, each the median of RUNS (default 10):

1. exec: a trivial program (``/bin/true``) started and waited for as the
   agents' user (a dedicated uid when run as root, with the runner's limits),
   directly and through the bwrap command the runner builds for an isolated
   agent (its namespaces, its view of the file system). The difference is
   the start-up cost of isolation itself.
2. agent: a whole ``run_agents`` of two tiny shell agents (print a result
   and exit), ``duration_ms`` per agent as the evidence records it, without
   and with isolation.

Figures are printed, never asserted. Needs bwrap (``make test`` installs it
as root) and a system where it can create namespaces.

    python bench/bench_isolation.py [--runs N] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from governance.continuation import isolation as iso
from governance.continuation.limits import limiter, limits_for
from governance.continuation.preflight import DEFAULT_PATH, cannot_run
from governance.continuation.supervision import run_agents
from governance.continuation.users import agent_users

AGENT = """\
#!/bin/sh
cat >/dev/null
echo '{}'
"""


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="measured runs per figure")
    parser.add_argument("--smoke", action="store_true", help="one run per figure")
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs = 1
    users = agent_users()
    ids: dict[str, Any] = {}
    if users[0].dedicated:
        ids = {"user": users[0].uid, "group": users[0].gid, "extra_groups": []}
    limits = limits_for(users[0])
    isolation = iso.resolve(
        iso.NAMESPACES,
        "host",
        os.environ,
        probe=lambda command: iso.run_probe(command, limiter(limits), **ids),
        usable=lambda program: cannot_run(program, users[0], DEFAULT_PATH),
    )
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    print(f"isolation: {isolation.describe()}")

    plain, wrapped = [], []
    bwrapped = iso.command(isolation, ["/bin/true"], workspace=None, prompt_folder=None)
    for _ in range(args.runs):
        for samples, command in ((plain, ["/bin/true"]), (wrapped, bwrapped)):
            started = time.perf_counter()
            code, out = iso.run_probe(command, limiter(limits), **ids)
            samples.append(time.perf_counter() - started)
            assert code == 0, out
    print(
        f"exec /bin/true as the agents' user, median of {args.runs}: direct "
        f"{_median_ms(plain):.1f} ms, isolated {_median_ms(wrapped):.1f} ms, added "
        f"{_median_ms(wrapped) - _median_ms(plain):.1f} ms"
    )

    with tempfile.TemporaryDirectory(prefix="capsule-bench-") as folder:
        os.chmod(folder, 0o755)
        agent = Path(folder) / "agent.sh"
        agent.write_text(AGENT)
        agent.chmod(0o755)
        argv_ = (str(agent),)
        durations: dict[str, list[float]] = {"none": [], "namespaces": []}
        for _ in range(args.runs):
            for name, chosen in (
                ("none", iso.not_isolated("bench")),
                ("namespaces", isolation),
            ):
                runs = run_agents(
                    b"{}", (argv_, argv_), timeout=30, users=agent_users(), isolation=chosen
                )
                durations[name] += [run.duration_ms / 1000 for run in runs]
    none, isolated = (_median_ms(durations[k]) for k in ("none", "namespaces"))
    print(
        f"whole agent run (duration_ms), median of {2 * args.runs} agents: not isolated "
        f"{none:.1f} ms, isolated {isolated:.1f} ms, added {isolated - none:.1f} ms"
    )
    print(f"load average at end: {os.getloadavg()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
