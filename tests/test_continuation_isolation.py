"""Hostile stub agents against the runner's namespace isolation: one named
witness per channel, each run without isolation (what the runner allowed
before), isolated (what it allows now) and, where the network matters, with
``--network none``. The runner is real, the agents are real executables, and
every channel is probed from both ends and from the host afterwards.

These need bwrap and namespaces: ``make test`` and ``.ci/run`` install
bubblewrap when it is missing (CI runs as root)."""

# The stub fixtures come from test_continuation_run: pytest passes them in by
# name, which ruff reads as redefining the imported names.
# ruff: noqa: F811

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_continuation_run import (  # noqa: F401 (the fixtures)
    AS_ROOT,
    agent_python,
    drop_box,
    run,
    stub,
    stub_folder,
)

from governance.continuation import isolation, limits, processes, seccomp

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NONE = ("--isolation", "none")
ISOLATED = ("--isolation", "namespaces")
HOST_NETWORK = ("--isolation", "namespaces", "--network", "host")
MODES = {"not-isolated": NONE, "isolated": ISOLATED}

# Two ways to an AF_UNIX socket that do not call socket(AF_UNIX): the agent
# programs below define these, and the tests of the host's sockets use them.
UNIX_WITHOUT_SOCKET = """\
import ctypes, mmap, platform, socket, struct

def unpaired():
    # One end of a datagram socketpair, disconnected by connect(AF_UNSPEC):
    # an AF_UNIX socket free to bind or send to any abstract name.
    libc = ctypes.CDLL(None, use_errno=True)
    end, other = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    other.close()
    if libc.connect(end.fileno(), ctypes.create_string_buffer(16), 16) != 0:
        raise OSError(ctypes.get_errno(), "connect(AF_UNSPEC)")
    return end

def uring_socket(family, kind):
    # socket(family, kind, 0) made by io_uring's IORING_OP_SOCKET (opcode 45).
    setup, enter = {"x86_64": (425, 426), "aarch64": (425, 426)}[platform.machine()]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    params = ctypes.create_string_buffer(120)
    ring = libc.syscall(ctypes.c_long(setup), ctypes.c_long(4), params)
    if ring < 0:
        raise OSError(ctypes.get_errno(), "io_uring_setup")
    sq_entries, cq_entries = struct.unpack_from("<II", params, 0)
    sq_tail, sq_mask, sq_array = (struct.unpack_from("<I", params, o)[0] for o in (44, 48, 64))
    cq_head, cq_mask, cqes = (struct.unpack_from("<I", params, o)[0] for o in (80, 88, 100))
    sq = mmap.mmap(ring, sq_array + 4 * sq_entries, offset=0)
    cq = mmap.mmap(ring, cqes + 16 * cq_entries, offset=0x8000000)
    sqes = mmap.mmap(ring, 64 * sq_entries, offset=0x10000000)
    # fd = domain, off = type, len = protocol.
    sqes[0:64] = struct.pack("<BBHiQQII", 45, 0, 0, family, kind, 0, 0, 0) + bytes(32)
    tail = struct.unpack_from("<I", sq, sq_tail)[0]
    index = tail & struct.unpack_from("<I", sq, sq_mask)[0]
    struct.pack_into("<I", sq, sq_array + 4 * index, 0)
    struct.pack_into("<I", sq, sq_tail, tail + 1)
    args = [ctypes.c_long(n) for n in (enter, ring, 1, 1, 1)]
    if libc.syscall(*args, None, ctypes.c_long(0)) < 0:
        raise OSError(ctypes.get_errno(), "io_uring_enter")
    head = struct.unpack_from("<I", cq, cq_head)[0]
    index = head & struct.unpack_from("<I", cq, cq_mask)[0]
    made = struct.unpack_from("<i", cq, cqes + 16 * index + 8)[0]
    for area in (sq, cq, sqes):
        area.close()
    os.close(ring)
    if made < 0:
        raise OSError(-made, "IORING_OP_SOCKET")
    return socket.socket(fileno=made)
"""

