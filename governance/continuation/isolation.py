"""Namespace isolation of each agent with bubblewrap: what the runner can
enforce here, why not when it cannot, and the bwrap command line that gives
an agent its own view of the machine."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from governance.continuation import seccomp
from governance.errors import ISOLATION_UNAVAILABLE, SHARE_REFUSED, UsageError
from governance.output import shown

AUTO = "auto"
NAMESPACES = "namespaces"
NONE = "none"
HOST = "host"
ISOLATION_CHOICES = (AUTO, NAMESPACES, NONE)
NETWORK_CHOICES = (HOST, NONE)

TOOL = "bwrap"
# Where the agent finds its workspace (its cwd and HOME) and its prompt file.
WORKSPACE = "/workspace"
PROMPT_FOLDER = "/run/capsule"
HOSTNAME = "capsule-agent"

# What a program needs to run, shown read-only: folders bound as they are,
# or, where they are symlinks (merged /usr), the same symlinks.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Files of /etc that may point outside it (systemd-resolved's resolv.conf).
FOLLOWED = ("/etc/resolv.conf", "/etc/localtime")

# The size of the agent's private /tmp and /dev/shm (each a tmpfs, which
# would otherwise take up to half the machine's memory).
TMP_BYTES = 256 << 20
SHM_BYTES = 64 << 20

# What --network host opens, said before the agents run.
HOST_NETWORK_OPENS = (
    "--network host: each agent shares the host's network namespace: the network, "
    "loopback (the other agent and every service listening on the host's loopback) and "
    "the host's abstract Unix sockets (what /proc/net/unix lists); the workspace and "
    "prior-context claims are runner-observed, not runner-enforced"
)

_PROBE_SECONDS = 10.0


@dataclass(frozen=True)
class Isolation:
    """The isolation in force for both agents of a run."""

    mode: str
    network: str
    tool: str | None = None
    reason: str | None = None
    disable_userns: bool = False
    # socket(AF_UNIX) and io_uring refused by a seccomp filter (see seccomp.py).
    unix_sockets_denied: bool = False
    # This bwrap sizes a tmpfs (--size): /tmp and /dev/shm hold at most
    # TMP_BYTES and SHM_BYTES.
    sized_tmpfs: bool = False

    @property
    def enforced(self) -> bool:
        return self.mode == NAMESPACES

    @property
    def claims_enforced(self) -> bool:
        """Namespaces that keep each agent to its own workspace and its own
        channels: the host's network namespace would share loopback and the
        host's abstract Unix sockets, between the agents and with the host."""
        return self.enforced and self.network == NONE

    @property
    def tmpfs_bytes(self) -> dict[str, int] | None:
        """The size of each private tmpfs, or None (not isolated, or unbounded)."""
        if not (self.enforced and self.sized_tmpfs):
            return None
        return {"/dev/shm": SHM_BYTES, "/tmp": TMP_BYTES}

    @property
    def namespaces(self) -> tuple[str, ...]:
        if not self.enforced:
            return ()
        found = ("user", "mount", "pid", "ipc", "uts")
        return (*found, "net") if self.network == NONE else found

    def describe(self) -> str:
        if not self.enforced:
            return f"not isolated in namespaces ({self.reason})"
        return (
            f"isolated by {TOOL} in their own {', '.join(self.namespaces)} namespaces, "
            f"network {self.network}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "namespaces": list(self.namespaces),
            "network": self.network,
            "tool": None if self.tool is None else shown(self.tool),
            "reason": self.reason,
            "denied": list(seccomp.DENIED) if self.unix_sockets_denied else [],
            "tmpfs_bytes": self.tmpfs_bytes,
        }


def not_isolated(reason: str) -> Isolation:
    return Isolation(NONE, HOST, reason=reason)


