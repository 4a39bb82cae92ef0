"""The one guarded runner of ``capsule`` and the hooks: every way a run can
end (an error with a code, ^C, a closed pipe, the file system or git saying
no) becomes an exit code and at most one line, worded alike for all of them;
and what a command started as a process does once it has that code."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Callable

from governance.errors import CapsuleError, coded
from governance.output import err, message, print_json

# What a shell reports for a process killed by SIGPIPE (128 + 13).
EXIT_BROKEN_PIPE = 141
# What a shell reports for a process killed by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130


def error_line(prog: str, error: CapsuleError) -> str:
    """``prog: error [code]: message``, the message's further lines indented."""
    return message(f"{prog}: error [{error.code}]: {error.message}")


def report(prog: str, error: CapsuleError, as_json: bool) -> None:
    """``error`` on stdout as ``{"error": ...}`` with --json, else one line on stderr."""
    if as_json:
        print_json(error.to_json())
    else:
        sys.stderr.write(error_line(prog, error) + "\n")
        sys.stderr.flush()


def run_guarded(prog: str, body: Callable[[], int], as_json: Callable[[], bool]) -> int:
    """Run ``body`` and return its exit code, or the exit code of how it failed.

    ``as_json`` says, when an error is reported, whether the caller asked for
    JSON (known only once the arguments are parsed). An error that is not the
    user's to fix (a bug) is raised on, with its traceback.
    """
    try:
        try:
            return body()
        except CapsuleError as error:
            report(prog, error, as_json())
            return error.exit_code
        except KeyboardInterrupt:
            err(f"{prog}: interrupted")
            return EXIT_INTERRUPTED
        except BrokenPipeError:
            raise
        except Exception as exc:
            # The file system or git said no: the user's to fix, not a crash.
            reported = coded(exc)
            if reported is None:
                raise
            report(prog, reported, as_json())
            return reported.exit_code
    except BrokenPipeError:
        # The reader went away (`capsule build ... | head`): nothing to say to
        # it, and no second error when Python flushes stdout at exit.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def end_process() -> None:
    """What ``capsule`` and each hook do once, started as a process, they have
    their exit code and print nothing more: leave the objects they made to the
    operating system, as the exit leaves it their memory.

    The interpreter's shutdown still runs in full (threads joined, ``atexit``
    callbacks, stdout and stderr flushed, every module cleared, each object
    freed as its last reference goes), but its cyclic collector passes over
    every object of every imported module, several times: some 15 ms of an
    audit's process (bench/bench_audit.py prints the teardown). Frozen, the
    objects alive now are skipped by those passes; an object that only a
    reference cycle holds is then never freed, so its finaliser does not run,
    which Python does not promise at exit anyway. Nothing in governance has a
    finaliser, and every file a command writes is closed before it returns.
    Never called in a process that goes on (tests call ``main(argv)``).
    """
    gc.freeze()