# Agent a puts its answer into every channel and stays a while; agent b looks
# for it in each. Each channel is a send and a receive function; b's result
# says what it got through each, a's why a send failed.
COLLUDE = """\
import socket, threading, time
token = "TOKEN"
answer = "collusion " + token
name = "\\0capsule-" + token
UNIX_WITHOUT_SOCKET
def serve(server):
    server.listen()
    def loop():
        while True:
            connection, _ = server.accept()
            connection.sendall(answer.encode())
            connection.close()
    threading.Thread(target=loop, daemon=True).start()
def keep_sending(end, to):
    def loop():
        until = time.monotonic() + 2.5
        while time.monotonic() < until:
            try:
                end.sendto(answer.encode(), to)
            except OSError:
                pass
            time.sleep(0.05)
    threading.Thread(target=loop, daemon=True).start()
kept = {}
CHANNELS
sent, got = {}, {}
if slot == "a":
    for channel, (send, _) in CHANNELS.items():
        try:
            send()
            sent[channel] = "nothing"
        except OSError as exc:
            sent[channel] = "send failed: " + type(exc).__name__
    time.sleep(3)
else:
    got = dict.fromkeys(CHANNELS, "nothing")
    until = time.monotonic() + 2.5
    while time.monotonic() < until and "nothing" in got.values():
        for channel, (_, receive) in CHANNELS.items():
            if got[channel] == "nothing":
                try:
                    got[channel] = receive()
                except OSError:
                    pass
        time.sleep(0.05)
result["rationale"] = json.dumps(sent if slot == "a" else got)
"""

CHANNELS = {
    "world-writable-folder": (
        'open(os.path.join("DROP", token), "w").write(answer)',
        'return open(os.path.join("DROP", token)).read()',
    ),
    "dev-shm": (
        'open("/dev/shm/capsule-" + token, "w").write(answer)',
        'return open("/dev/shm/capsule-" + token).read()',
    ),
    "sysv-ipc": (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.shmat.restype = ctypes.c_void_p\n"
        "libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]\n"
        "ident = libc.shmget(KEY, 64, 0o1000 | 0o666)\n"
        "ctypes.memmove(libc.shmat(ident, None, 0), answer.encode(), len(answer))",
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.shmat.restype = ctypes.c_void_p\n"
        "libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]\n"
        "ident = libc.shmget(KEY, 64, 0o666)\n"
        "if ident < 0:\n"
        "    raise OSError(ctypes.get_errno(), 'shmget')\n"
        "return ctypes.string_at(libc.shmat(ident, None, 0), len(answer)).decode()",
    ),
    "abstract-unix-socket": (
        "server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        'server.bind(name + "-stream")\n'
        "serve(server)",
        "client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        'client.connect(name + "-stream")\n'
        "return client.recv(100).decode()",
    ),
    # socket(AF_UNIX) refused, a socketpair's end unpaired binds and sends as well.
    "abstract-socketpair": (
        'keep_sending(unpaired(), name + "-pair")',
        'if "pair" not in kept:\n'
        "    kept['pair'] = unpaired()\n"
        '    kept["pair"].bind(name + "-pair")\n'
        '    kept["pair"].setblocking(False)\n'
        'return kept["pair"].recv(100).decode()',
    ),
    # io_uring makes a full stream socket without calling socket().
    "io-uring-socket": (
        "server = uring_socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        'server.bind(name + "-uring")\n'
        "serve(server)",
        "client = uring_socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        'client.connect(name + "-uring")\n'
        "return client.recv(100).decode()",
    ),
    "loopback-tcp": (
        'server = socket.socket()\nserver.bind(("127.0.0.1", PORT))\nserve(server)',
        'client = socket.create_connection(("127.0.0.1", PORT), timeout=1)\n'
        "return client.recv(100).decode()",
    ),
}

COLLUSION_MODES = {"not-isolated": NONE, "isolated": (), "host-network": HOST_NETWORK}

# What each channel does, by mode: True when agent b got a's answer. The
# default run isolates each agent in namespaces of its own, network included.
OPEN = {
    "world-writable-folder": {"not-isolated": True, "isolated": False, "host-network": False},
    "dev-shm": {"not-isolated": True, "isolated": False, "host-network": False},
    "sysv-ipc": {"not-isolated": True, "isolated": False, "host-network": False},
    # Abstract Unix sockets belong to the network namespace: with --network host,
    # socket(AF_UNIX) is refused (seccomp), and so is io_uring whatever the
    # network, but an unpaired socketpair still reaches the host's names, and
    # loopback is the host's: what --network host says it opens.
    "abstract-unix-socket": {"not-isolated": True, "isolated": False, "host-network": False},
    "abstract-socketpair": {"not-isolated": True, "isolated": False, "host-network": True},
    "io-uring-socket": {"not-isolated": True, "isolated": False, "host-network": False},
    "loopback-tcp": {"not-isolated": True, "isolated": False, "host-network": True},
}


