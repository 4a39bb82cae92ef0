"""How a command started as a process ends (``end_process``): at once, without
the interpreter's teardown, yet with its ``atexit`` callbacks run, every byte
of its output delivered, each exit code as before and a still running thread
waited for. Every test here starts a real process."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from capsule_hooks import packets
from governance.history.signatures import SIGNED, check_signature, signers_from
from support.gitrepo import POLICY, Repo, packet_yaml
from support.signing import make_key

BIN = Path(sys.executable).parent

# A command started as a process, as the console scripts start it (main()
# with no arguments), in a process that says what happened after main: an
# atexit callback writes a line on stdout (so it must run before the last
# flush), and a hook of threading's, which only the interpreter's shutdown
# calls (before it joins threads), writes one on stderr. MODE starts a thread
# first: "thread" one that is not a daemon and works until the main thread has
# finished (the shutdown marks it so before it joins the others), "daemon" a
# daemon that sleeps for an hour.
HARNESS = r"""
import atexit, os, sys, threading, time

atexit.register(lambda: sys.stdout.write("atexit ran\n"))
threading._register_atexit(lambda: os.write(2, b"shutdown ran\n"))
mode, entry, *sys.argv[1:] = sys.argv[1:]
if mode == "thread":
    def work():
        while threading.main_thread().is_alive():
            time.sleep(0.01)
        time.sleep(0.2)
        sys.stdout.write("thread done\n")

    threading.Thread(target=work).start()
elif mode == "daemon":
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
if entry == "capsule":
    from governance.cli import main
else:
    main = __import__(f"capsule_hooks.{entry}", fromlist=["main"]).main
sys.exit(main())
"""


def user_env() -> dict[str, str]:
    """This environment with stdout buffered, as a user's shell has it (the
    shell running the tests may export PYTHONUNBUFFERED)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def harness(
    argv: list[str], cwd: Path, *, mode: str = "plain", entry: str = "capsule", **kwargs: Any
) -> subprocess.CompletedProcess[bytes]:
    kwargs.setdefault("capture_output", "stdout" not in kwargs)
    return subprocess.run(
        [sys.executable, "-c", HARNESS, mode, entry, *argv],
        cwd=cwd,
        env=user_env(),
        check=False,
        timeout=120,
        **kwargs,
    )


def script(
    name: str, argv: list[str], cwd: Path, **kwargs: Any
) -> subprocess.CompletedProcess[bytes]:
    """The installed console script ``name`` run with ``argv``."""
    kwargs.setdefault("capture_output", "stdout" not in kwargs)
    return subprocess.run(
        [str(BIN / name), *argv], cwd=cwd, env=user_env(), check=False, timeout=120, **kwargs
    )


def with_headings(repo: Repo, count: int) -> str:
    """docs/many.md with ``count`` headings, committed; its path."""
    body = "".join(f"## Section {n} of a long outline\n\nText {n}.\n\n" for n in range(count))
    repo.write("docs/many.md", "# Many\n\n" + body)
    repo.commit("many headings")
    return "docs/many.md"


# --- it leaves without the teardown, and runs what of it matters ------------------


def test_a_command_process_runs_atexit_and_leaves_without_the_teardown(cli, repo: Repo) -> None:
    assert cli(["build", "packets/P-1/packet.yml", "--record"], cwd=repo.path).code == 0
    repo.commit("record P-1")
    done = harness(["audit", "--json"], repo.path)
    assert done.returncode == 0, done.stderr
    report, atexit_line = done.stdout.decode().rsplit("\n", 2)[:2]
    assert (json.loads(report)["ok"], atexit_line) == (True, "atexit ran")
    assert b"audited 1 record version" in done.stderr
    assert b"shutdown ran" not in done.stderr


def test_a_hook_process_runs_atexit_and_leaves_without_the_teardown(repo: Repo) -> None:
    repo.write("packets/P-1/packet.yml", packet_yaml("P-1", ["docs/gone.md"]))
    repo.git("add", "-A")
    done = harness([], repo.path, entry="packets")
    assert done.returncode == 3, done.stderr
    lines = done.stdout.decode().splitlines()
    assert lines[0].startswith("packets/P-1/packet.yml: docs/gone.md: source_missing")
    assert lines[-1] == "atexit ran"
    assert b"shutdown ran" not in done.stderr


def test_main_called_with_arguments_returns_and_leaves_the_callers_collector_alone(
    cli, repo: Repo
) -> None:
    # Tests (and any caller that goes on) call main(argv): it returns (this test
    # goes on) and freezes nothing of theirs.
    before = gc.get_freeze_count()
    assert cli(["build", "packets/P-1/packet.yml"], cwd=repo.path).code == 0
    assert packets.main([]) == 0
    assert gc.get_freeze_count() == before


# --- output is never lost ---------------------------------------------------------


