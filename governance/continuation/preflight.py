"""Before any agent runs: split and resolve the agent commands, check that the
agent's user can run them, and settle the environment the agents get."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
from collections.abc import Iterator, Mapping, Sequence

from governance.continuation.delivery import PROMPT_VARIABLE
from governance.continuation.users import RunAs
from governance.errors import (
    AGENT_COMMAND_INVALID,
    AGENT_NOT_EXECUTABLE,
    AGENT_NOT_FOUND,
    PASS_ENV_INVALID,
    PASS_ENV_RESERVED,
    PASS_ENV_UNSET,
    UsageError,
)
from governance.output import shown

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
LOCALE = "C.UTF-8"
SLOT_VARIABLE = "CAPSULE_AGENT_SLOT"
# Names the runner sets itself; passing them on would undo the fresh start.
RESERVED_ENV = frozenset({"HOME", "LANG", "LC_ALL", "PWD", SLOT_VARIABLE, PROMPT_VARIABLE})

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def parse_command(command: str, option: str) -> tuple[str, ...]:
    """Split CMD like a POSIX shell would (no shell runs it) and resolve its
    program now, against the runner's PATH and cwd: the agent's own cwd is its
    empty workspace."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(
            f"{option}: cannot split {shown(command)!r}: {exc}", code=AGENT_COMMAND_INVALID
        ) from None
    if not argv:
        raise UsageError(f"{option}: the command is empty", code=AGENT_COMMAND_INVALID)
    program = argv[0]
    found = program if "/" in program else shutil.which(program)
    # Absolute: the agent starts in its workspace, not in our cwd.
    found = None if found is None else os.path.abspath(found)
    if found is None or not os.path.isfile(found):
        raise UsageError(
            f"{option}: {shown(program)}: no such program" + ("" if "/" in program else " on PATH"),
            code=AGENT_NOT_FOUND,
            program=shown(program),
        )
    return (found, *argv[1:])


def check_executable(program: str, option: str, run_as: RunAs, agent_path: str) -> None:
    """Refuse, before anything starts, a program the agent's user cannot run.

    A dedicated uid owns nothing and belongs to no group, so only the "others"
    permission bits speak for it: every folder on the way must be searchable,
    the program executable and, for a script, readable, and so its interpreter
    (ACLs are not consulted). Otherwise the agent runs as the runner's own
    user, and ``os.access`` answers for it.
    """
    problem = cannot_run(program, run_as, agent_path)
    if problem is not None:
        raise UsageError(
            f"{option}: {shown(program)}: the agent's user ({run_as.describe()}) cannot run "
            f"it: {shown(problem)}",
            code=AGENT_NOT_EXECUTABLE,
            program=shown(program),
        )


def cannot_run(program: str, run_as: RunAs, agent_path: str) -> str | None:
    """Why the agent's user cannot run ``program``, or None (see check_executable)."""
    if run_as.dedicated:
        return _others_cannot_run(program, agent_path, depth=0)
    return None if os.access(program, os.X_OK) else f"{program} is not executable"


def program_chain(program: str, agent_path: str) -> list[str]:
    """The program and the interpreters its ``#!`` lines name (``env``'s NAME
    looked up on the agent's PATH), as far as four levels: the files an
    isolated agent must see to start."""
    chain = [program]
    path = program
    for _ in range(4):
        script = _shebang(path)
        if script is None:
            break
        interpreter, argument = script
        chain.append(interpreter)
        path = interpreter
        if os.path.basename(interpreter) == "env":
            name = next((word for word in argument.split() if not word.startswith("-")), None)
            found = None if name is None else shutil.which(name, path=agent_path)
            if found is None:
                break
            chain.append(found)
            path = found
    return chain


def _folders(path: str) -> Iterator[str]:
    """Every folder the kernel walks to reach ``path``, as named and as resolved."""
    seen: set[str] = set()
    for full in (os.path.abspath(path), os.path.realpath(path)):
        folder = os.path.dirname(full)
        while folder not in seen:
            seen.add(folder)
            yield folder
            folder = os.path.dirname(folder)


def _shebang(path: str) -> tuple[str, str] | None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", errors="replace").strip()
    interpreter, _, argument = line.partition(" ")
    return interpreter, argument.strip()


def _others_cannot_run(path: str, agent_path: str, *, depth: int) -> str | None:
    for folder in _folders(path):
        try:
            mode = os.stat(folder).st_mode
        except OSError as exc:
            return f"{folder}: {exc.strerror}"
        if not mode & stat.S_IXOTH:
            return f"{folder} is not searchable by others (mode {stat.S_IMODE(mode):04o})"
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    mode = stat.S_IMODE(st.st_mode)
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    if not mode & stat.S_IXOTH:
        return f"{path} is not executable by others (mode {mode:04o})"
    script = _shebang(path)
    if script is None or depth >= 4:
        return None
    if not mode & stat.S_IROTH:
        return f"{path} is a script that others cannot read (mode {mode:04o})"
    interpreter, argument = script
    problem = _others_cannot_run(interpreter, agent_path, depth=depth + 1)
    if problem is not None or os.path.basename(interpreter) != "env":
        return problem
    # `#!/usr/bin/env NAME`: NAME is looked up on the agent's PATH, not ours.
    name = next((word for word in argument.split() if not word.startswith("-")), None)
    if name is None:
        return None
    found = shutil.which(name, path=agent_path)
    if found is None:
        return f"its interpreter {name} is not on the agent's PATH ({agent_path})"
    return _others_cannot_run(found, agent_path, depth=depth + 1)


def check_pass_env(names: Sequence[str], environ: Mapping[str, str]) -> tuple[str, ...]:
    for name in names:
        if not _ENV_NAME.match(name):
            raise UsageError(
                f"--pass-env {name!r}: not an environment variable name", code=PASS_ENV_INVALID
            )
        if name in RESERVED_ENV:
            raise UsageError(
                f"--pass-env {name}: the runner sets {name} itself "
                f"(reserved: {', '.join(sorted(RESERVED_ENV))})",
                code=PASS_ENV_RESERVED,
            )
        if name not in environ:
            raise UsageError(
                f"--pass-env {name}: {name} is not set in this environment",
                code=PASS_ENV_UNSET,
            )
    return tuple(sorted(set(names)))


def agent_environment(
    slot: str,
    workspace: str,
    prompt_file: str,
    passed: Sequence[str],
    environ: Mapping[str, str],
) -> dict[str, str]:
    """Exactly what an agent's environment holds: the runner's few names and
    the values of the names passed on."""
    env = {
        "PATH": DEFAULT_PATH,
        "LANG": LOCALE,
        "LC_ALL": LOCALE,
        "HOME": workspace,
        SLOT_VARIABLE: slot,
        PROMPT_VARIABLE: prompt_file,
    }
    env.update({name: environ[name] for name in passed})
    return env


def agent_path(passed: Sequence[str], environ: Mapping[str, str]) -> str:
    """The PATH the agents will see."""
    return environ["PATH"] if "PATH" in passed else DEFAULT_PATH