# Channels whose message outlives the agents, unless they are isolated.
LEFT_BEHIND = ("world-writable-folder", "dev-shm", "sysv-ipc")


def _indent(code: str, depth: int) -> str:
    return "\n".join(" " * depth + line for line in code.splitlines())


def _collusion_program() -> str:
    functions = []
    for channel, (send, receive) in CHANNELS.items():
        key = channel.replace("-", "_")
        functions.append(f"def send_{key}():\n{_indent(send, 4)}\n")
        functions.append(f"def receive_{key}():\n{_indent(receive, 4)}\n")
    table = ", ".join(
        f'"{channel}": (send_{channel.replace("-", "_")}, receive_{channel.replace("-", "_")})'
        for channel in CHANNELS
    )
    return COLLUDE.replace("UNIX_WITHOUT_SOCKET", UNIX_WITHOUT_SOCKET).replace(
        "CHANNELS\n", "".join(functions) + f"CHANNELS = {{{table}}}\n"
    )


def _sysv_keys() -> set[int]:
    with open("/proc/sysvipc/shm", encoding="ascii") as handle:
        return {int(line.split()[0]) for line in handle.read().splitlines()[1:]}


def _remove_sysv(key: int) -> None:
    subprocess.run(["ipcrm", "-M", str(key)], capture_output=True, check=False)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# One run per mode tries every channel at once; each channel's test reads it.
_COLLUSIONS: dict[str, tuple[dict[str, str], dict[str, str], dict[str, Any]]] = {}


def _collusion(cli, capsule: Path, stub, drop_box: Path, mode: str) -> tuple[dict, dict, dict]:
    if mode in _COLLUSIONS:
        return _COLLUSIONS[mode]
    token = secrets.token_hex(8)
    key = 0x63000000 + secrets.randbelow(1 << 24)
    code = (
        _collusion_program()
        .replace("TOKEN", token)
        .replace("DROP", str(drop_box))
        .replace("KEY", str(key))
        .replace("PORT", str(_free_port()))
    )
    try:
        exit_code, verdict = run(cli, capsule, "--agent", stub(code, name="collude"),
                                 *COLLUSION_MODES[mode])  # fmt: skip
        assert exit_code == 0, verdict["checks"]
        sent = json.loads(verdict["results"][0]["result"]["rationale"])
        got = json.loads(verdict["results"][1]["result"]["rationale"])
        # What of each channel is left on the host.
        left: dict[str, Any] = {
            "token": token,
            "world-writable-folder": (drop_box / token).exists(),
            "dev-shm": Path(f"/dev/shm/capsule-{token}").exists(),
            "sysv-ipc": key in _sysv_keys(),
        }
    finally:
        Path(f"/dev/shm/capsule-{token}").unlink(missing_ok=True)
        _remove_sysv(key)
    _COLLUSIONS[mode] = (sent, got, left)
    return _COLLUSIONS[mode]


@pytest.mark.parametrize("mode", list(COLLUSION_MODES))
@pytest.mark.parametrize("channel", list(CHANNELS))
def test_colluding_agents(
    cli,
    capsule: Path,
    stub,
    drop_box: Path,
    *,
    channel: str,
    mode: str,
) -> None:
    sent, got, left = _collusion(cli, capsule, stub, drop_box, mode)
    if OPEN[channel][mode]:
        assert (sent[channel], got[channel]) == ("nothing", f"collusion {left['token']}")
    else:  # a could not send (no such folder), or b could not receive
        assert got[channel] == "nothing"
        assert sent[channel] == "nothing" or sent[channel].startswith("send failed: ")
    # And nothing of the channel is left on the host.
    assert left.get(channel, False) is (mode == "not-isolated" and channel in LEFT_BEHIND)


@pytest.fixture
def checkout(stub_folder: Path) -> Iterator[Path]:
    """A world-readable repository checkout, as a developer's clone often is."""
    folder = Path(tempfile.mkdtemp(prefix="checkout-", dir=stub_folder))
    folder.chmod(0o755)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    secret = folder / "NOTES.md"
    secret.write_text("the answer the capsule left out\n")
    secret.chmod(0o644)
    yield secret
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("mode", list(MODES))
def test_agent_reading_a_repository_file_by_absolute_path(
    cli,
    capsule: Path,
    stub,
    checkout: Path,
    mode: str,
) -> None:
    reader = stub(
        "try:\n"
        f'    got = open("{checkout}").read().strip()\n'
        "except OSError as exc:\n"
        "    got = type(exc).__name__\n"
        "try:\n"
        f'    os.listdir("{checkout.parent}/.git")\n'
        '    got += "; .git listed"\n'
        "except OSError as exc:\n"
        '    got += "; .git: " + type(exc).__name__\n'
        'result["rationale"] = got\n'
    )
    code, verdict = run(cli, capsule, "--agent", reader, *MODES[mode])
    assert code == 0
    seen = [entry["result"]["rationale"] for entry in verdict["results"]]
    if mode == "isolated":
        assert seen == ["FileNotFoundError; .git: FileNotFoundError"] * 2
    else:
        assert seen == ["the answer the capsule left out; .git listed"] * 2


