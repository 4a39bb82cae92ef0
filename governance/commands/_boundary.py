"""The one guarded runner of ``capsule`` and the hooks: every way a run can
end (an error with a code, ^C, a closed pipe, the file system or git saying
no) becomes an exit code and at most one line, worded alike for all of them;
and what a command started as a process does once it has that code."""

from __future__ import annotations

import atexit
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


def end_process(prog: str, code: int) -> int:
    """What ``capsule`` and each hook do once, started as a process, they have
    their exit ``code``: leave at once, without the interpreter's teardown.

    That teardown clears every module and frees every object one by one (an
    audit holds a memo of parsed trees, caches, libgit2's own): some 10 ms of
    an audit's process that change nothing outside it (bench/bench_audit.py
    prints the teardown). What of it matters is done here, in its order: the
    ``atexit`` callbacks run, then stdout and stderr are flushed, and the
    process ends with ``os._exit``. Every file a command writes is closed
    before it returns, and nothing in governance has a finaliser, so nothing
    is lost with the objects.

    A flush that fails is reported like a write that fails while the command
    runs: into a closed pipe, quietly, exit 141; any other error (a full disk)
    as ``prog: error [io_error]: ...`` on stderr, exit 2, never a silent 0.

    A thread that is not a daemon and still runs (none of ours outlives its
    command; the MCP SDK's worker threads may) would be killed mid-work:
    then nothing is skipped and ``code`` is returned, for the interpreter's
    shutdown to join it first, as it always does; its objects are frozen, so
    that shutdown's collector does not walk them. Never called in a process
    that goes on (tests call ``main(argv)``)."""
    if _running_threads():
        gc.freeze()
        return code
    atexit._run_exitfuncs()
    code = _flush(prog, code)
    os._exit(code)


def _running_threads() -> bool:
    """Whether a thread that is not a daemon, other than this one, still runs:
    one the interpreter's shutdown would join (only ``threading`` makes such
    threads, so without it loaded there is none)."""
    threading = sys.modules.get("threading")
    if threading is None:
        return False
    main = threading.main_thread()
    return any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate())


def _flush(prog: str, code: int) -> int:
    """Flush stdout, then stderr, and return the exit code once they are:
    ``code``, or what a failed stdout flush makes it."""
    stdout, stderr = sys.stdout, sys.stderr
    if stdout is not None and not stdout.closed:
        try:
            stdout.flush()
        except BrokenPipeError:
            code = EXIT_BROKEN_PIPE
        except OSError as exc:
            reported = coded(exc)
            assert reported is not None  # an OSError always has a code
            code = reported.exit_code
            if stderr is not None and not stderr.closed:
                with contextlib.suppress(OSError):
                    stderr.write(error_line(prog, reported) + "\n")
    if stderr is not None and not stderr.closed:
        # Nowhere is left to say that stderr failed.
        with contextlib.suppress(OSError):
            stderr.flush()
    return code