def resolve(
    requested: str,
    network: str | None,
    environ: Mapping[str, str],
    probe: Callable[[Sequence[str]], tuple[int, str]],
    usable: Callable[[str], str | None],
) -> Isolation:
    """What isolation this run gets. ``auto`` takes namespaces when they can be
    made here and otherwise says why not; ``namespaces`` insists, and so does
    ``--network none`` given (an agent is never given the network it was
    denied). ``network`` None is the default: a network namespace of its own
    for each isolated agent. ``probe`` runs a command as the agents' user;
    ``usable`` says why that user cannot run a program, or None."""
    if requested not in ISOLATION_CHOICES:
        raise UsageError(f"--isolation {requested!r}: not one of {ISOLATION_CHOICES}")
    if network is not None and network not in NETWORK_CHOICES:
        raise UsageError(f"--network {network!r}: not one of {NETWORK_CHOICES}")
    if requested == NONE:
        if network == NONE:
            raise UsageError(
                "--network none needs namespace isolation, and --isolation none was given",
                code=ISOLATION_UNAVAILABLE,
            )
        return not_isolated("--isolation none was given")
    isolation = _available(network or NONE, environ, probe, usable)
    if isolation.enforced:
        return isolation
    if requested == NAMESPACES or network == NONE:
        wanted = "--isolation namespaces" if requested == NAMESPACES else "--network none"
        raise UsageError(
            f"{wanted}: cannot isolate the agents in namespaces here: "
            f"{shown(isolation.reason or '')}",
            code=ISOLATION_UNAVAILABLE,
        )
    return isolation


def _available(
    network: str,
    environ: Mapping[str, str],
    probe: Callable[[Sequence[str]], tuple[int, str]],
    usable: Callable[[str], str | None],
) -> Isolation:
    found = shutil.which(TOOL, path=environ.get("PATH", os.defpath))
    if found is None:
        return not_isolated(f"{TOOL} (bubblewrap) is not on PATH")
    found = os.path.abspath(found)
    problem = usable(found)
    if problem is not None:
        return not_isolated(f"the agents' user cannot run {found}: {problem}")
    return _probe(found, network, probe)


def _probe(tool: str, network: str, probe: Callable[[Sequence[str]], tuple[int, str]]) -> Isolation:
    """Isolation as bwrap really gives it here: nested or locked-down
    containers may refuse user namespaces, and older bwraps lack options."""
    code, out = probe([tool, "--help"])
    candidate = Isolation(
        NAMESPACES,
        network,
        tool=tool,
        disable_userns=code == 0 and "--disable-userns" in out,
        unix_sockets_denied=seccomp.supported(),
        sized_tmpfs=code == 0 and "--size" in out,
    )
    fd = seccomp.file_descriptor() if candidate.unix_sockets_denied else None
    try:
        code, out = probe(
            command(candidate, ["/bin/true"], workspace=None, prompt_folder=None, seccomp_fd=fd)
        )
    finally:
        if fd is not None:
            os.close(fd)
    if code == 0:
        return candidate
    line = next((line for line in out.splitlines() if line.strip()), f"exit status {code}")
    return not_isolated(f"{TOOL} cannot create the namespaces here: {line.strip()[:200]}")


def run_probe(
    argv: Sequence[str], preexec: Callable[[], None] | None, **user: Any
) -> tuple[int, str]:
    """Run ``argv`` as the agents' user and return its exit status and output."""
    try:
        done = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
            cwd="/",
            timeout=_PROBE_SECONDS,
            check=False,
            # Safe here: no other thread runs yet, and the function only makes system calls.
            preexec_fn=preexec,
            # A seccomp filter's descriptor, named on the command line.
            pass_fds=_descriptors(argv),
            **user,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return 127, str(exc)
    return done.returncode, (done.stderr + done.stdout).decode("utf-8", errors="replace")


def _descriptors(argv: Sequence[str]) -> tuple[int, ...]:
    """The descriptor ``--seccomp FD`` names in a bwrap command, if any."""
    for index, arg in enumerate(argv[:-1]):
        if arg == "--seccomp":
            return (int(argv[index + 1]),)
    return ()


def _system_view() -> list[str]:
    """Bind the system folders read-only as they are on the host."""
    args: list[str] = []
    for path in SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in FOLLOWED:
        real = os.path.realpath(path)
        if real != path and os.path.exists(real) and not _under(real, SYSTEM):
            args += ["--ro-bind", real, real]
    return args


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def program_view(paths: Sequence[str]) -> list[str]:
    """Show the agent its own program and interpreters where they live outside
    the system folders: each file (never its folder) read-only at its real
    path, and the path it is named by as a symlink to it."""
    args: list[str] = []
    seen: set[str] = set()
    for path in paths:
        named = os.path.abspath(path)
        real = os.path.realpath(path)
        if real not in seen and not _under(real, SYSTEM):
            seen.add(real)
            args += ["--ro-bind", real, real]
        if named != real and named not in seen and not _under(named, SYSTEM):
            seen.add(named)
            args += ["--symlink", real, named]
    return args