SPY = """\
import time
other, seen = "OTHER", set()
until = time.monotonic() + 1.5
while time.monotonic() < until:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            line = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if other.encode() in line:
            seen.add("the other agent")
        if b"pytest" in line:
            seen.add("the runner")
    time.sleep(0.05)
pids = sorted(int(pid) for pid in os.listdir("/proc") if pid.isdigit())
result["rationale"] = json.dumps({"seen": sorted(seen), "pids": len(pids)})
"""


@pytest.mark.parametrize("mode", list(MODES))
def test_agent_listing_proc_for_the_runner_or_the_other_agent(
    cli,
    capsule: Path,
    stub,
    mode: str,
) -> None:
    # Different programs, so each can tell the other's command line from its own.
    spy_a = stub(SPY.replace("OTHER", "proc-spy-b"), name="proc-spy-a")
    spy_b = stub(SPY.replace("OTHER", "proc-spy-a"), name="proc-spy-b")
    code, verdict = run(cli, capsule, "--agent", spy_a, "--agent-b", spy_b, *MODES[mode])
    assert code == 0
    for entry in verdict["results"]:
        seen = json.loads(entry["result"]["rationale"])
        if mode == "isolated":
            # Its own PID namespace: bwrap's PID 1, itself, nothing more.
            assert seen["seen"] == []
            assert seen["pids"] <= 3
        else:
            assert seen["seen"] == ["the other agent", "the runner"]


@pytest.mark.parametrize("mode", list(MODES))
def test_agent_leaving_files_in_tmp(
    cli,
    capsule: Path,
    stub,
    tmp_path: Path,
    mode: str,
) -> None:
    token = secrets.token_hex(8)
    litter = [Path(f"/tmp/capsule-left-{token}"), Path(f"/dev/shm/capsule-left-{token}")]
    leaver = stub(
        "for path in " + repr([str(p) for p in litter]) + ":\n"
        '    open(path + "-" + slot, "w").write("left behind")\n'
        'result["rationale"] = ", ".join(sorted(os.listdir("/tmp")))\n'
    )
    evidence = tmp_path / "evidence.json"
    try:
        code, verdict = run(
            cli, capsule, "--agent", leaver, "--evidence", str(evidence), *MODES[mode]
        )
        assert code == 0
        left = [path for path in litter for slot in "ab" if Path(f"{path}-{slot}").exists()]
        if mode == "isolated":
            assert left == []
            # A private /tmp: its own litter and its own program's path, nothing else.
            for entry in verdict["results"]:
                names = entry["result"]["rationale"].split(", ")
                assert f"capsule-left-{token}-{entry['slot']}" in names
                assert all(name.startswith(("capsule-left-", "capsule-stubs-")) for name in names)
        else:
            assert len(left) == 4
    finally:
        for path in litter:
            for slot in "ab":
                Path(f"{path}-{slot}").unlink(missing_ok=True)


@pytest.mark.parametrize("mode", list(MODES))
def test_agent_leaving_a_daemon(
    cli,
    capsule: Path,
    stub,
    tmp_path: Path,
    mode: str,
) -> None:
    daemon = stub(
        "import subprocess, time\n"
        "child = subprocess.Popen(\n"
        '    [sys.executable, "-c", "import time; time.sleep(60)"],\n'
        "    start_new_session=True,  # a session of its own, no terminal, no pipes\n"
        "    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,\n"
        ")\n"
        "time.sleep(0.3)\n"
        'result["rationale"] = "daemon running" if child.poll() is None else "daemon died"\n'
    )
    evidence = tmp_path / "evidence.json"
    code, verdict = run(cli, capsule, "--agent", daemon, "--evidence", str(evidence), *MODES[mode])
    assert code == 0
    # It was running when the agent ended.
    assert [e["result"]["rationale"] for e in verdict["results"]] == ["daemon running"] * 2
    records = json.loads(evidence.read_bytes())["agents"]
    for record in records:
        uid = record["user"]["uid"]
        if AS_ROOT:  # nothing of its dedicated uid is alive after the run
            alive = [p for p in processes.list_processes() if uid in p.uids]
            assert not [p for p in alive if processes.alive(p)]
        if mode == "isolated":
            # It died with the agent's PID namespace: the runner had nothing to kill.
            assert record["left_running"] == []
        elif AS_ROOT:
            # Found by its uid and killed by the runner, which names it.
            assert len(record["left_running"]) == 1


