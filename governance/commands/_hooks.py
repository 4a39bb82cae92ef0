"""The pre-commit hooks' output: run a guard of ``governance.guards.hooks``
inside the guarded runner and print its failures, one line each."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from governance.commands._args import Parser
from governance.commands._boundary import end_process, run_guarded
from governance.commands._secrets import unscanned_line
from governance.core.words import plural
from governance.output import err, out


def run_hook(parser: Parser, argv: Sequence[str] | None, guard: str) -> int:
    """Parse ``argv`` with the hook's ``parser``, run the ``guard`` named (``packets``
    ``records`` or ``push``) on the repository of the current directory, print its
    failures on stdout and a summary on stderr."""
    name = parser.prog
    if argv is None:
        # Started as a hook: paths in UTF-8 whatever the locale (see governance.commands._utf8).
        from governance.commands._utf8 import ensure_utf8_mode  # noqa: PLC0415 (defers locale, codecs)

        ensure_utf8_mode()

    def body() -> int:
        args = parser.parse_args(argv)
        # Loaded once the arguments parse: --help and a usage error stay fast.
        from governance.core.repository import open_repository  # noqa: PLC0415 (defers pygit2)
        from governance.guards import hooks  # noqa: PLC0415 (defers pygit2)
        from governance.guards.check import exit_code, once  # noqa: PLC0415 (defers pygit2)

        if guard == "push":
            report = _push_report(open_repository(), args.remote)
        else:
            check = {"packets": hooks.packets_guard, "records": hooks.records_guard}[guard]
            report = check(open_repository(), args.paths)
        reported = once(report.failures)
        for failure in reported:
            out(failure.line())
        sys.stdout.flush()
        if guard != "records" and report.checked:
            from governance.core.secretscan import detector  # noqa: PLC0415 (loaded by the builds)

            unavailable = detector().unavailable
            if unavailable is not None:
                err(unscanned_line(name, "the packets were", unavailable))
        if report.failures:
            failing = len({f.path for f in report.failures})
            err(
                f"{name}: {plural(len(reported), 'failure')} in {failing} of "
                f"{plural(len(report.checked), report.what)} checked against {report.against}"
            )
        return exit_code(report.failures)

    code = run_guarded(name, body, lambda: False)
    if argv is None:
        code = end_process(name, code)
    return code


def _push_report(repo: Any, remote: str | None) -> Any:
    from governance.guards.push import (  # noqa: PLC0415 (defers pygit2)
        from_pre_commit,
        parse_push_lines,
        push_guard,
    )

    # pre-commit reads git's lines itself and names the pushed ref in its environment.
    pushes = from_pre_commit(os.environ)
    if pushes is None:
        pushes = parse_push_lines(sys.stdin.read())
    # pre-commit passes a hook no arguments; it names the remote in its environment.
    return push_guard(repo, pushes, remote or os.environ.get("PRE_COMMIT_REMOTE_NAME"))