def command(
    isolation: Isolation,
    argv: Sequence[str],
    *,
    workspace: str | None,
    prompt_folder: str | None,
    programs: Sequence[str] = (),
    shared: Sequence[str] = (),
    seccomp_fd: int | None = None,
) -> list[str]:
    """The bwrap command that runs ``argv`` isolated: its own user, mount, PID,
    IPC, UTS and network namespaces (the host's network for ``--network
    host``); the system read-only; the workspace read-only at /workspace; the
    prompt folder read-only at /run/capsule; private, empty /tmp and /dev/shm
    of a bounded size; a private /dev and /proc; the root and /dev (tmpfs that
    bwrap makes) read-only; no view of anything else. When the agent ends, so
    does its PID namespace and every process in it; bwrap dies with the
    runner."""
    args = [
        isolation.tool or TOOL,
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--hostname",
        HOSTNAME,
        "--die-with-parent",
        "--new-session",
    ]
    if isolation.disable_userns:
        args.append("--disable-userns")
    if isolation.network == NONE:
        args.append("--unshare-net")
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args += _system_view()
    args += ["--proc", "/proc", "--dev", "/dev"]
    for path, size in (("/dev/shm", SHM_BYTES), ("/tmp", TMP_BYTES)):
        args += ["--size", str(size)] if isolation.sized_tmpfs else []
        args += ["--tmpfs", path]
    args += program_view(programs)
    for path in shared:
        args += ["--ro-bind", path, path]
    if workspace is not None:
        args += ["--ro-bind", workspace, WORKSPACE]
    if prompt_folder is not None:
        args += ["--ro-bind", prompt_folder, PROMPT_FOLDER]
    # Last, once every mount point is made: what bwrap's own tmpfs would
    # otherwise let the agent fill.
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]
    args += ["--chdir", "/" if workspace is None else WORKSPACE, "--", *argv]
    return args


@dataclass(frozen=True)
class Launch:
    """How one agent is started: its command, where it finds its HOME and
    prompt file, the environment bwrap adds, and the seccomp descriptor to
    hand to bwrap (the caller closes it)."""

    command: tuple[str, ...]
    home: str
    prompt_file: str
    env: Mapping[str, str]
    seccomp_fd: int | None = None


def launch(
    isolation: Isolation,
    argv: tuple[str, ...],
    *,
    workspace: str,
    prompt_folder: str,
    prompt_file: str,
    programs: Sequence[str],
    shared: Sequence[str],
) -> Launch:
    """The agent's own command where it is not isolated; else bwrap's, with
    the paths the agent sees. bwrap sets PWD to the folder it changes into:
    it is set here too, so the names recorded are the names the agent sees."""
    if not isolation.enforced:
        return Launch(argv, workspace, prompt_file, {})
    fd = seccomp.file_descriptor() if isolation.unix_sockets_denied else None
    command_ = command(
        isolation,
        argv,
        workspace=workspace,
        prompt_folder=prompt_folder,
        programs=programs,
        shared=shared,
        seccomp_fd=fd,
    )
    inside = f"{PROMPT_FOLDER}/{os.path.basename(prompt_file)}"
    return Launch(tuple(command_), WORKSPACE, inside, {"PWD": WORKSPACE}, fd)


def close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def check_share(path: str, refused: Sequence[str]) -> str:
    """A ``--share`` folder or file: it must exist, and must neither be nor
    hold nor lie inside a place the agents must not see (the runner's current
    folder, where the repository usually is, and HOME)."""
    full = os.path.realpath(path)
    if not os.path.exists(full):
        raise UsageError(f"--share {shown(path)}: no such file or folder", code=SHARE_REFUSED)
    for place in refused:
        other = os.path.realpath(place)
        if full == "/" or _under(full, [other]) or _under(other, [full]):
            raise UsageError(
                f"--share {shown(path)}: it would show the agents {shown(other)} "
                "(the current folder or HOME)",
                code=SHARE_REFUSED,
            )
    return full