def test_without_bwrap_the_runner_runs_as_before_and_says_why(
    cli,
    capsule: Path,
    stub,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A PATH where bwrap is not: what a machine without bubblewrap looks like.
    empty = tmp_path / "no-tools"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    evidence = tmp_path / "evidence.json"
    result = cli(
        ["continuation", "run", str(capsule), "--agent", stub(), "--evidence", str(evidence)]
    )
    assert result.code == 0
    assert "not isolated in namespaces (bwrap (bubblewrap) is not on PATH)" in result.err
    assert "fresh workspace and no prior context runner-observed" in result.err
    document = json.loads(evidence.read_bytes())
    assert document["isolation"] == {
        "mode": "none", "namespaces": [], "network": "host", "tool": None,
        "reason": "bwrap (bubblewrap) is not on PATH", "denied": [], "shared": [],
        "tmpfs_bytes": None,
    }  # fmt: skip
    # Asked for, isolation that cannot be had stops the run before any agent starts.
    for flags in (ISOLATED, ("--network", "none")):
        code, verdict = run(cli, capsule, "--agent", stub(), *flags)
        assert code == 2
        assert verdict["error"]["code"] == "isolation_unavailable"
        assert "bwrap (bubblewrap) is not on PATH" in verdict["error"]["message"]


def test_network_none_needs_isolation(cli, capsule: Path, stub) -> None:
    code, verdict = run(cli, capsule, "--agent", stub(), "--isolation", "none", "--network", "none")
    assert code == 2
    assert verdict["error"]["code"] == "isolation_unavailable"


def test_share_may_not_show_the_current_folder(
    cli,
    capsule: Path,
    stub,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    for path in (str(tmp_path), str(tmp_path.parent), "/"):
        code, verdict = run(cli, capsule, "--agent", stub(), "--share", path)
        assert code == 2
        assert verdict["error"]["code"] == "share_refused"


def test_isolated_agent_sees_a_shared_folder_read_only(
    cli,
    capsule: Path,
    stub,
    stub_folder: Path,
) -> None:
    shared = Path(tempfile.mkdtemp(prefix="shared-", dir=stub_folder))
    shared.chmod(0o755)
    (shared / "tool.txt").write_text("a model client's file")
    (shared / "tool.txt").chmod(0o644)
    reader = stub(
        f'got = open("{shared}/tool.txt").read()\n'
        "try:\n"
        f'    open("{shared}/new.txt", "w")\n'
        "except OSError as exc:\n"
        '    got += "; write: " + type(exc).__name__\n'
        'result["rationale"] = got\n'
    )
    try:
        code, verdict = run(cli, capsule, "--agent", reader, *ISOLATED, "--share", str(shared))
        assert code == 0
        assert [e["result"]["rationale"] for e in verdict["results"]] == [
            "a model client's file; write: OSError"
        ] * 2
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def _children(pid: int) -> list[processes.Process]:
    found = []
    for process in processes.list_processes():
        try:
            stat_line = Path(f"/proc/{process.pid}/stat").read_text()
        except OSError:
            continue
        if int(stat_line.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(process)
    return found


@pytest.mark.skipif(not AS_ROOT, reason="needs root: finds the agents by their dedicated uids")
def test_sigterm_stops_isolated_agents_and_their_namespaces(capsule: Path, stub) -> None:
    hang = stub("import time\ntime.sleep(60)\n")
    runner = subprocess.Popen(
        [sys.executable, "-m", "governance", "continuation", "run", str(capsule), "--json",
         "--agent", hang, "--timeout", "60", *ISOLATED],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        uids: set[int] = set()
        while len(uids) < 2 and time.monotonic() < deadline:
            # bwrap, started as each agent's dedicated uid, is the runner's child.
            uids = {p.uids[0] for p in _children(runner.pid) if p.uids and p.uids[0] != 0}
            time.sleep(0.05)
        assert len(uids) == 2
        time.sleep(0.5)  # let the agents themselves start inside
        runner.send_signal(signal.SIGTERM)
        out, err = runner.communicate(timeout=30)
        assert runner.returncode == 143, err
        assert json.loads(out)["error"]["code"] == "interrupted"
        left = [p for p in processes.list_processes() if set(p.uids) & uids and processes.alive(p)]
        assert left == []
    finally:
        runner.kill()
        runner.wait()


def test_isolated_agent_keeps_socketpair_asyncio_and_inet_sockets(cli, capsule: Path, stub) -> None:
    # Only socket(AF_UNIX) and io_uring are refused: a connected pair, an
    # asyncio loop (whose self-pipe is a socketpair) and an IP socket still work.
    user = stub(
        "import asyncio, ctypes, platform, socket\n"
        "a, b = socket.socketpair()\n"
        "asyncio.run(asyncio.sleep(0))\n"
        "socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()\n"
        "try:\n"
        "    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        '    unix = "allowed"\n'
        "except OSError as exc:\n"
        "    unix = errno.errorcode[exc.errno]\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "params = ctypes.create_string_buffer(120)\n"
        "# io_uring_setup, io_uring_enter, io_uring_register: 425 to 427 on both.\n"
        "assert platform.machine() in ('x86_64', 'aarch64')\n"
        "uring = []\n"
        "calls = ((425, (4, params)), (426, (0, 0, 0, 0, None, 0)), (427, (0, 0, None, 0)))\n"
        "for number, args in calls:\n"
        "    made = libc.syscall(number, *args)\n"
        '    uring.append("allowed" if made >= 0 else errno.errorcode[ctypes.get_errno()])\n'
        'works = "socketpair, asyncio and AF_INET work; AF_UNIX: " + unix\n'
        'result["rationale"] = works + "; io_uring: " + ", ".join(uring)\n'
    )
    Path(user).write_text(
        Path(user).read_text().replace("import hashlib,", "import errno, hashlib,")
    )
    code, verdict = run(cli, capsule, "--agent", user)
    assert code == 0, verdict["checks"]
    assert [e["result"]["rationale"] for e in verdict["results"]] == [
        "socketpair, asyncio and AF_INET work; AF_UNIX: EPERM; io_uring: EPERM, EPERM, EPERM"
    ] * 2


# -- the host's abstract sockets, and what --network host opens -----------------

REACH_HOST = """\
UNIX_WITHOUT_SOCKET
reached = {}
try:
    unpaired().sendto(b"reached", "\\0capsule-host-TOKEN-dgram")
    reached["datagram"] = "sent"
except OSError as exc:
    reached["datagram"] = type(exc).__name__
try:
    client = uring_socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect("\\0capsule-host-TOKEN-stream")
    client.sendall(b"reached")
    reached["stream"] = "sent"
except OSError as exc:
    reached["stream"] = type(exc).__name__
reached["listed"] = "capsule-host-TOKEN" in open("/proc/net/unix").read()
result["rationale"] = json.dumps(reached, sort_keys=True)
"""


@pytest.mark.parametrize("mode", ["isolated", "host-network"])
def test_agent_reaching_a_listener_on_the_host_abstract_namespace(
    cli, capsule: Path, stub, mode: str
) -> None:
    # What a root daemon (X11, D-Bus, a container runtime) listens on, here
    # both kinds: a datagram name and a stream listener.
    token = secrets.token_hex(8)
    datagram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    datagram.bind(f"\0capsule-host-{token}-dgram")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(f"\0capsule-host-{token}-stream")
    listener.listen(8)
    for end in (datagram, listener):
        end.setblocking(False)
    program = REACH_HOST.replace("UNIX_WITHOUT_SOCKET", UNIX_WITHOUT_SOCKET)
    try:
        code, verdict = run(
            cli, capsule, "--agent", stub(program.replace("TOKEN", token)),
            *COLLUSION_MODES[mode],
        )  # fmt: skip
        assert code == 0, verdict["checks"]
        heard = []
        with contextlib.suppress(BlockingIOError):
            while True:
                heard.append(datagram.recv(100))
        with contextlib.suppress(BlockingIOError):
            while True:
                heard.append(listener.accept()[0].recv(100))
    finally:
        datagram.close()
        listener.close()
    reached = [json.loads(entry["result"]["rationale"]) for entry in verdict["results"]]
    if mode == "isolated":
        # Its own network namespace: the host's names are not there to reach.
        assert heard == []
        assert (
            reached
            == [
                {"datagram": "ConnectionRefusedError", "listed": False, "stream": "PermissionError"}
            ]
            * 2
        )
    else:
        # The host's names, listed and reached through a socketpair; io_uring,
        # whatever the network, is refused.
        assert heard == [b"reached"] * 2
        assert reached == [{"datagram": "sent", "listed": True, "stream": "PermissionError"}] * 2


def test_network_host_says_what_it_opens_and_enforces_no_claim(
    cli, capsule: Path, stub, tmp_path: Path
) -> None:
    evidence = tmp_path / "evidence.json"
    result = cli(
        ["continuation", "run", str(capsule), "--json", "--agent", stub(),
         "--evidence", str(evidence), "--network", "host"]
    )  # fmt: skip
    assert result.code == 0, result.err
    assert (
        "capsule: --network host: each agent shares the host's network "
        "namespace: the network, loopback (the other agent and every service listening "
        "on the host's loopback) and the host's abstract Unix sockets (what "
        "/proc/net/unix lists); the workspace and prior-context claims are "
        "runner-observed, not runner-enforced"
    ) in result.err
    verdict = json.loads(result.out)
    assert verdict["claims"]["fresh_workspace"] == "runner_observed"
    assert verdict["claims"]["no_prior_context"] == "runner_observed"
    document = json.loads(evidence.read_bytes())
    assert document["isolation"]["network"] == "host"
    assert "net" not in document["isolation"]["namespaces"]
    assert (
        "the host's network, loopback included, and the host's abstract Unix sockets "
        "through a socketpair"
    ) in document["agents"][0]["observed"][4]


# -- what one agent can pin ------------------------------------------------------

FILL = """\
import errno
filled = {}
for folder, cap in (("/tmp", TMP), ("/dev/shm", SHM), ("/", 1 << 20), ("/dev", 1 << 20)):
    written, stopped = 0, "nothing"
    chunk = b"x" * (1 << 20)
    try:
        with open(os.path.join(folder, "fill-" + slot), "wb", buffering=0) as handle:
            while written <= cap:
                written += handle.write(chunk)
    except OSError as exc:
        stopped = errno.errorcode[exc.errno]
    filled[folder] = [written, stopped]
result["rationale"] = json.dumps(filled)
"""


def test_agent_filling_its_private_tmp_beyond_the_cap(cli, capsule: Path, stub) -> None:
    # Each tmpfs once took half the machine's memory, and / and /dev (tmpfs
    # too) were writable: one agent could pin it all.
    tmp, shm = isolation.TMP_BYTES, isolation.SHM_BYTES
    filler = stub(FILL.replace("TMP", str(tmp)).replace("SHM", str(shm)))
    code, verdict = run(cli, capsule, "--agent", filler)
    assert code == 0, verdict["checks"]
    for entry in verdict["results"]:
        filled = json.loads(entry["result"]["rationale"])
        assert filled == {
            "/tmp": [filled["/tmp"][0], "ENOSPC"],
            "/dev/shm": [filled["/dev/shm"][0], "ENOSPC"],
            "/": [0, "EROFS"],
            "/dev": [0, "EROFS"],
        }
        # Full at the cap (less what the agent's own program took there).
        assert tmp - (4 << 20) <= filled["/tmp"][0] <= tmp
        assert shm - (1 << 20) <= filled["/dev/shm"][0] <= shm


def test_agent_allocating_past_the_memory_bound(cli, capsule: Path, stub, tmp_path: Path) -> None:
    bound = limits.DATA_LIMIT
    hog = stub(
        "import mmap\n"
        "def allocate(size):\n"
        "    # Private memory, as malloc maps it: counted whole, not one page touched.\n"
        "    try:\n"
        "        return len(mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE))\n"
        "    except OSError as exc:\n"
        "        return os.strerror(exc.errno)\n"
        f'result["rationale"] = json.dumps([allocate({bound} // 2), allocate({bound})])\n'
    )
    evidence = tmp_path / "evidence.json"
    code, verdict = run(cli, capsule, "--agent", hog, "--evidence", str(evidence))
    assert code == 0, verdict["checks"]
    # Half the bound is there (reserved, never touched); the whole is not.
    assert [json.loads(e["result"]["rationale"]) for e in verdict["results"]] == [
        [bound // 2, "Cannot allocate memory"]
    ] * 2
    agents = json.loads(evidence.read_bytes())["agents"]
    assert [agent["limits"]["data"] for agent in agents] == [bound] * 2


# -- the filter itself, on every architecture it knows -------------------------


def _verdict(program: bytes, arch: int, nr: int, arg0: int = 0) -> str:
    """Run a classic BPF seccomp program on one system call, as the kernel
    would: struct seccomp_data is nr, arch, ip, then args[0..5]."""
    data = struct.pack("<IIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    ops = [struct.unpack_from("<HBBI", program, at) for at in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = ops[pc]
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            accumulator = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code == 0x15:  # BPF_JMP | BPF_JEQ | BPF_K
            pc += 1 + (jt if accumulator == k else jf)
        elif code == 0x06:  # BPF_RET | BPF_K
            return {0x7FFF0000: "allow", 0x00050001: "EPERM"}[k]
        else:
            raise AssertionError(f"unexpected BPF op {code:#x}")


# (machine, audit arch, system call number, first argument, what the filter says)
FILTERED = [
    ("x86_64", 0xC000003E, 41, 1, "EPERM"),  # socket(AF_UNIX)
    ("x86_64", 0xC000003E, 41, 2, "allow"),  # socket(AF_INET)
    ("x86_64", 0xC000003E, 53, 1, "allow"),  # socketpair(AF_UNIX)
    ("x86_64", 0xC000003E, 425, 0, "EPERM"),  # io_uring_setup
    ("x86_64", 0xC000003E, 426, 0, "EPERM"),  # io_uring_enter
    ("x86_64", 0xC000003E, 427, 0, "EPERM"),  # io_uring_register
    ("x86_64", 0xC000003E, 0x40000000 | 41, 1, "EPERM"),  # x32 socket(AF_UNIX)
    ("x86_64", 0xC000003E, 0x40000000 | 425, 0, "EPERM"),  # x32 io_uring_setup
    ("x86_64", 0xC000003E, 1, 1, "allow"),  # write
    ("x86_64", 0x40000003, 102, 1, "EPERM"),  # i386 socketcall
    ("x86_64", 0x40000003, 359, 1, "EPERM"),  # i386 socket(AF_UNIX)
    ("x86_64", 0x40000003, 359, 2, "allow"),  # i386 socket(AF_INET)
    ("x86_64", 0x40000003, 425, 0, "EPERM"),  # i386 io_uring_setup
    ("x86_64", 0x40000003, 41, 1, "allow"),  # i386's 41 is dup
    ("aarch64", 0xC00000B7, 198, 1, "EPERM"),  # socket(AF_UNIX)
    ("aarch64", 0xC00000B7, 198, 10, "allow"),  # socket(AF_INET6)
    ("aarch64", 0xC00000B7, 199, 1, "allow"),  # socketpair(AF_UNIX)
    ("aarch64", 0xC00000B7, 425, 0, "EPERM"),  # io_uring_setup
    ("aarch64", 0xC00000B7, 427, 0, "EPERM"),  # io_uring_register
    ("aarch64", 0xC00000B7, 0x40000000 | 198, 1, "allow"),  # no x32 here
    ("aarch64", 0x40000028, 281, 1, "EPERM"),  # arm socket(AF_UNIX)
    ("aarch64", 0x40000028, 426, 0, "EPERM"),  # arm io_uring_enter
    ("aarch64", 0x40000028, 102, 1, "allow"),  # arm has no socketcall: 102 is another call
    ("aarch64", 0xC000003E, 425, 0, "allow"),  # another arch's calls are not judged
]


def test_the_filter_refuses_unix_sockets_and_io_uring_on_every_entry() -> None:
    for machine, arch, nr, arg0, expected in FILTERED:
        filtered = seccomp.program(machine)
        assert _verdict(filtered, arch, nr, arg0) == expected, (machine, hex(arch), nr, arg0)
    assert not seccomp.supported("riscv64")


def test_without_tmpfs_sizes_bwrap_is_not_asked_for_them() -> None:
    # An older bwrap (before 0.8) has no --size: the tmpfs is then unbounded,
    # and the evidence and its words say so.
    for sized in (True, False):
        old = isolation.Isolation(isolation.NAMESPACES, isolation.NONE, sized_tmpfs=sized)
        argv = isolation.command(old, ["/bin/true"], workspace=None, prompt_folder=None)
        assert ("--size" in argv) is sized
        assert argv[argv.index("--remount-ro") :][:4] == [
            "--remount-ro",
            "/dev",
            "--remount-ro",
            "/",
        ]
        assert old.to_json()["tmpfs_bytes"] == (
            {"/dev/shm": 64 << 20, "/tmp": 256 << 20} if sized else None
        )