@pytest.mark.parametrize("headings", [3, 3000], ids=["small", "larger-than-a-pipe"])
@pytest.mark.parametrize("target", ["pipe", "file"])
def test_output_left_in_the_buffer_arrives_whole(
    cli, repo: Repo, tmp_path: Path, headings: int, target: str
) -> None:
    # outline prints its lines without flushing: what is still buffered when
    # main returns goes out in the last flush.
    path = with_headings(repo, headings)
    expected = cli(["outline", path], cwd=repo.path).out.encode()
    if headings > 3:
        assert len(expected) > 2**16  # more than a pipe holds
    if target == "pipe":
        done = script("capsule", ["outline", path], repo.path)
        got = done.stdout
    else:
        with (tmp_path / "out.txt").open("wb") as handle:
            done = script(
                "capsule", ["outline", path], repo.path, stdout=handle, stderr=subprocess.PIPE
            )
        got = (tmp_path / "out.txt").read_bytes()
    assert done.returncode == 0, done.stderr
    assert got == expected


def test_atexit_output_comes_after_the_commands_and_arrives(cli, repo: Repo) -> None:
    path = with_headings(repo, 3000)
    expected = cli(["outline", path], cwd=repo.path).out.encode()
    done = harness(["outline", path], repo.path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected + b"atexit ran\n"


def _into_a_closed_pipe(
    name: str, argv: list[str], cwd: Path
) -> subprocess.CompletedProcess[bytes]:
    # Like `capsule ... | head -c0`: the reader is gone before the command writes.
    read, write = os.pipe()
    os.close(read)
    try:
        return script(name, argv, cwd, stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "argv",
    [["build", "packets/P-1/packet.yml"], ["outline", "docs/roadmap.md"]],
    ids=["written-while-it-runs", "left-for-the-last-flush"],
)
def test_a_closed_pipe_exits_141_without_a_word(repo: Repo, argv: list[str]) -> None:
    # build flushes while it runs (the broken pipe is the guarded runner's to
    # report); outline's few lines are still buffered when main returns, and
    # the last flush meets the closed pipe (the interpreter's own flush said
    # "Exception ignored ... BrokenPipeError" and exited 120).
    done = _into_a_closed_pipe("capsule", argv, repo.path)
    assert done.returncode == 141
    assert b"Traceback" not in done.stderr
    assert b"Exception ignored" not in done.stderr


def test_a_hook_into_a_closed_pipe_exits_141_without_a_word(repo: Repo) -> None:
    repo.write("packets/P-1/packet.yml", packet_yaml("P-1", ["docs/gone.md"]))
    repo.git("add", "-A")
    done = _into_a_closed_pipe("capsule-packets", [], repo.path)
    assert done.returncode == 141
    assert b"Traceback" not in done.stderr


@pytest.mark.parametrize("headings", [3, 60], ids=["small", "over-4-KiB"])
def test_output_that_cannot_be_written_is_an_io_error_not_a_silent_success(
    cli, repo: Repo, headings: int
) -> None:
    # /dev/full refuses every write. Output still buffered when main returned
    # (under the 8 KiB a text stream holds) failed in the interpreter's own
    # flush: exit 120 with "Exception ignored" for a few lines, and exit 0
    # without a word past 4 KiB (the device's block size). It is now worded as
    # a write that fails while the command runs.
    path = with_headings(repo, headings)
    if headings > 3:
        assert 4096 < len(cli(["outline", path], cwd=repo.path).out.encode()) < 8192
    with open("/dev/full", "wb") as full:
        done = script("capsule", ["outline", path], repo.path, stdout=full, stderr=subprocess.PIPE)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines()[-1] == (
        "capsule: error [io_error]: No space left on device"
    )


# --- exit codes -------------------------------------------------------------------


def _exit_code_cases(repo: Repo) -> dict[str, tuple[list[str], int]]:
    repo.write("docs/big.md", "word " * 3000)
    repo.write(
        "packets/BIG/packet.yml",
        packet_yaml("BIG", ["docs/big.md"], budget="{target_tokens: 1000}"),
    )
    repo.write("packets/GONE/packet.yml", packet_yaml("GONE", ["docs/gone.md"]))
    for packet in ("BIG", "GONE"):
        repo.write(f"packets/{packet}/context.md", "# Context\n\nWhy.\n")
    repo.commit("packets that fail")
    return {
        "success": (["build", "packets/P-1/packet.yml"], 0),
        "drift": (["verify", "capsule.json"], 1),
        "usage": (["check", "--bogus"], 2),
        "output failed": (["build", "packets/P-1/packet.yml", "-o", "no/such/c.json"], 2),
        "source missing": (["build", "packets/GONE/packet.yml"], 3),
        "over budget": (["build", "packets/BIG/packet.yml"], 4),
    }


def test_every_exit_code_is_the_same_as_a_process_and_from_main(cli, repo: Repo) -> None:
    cases = _exit_code_cases(repo)
    assert cli(["build", "packets/P-1/packet.yml", "-o", "capsule.json"], cwd=repo.path).code == 0
    repo.write("docs/notes.md", "# Notes\n\nChanged since the capsule.\n")
    repo.commit("drift")
    for name, (argv, code) in cases.items():
        in_process = cli(argv, cwd=repo.path)
        done = script("capsule", argv, repo.path)
        assert (in_process.code, done.returncode) == (code, code), name
        assert done.stdout.decode() == in_process.out, name
        assert done.stderr.decode() == in_process.err, name


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["build", "--help"]])
def test_help_and_version_end_as_before(repo: Repo, argv: list[str]) -> None:
    # argparse ends these itself (SystemExit), before any command runs.
    done = script("capsule", argv, repo.path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"usage: capsule" if argv != ["--version"] else b"capsule ")
    assert done.stdout.endswith(b"\n")


