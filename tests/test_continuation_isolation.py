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

import json
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_continuation_run import (  # noqa: F401 (the fixtures)
    AS_ROOT,
    agent_python,
    capsule,
    run,
    stub,
    stub_folder,
)

from governance.continuation import processes

NONE = ("--isolation", "none")
ISOLATED = ("--isolation", "namespaces")
OFFLINE = ("--isolation", "namespaces", "--network", "none")
MODES = {"not-isolated": NONE, "isolated": ISOLATED}

# Agent a puts SECRET into the channel and stays a while; agent b looks for it.
COLLUDE = """\
import time
token = "TOKEN"
answer = "collusion " + token
got = "nothing"
if slot == "a":
    try:
SEND
    except OSError as exc:
        got = "send failed: " + type(exc).__name__
    time.sleep(3)
else:
    until = time.monotonic() + 2.5
    while time.monotonic() < until and got == "nothing":
        try:
RECEIVE
        except OSError:
            pass
        time.sleep(0.05)
result["rationale"] = got
"""

CHANNELS = {
    "world-writable-folder": (
        'open(os.path.join("DROP", token), "w").write(answer)',
        'got = open(os.path.join("DROP", token)).read()',
    ),
    "dev-shm": (
        'open("/dev/shm/capsule-" + token, "w").write(answer)',
        'got = open("/dev/shm/capsule-" + token).read()',
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
        "if ident >= 0:\n"
        "    got = ctypes.string_at(libc.shmat(ident, None, 0), len(answer)).decode()",
    ),
    "abstract-unix-socket": (
        "import socket, threading\n"
        "server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        'server.bind("\\0capsule-" + token)\n'
        "server.listen()\n"
        "def serve():\n"
        "    while True:\n"
        "        connection, _ = server.accept()\n"
        "        connection.sendall(answer.encode())\n"
        "        connection.close()\n"
        "threading.Thread(target=serve, daemon=True).start()",
        "import socket\n"
        "client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        'client.connect("\\0capsule-" + token)\n'
        "got = client.recv(100).decode()",
    ),
    "loopback-tcp": (
        "import socket, threading\n"
        "server = socket.socket()\n"
        'server.bind(("127.0.0.1", PORT))\n'
        "server.listen()\n"
        "def serve():\n"
        "    while True:\n"
        "        connection, _ = server.accept()\n"
        "        connection.sendall(answer.encode())\n"
        "        connection.close()\n"
        "threading.Thread(target=serve, daemon=True).start()",
        "import socket\n"
        'client = socket.create_connection(("127.0.0.1", PORT), timeout=1)\n'
        "got = client.recv(100).decode()",
    ),
}

# What each channel does, by mode: True when agent b got a's answer.
OPEN = {
    "world-writable-folder": {"not-isolated": True, "isolated": False, "offline": False},
    "dev-shm": {"not-isolated": True, "isolated": False, "offline": False},
    "sysv-ipc": {"not-isolated": True, "isolated": False, "offline": False},
    # Abstract Unix sockets belong to the network namespace, which --network host
    # shares: isolated, creating any AF_UNIX socket is refused (seccomp) instead.
    "abstract-unix-socket": {"not-isolated": True, "isolated": False, "offline": False},
    # Loopback stays open with --network host, as docs/continuation.md says.
    "loopback-tcp": {"not-isolated": True, "isolated": True, "offline": False},
}


# Channels whose message outlives the agents, unless they are isolated.
LEFT_BEHIND = ("world-writable-folder", "dev-shm", "sysv-ipc")


def _indent(code: str, depth: int) -> str:
    return "\n".join(" " * depth + line for line in code.splitlines())


@pytest.fixture
def drop_box(stub_folder: Path) -> Iterator[Path]:
    """A folder any agent user may write to, outside every workspace."""
    folder = Path(tempfile.mkdtemp(prefix="drop-", dir=stub_folder))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _sysv_keys() -> set[int]:
    with open("/proc/sysvipc/shm", encoding="ascii") as handle:
        return {int(line.split()[0]) for line in handle.read().splitlines()[1:]}


def _remove_sysv(key: int) -> None:
    subprocess.run(["ipcrm", "-M", str(key)], capture_output=True, check=False)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("mode", ["not-isolated", "isolated", "offline"])
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
    token = secrets.token_hex(8)
    key = 0x63000000 + secrets.randbelow(1 << 24)
    send, receive = CHANNELS[channel]
    code = (
        COLLUDE.replace("SEND", _indent(send, 8))
        .replace("RECEIVE", _indent(receive, 12))
        .replace("TOKEN", token)
        .replace("DROP", str(drop_box))
        .replace("KEY", str(key))
        .replace("PORT", str(_free_port()))
    )
    flags = {"not-isolated": NONE, "isolated": ISOLATED, "offline": OFFLINE}[mode]
    try:
        exit_code, verdict = run(cli, capsule, "--agent", stub(code), *flags)
        assert exit_code == 0, verdict["checks"]
        sent = verdict["results"][0]["result"]["rationale"]
        got = verdict["results"][1]["result"]["rationale"]
        if OPEN[channel][mode]:
            assert (sent, got) == ("nothing", f"collusion {token}")
        else:  # a could not send (no such folder), or b could not receive
            assert got == "nothing"
            assert sent == "nothing" or sent.startswith("send failed: ")
        # And nothing of the channel is left on the host.
        left = {
            "world-writable-folder": (drop_box / token).exists(),
            "dev-shm": Path(f"/dev/shm/capsule-{token}").exists(),
            "sysv-ipc": key in _sysv_keys(),
        }.get(channel, False)
        assert left is (mode == "not-isolated" and channel in LEFT_BEHIND)
    finally:
        Path(f"/dev/shm/capsule-{token}").unlink(missing_ok=True)
        _remove_sysv(key)


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
    # Only socket(AF_UNIX) is refused: a connected pair, an asyncio loop (whose
    # self-pipe is a socketpair) and an IP socket still work.
    user = stub(
        "import asyncio, socket\n"
        "a, b = socket.socketpair()\n"
        "asyncio.run(asyncio.sleep(0))\n"
        "socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()\n"
        "try:\n"
        "    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        '    unix = "allowed"\n'
        "except OSError as exc:\n"
        "    unix = errno.errorcode[exc.errno]\n"
        'result["rationale"] = "socketpair, asyncio and AF_INET work; AF_UNIX: " + unix\n'
    )
    Path(user).write_text(
        Path(user).read_text().replace("import hashlib,", "import errno, hashlib,")
    )
    code, verdict = run(cli, capsule, "--agent", user, *ISOLATED)
    assert code == 0, verdict["checks"]
    assert [e["result"]["rationale"] for e in verdict["results"]] == [
        "socketpair, asyncio and AF_INET work; AF_UNIX: EPERM"
    ] * 2