def _waiting_on_stdin(proc: subprocess.Popen[bytes]) -> None:
    """Until ``proc`` waits in read(2) on its stdin (x86-64 and arm64 numbers)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        fields = Path(f"/proc/{proc.pid}/syscall").read_text().split()
        if fields[:2] in (["0", "0x0"], ["63", "0x0"]):
            return
        time.sleep(0.02)
    raise AssertionError("the hook never read its stdin")


@pytest.mark.skipif(not Path("/proc/self/syscall").exists(), reason="needs Linux /proc")
def test_interrupted_exits_130_with_one_line(repo: Repo) -> None:
    # ^C while the push hook reads git's lines on stdin. A shell without job
    # control starts a background job with SIGINT ignored, every child
    # inherits that, and Python installs no handler for an ignored signal: the
    # ^C did nothing, stdin reached EOF and the hook exited 0. The hook is
    # started as a terminal starts a command, with SIGINT at its default: a
    # signal this process handles (rather than ignores) is reset by exec.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", HARNESS, "plain", "push"],
            cwd=repo.path,
            env=user_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    finally:
        signal.signal(signal.SIGINT, before)
    try:
        _waiting_on_stdin(proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert err == b"capsule-push: interrupted\n"
    assert out == b"atexit ran\n"


# --- threads ----------------------------------------------------------------------


def test_a_running_thread_is_waited_for_by_the_usual_shutdown(repo: Repo) -> None:
    # Left at once, the process would kill the thread mid-work: it takes the
    # interpreter's shutdown instead, which joins the thread before atexit.
    done = harness(["outline", "docs/roadmap.md"], repo.path, mode="thread")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(b"thread done\natexit ran\n")
    assert b"shutdown ran" in done.stderr


def test_a_daemon_thread_does_not_hold_the_process(repo: Repo) -> None:
    done = harness(["outline", "docs/roadmap.md"], repo.path, mode="daemon")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(b"atexit ran\n")
    assert b"shutdown ran" not in done.stderr


# --- files a command writes are whole once it has left ----------------------------


def _tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(root).parts
    }


def test_build_output_and_record_are_whole(cli, repo: Repo) -> None:
    capsule = cli(["build", "packets/P-1/packet.yml"], cwd=repo.path).out.encode()
    done = script("capsule", ["build", "packets/P-1/packet.yml", "-o", "c.json"], repo.path)
    assert done.returncode == 0, done.stderr
    assert (repo.path / "c.json").read_bytes() == capsule
    done = script("capsule", ["build", "packets/P-1/packet.yml", "--record", "--json"], repo.path)
    assert done.returncode == 0, done.stderr
    record = repo.path / json.loads(done.stdout)["record"]
    assert record.read_bytes() == capsule


@pytest.mark.parametrize(
    "argv", [["init"], ["new", "Q-1", "--goal", "phase two details"]], ids=["init", "new"]
)
def test_files_written_by_a_process_are_those_main_writes(
    cli, tmp_path: Path, argv: list[str]
) -> None:
    trees = []
    for name in ("in-process", "process"):
        repo = Repo(tmp_path / name)
        repo.write("docs/roadmap.md", "# Roadmap\n\n## Phase 2\n\nDetails of phase two.\n")
        if argv[0] == "new":
            # new writes a packet under the committed policy; init writes the policy.
            repo.write("policies/capsule.yml", POLICY)
        repo.commit("docs")
        if name == "process":
            done = script("capsule", argv, repo.path)
            assert done.returncode == 0, done.stderr
        else:
            assert cli(argv, cwd=repo.path).code == 0
        trees.append(_tree(repo.path))
    assert trees[0] == trees[1]
    assert len(trees[1]) > 1


def test_sign_writes_a_whole_signature(cli, repo: Repo, tmp_path: Path) -> None:
    key = make_key(tmp_path / "keys", "alice")
    built = json.loads(
        cli(["build", "packets/P-1/packet.yml", "--record", "--json"], cwd=repo.path).out
    )
    record = repo.path / built["record"]
    done = script("capsule", ["sign", str(record), "--key", str(key.private)], repo.path)
    assert done.returncode == 0, done.stderr
    signature = Path(f"{record}.sig").read_bytes()
    signers = signers_from("0" * 40, key.signer("alice@example.org").encode(), b"")
    assert (
        check_signature(record.read_bytes(), signature, signers, when=datetime.now(UTC)).status
        == SIGNED
    )
