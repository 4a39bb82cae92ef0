"""Exact o200k_base counts: the shipped vocabulary, offline, never in a capsule."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import bpe_openai
import pytest
from bpe_openai import registry

from governance.agents import tokens
from support.gitrepo import Repo, Result

ROOT = Path(__file__).resolve().parent.parent

SAMPLES = [
    "hello world",
    "",
    "Étape suivante: 日本語の文章です。 Привет, мир! مرحبا 😀🎉👩‍👩‍👧",
    "def f(x):\n\treturn x ** 2  # comment\r\n",
    "a b c d e f g h i j k l m n o p",
    "1234567890 3.14159 0xdeadbeef",
    "<|endoftext|> is ordinary text here",
    "   \n\n\n\t\t  trailing   ",
]


def test_the_shipped_vocabulary_is_the_published_one() -> None:
    data = tokens.vocabulary_bytes()

    assert hashlib.sha256(data).hexdigest() == tokens.VOCABULARY_SHA256
    ranks = tokens.parse_vocabulary(data)
    # o200k_base: ranks 0..199997, each byte string once.
    assert sorted(ranks.values()) == list(range(len(ranks)))
    assert len(ranks) == 199998


def test_a_vocabulary_with_another_hash_is_refused() -> None:
    with pytest.raises(tokens.Unavailable, match="not the published"):
        tokens.vocabulary_bytes(expected_sha256="0" * 64)


@pytest.mark.parametrize("text", SAMPLES)
def test_counts_agree_with_an_independent_implementation(text: str) -> None:
    # bpe-openai's own encoder (GitHub's Rust BPE) against tiktoken's: two
    # implementations, one vocabulary, the same tokens.

    other = bpe_openai.get_encoding("o200k_base")
    assert tokens.encoding().encode_ordinary(text) == other.encode_ordinary(text)
    assert tokens.count(text) == len(other.encode_ordinary(text))


def test_the_split_pattern_is_o200k_bases() -> None:
    assert registry.o200k_base()["pat_str"] == tokens.SPLIT_PATTERN
    assert tokens.encoding().encode_ordinary("hello world") == [24912, 2375]


def test_the_docs_of_this_repository_agree_too() -> None:
    other = bpe_openai.get_encoding("o200k_base")
    for path in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        text = path.read_text(encoding="utf-8")
        assert tokens.count(text) == len(other.encode_ordinary(text)), path.name


def test_counting_never_touches_the_network(tmp_path: Path) -> None:
    # An audit hook refuses every socket, and tiktoken's download cache is an
    # empty folder: a count must still come out, and the folder stay empty.
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    script = (
        "import sys\n"
        "def refuse(event, args):\n"
        "    if event.startswith('socket.'):\n"
        "        raise RuntimeError('network: ' + event)\n"
        "sys.addaudithook(refuse)\n"
        "from governance.agents import tokens\n"
        "print(tokens.count('hello world'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={"PATH": "/usr/bin:/bin", "TIKTOKEN_CACHE_DIR": str(cache), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "2\n"
    assert list(cache.iterdir()) == []


def test_build_reports_the_exact_count_beside_the_estimate(
    repo: Repo, cli: Callable[..., Result], tmp_path: Path
) -> None:
    out = tmp_path / "p1.json"
    plain = tmp_path / "plain.json"
    argv = ["build", "packets/P-1/packet.yml", "-o", str(out), "--json", "--exact-tokens"]
    result = cli(argv, cwd=repo.path)
    assert result.code == 0
    summary = json.loads(result.out)
    data = out.read_bytes()
    assert summary["exact_tokens"] == {
        "encoding": "o200k_base",
        "count": tokens.count(data.decode("utf-8")),
    }
    assert f"({summary['exact_tokens']['count']:,} exact, o200k_base)" in result.err
    # The count never enters the capsule: the same bytes without it.
    assert cli(["build", "packets/P-1/packet.yml", "-o", str(plain), "--json"]).code == 0
    assert plain.read_bytes() == data
    assert b"o200k" not in data


def test_build_without_the_flag_reports_no_count(
    repo: Repo, cli: Callable[..., Result], tmp_path: Path
) -> None:
    out = str(tmp_path / "p1.json")
    result = cli(["build", "packets/P-1/packet.yml", "-o", out, "--json"], cwd=repo.path)
    assert result.code == 0
    assert json.loads(result.out)["exact_tokens"] is None
    assert "exact" not in result.err


def test_build_without_the_extra_still_builds_and_says_why(repo: Repo, tmp_path: Path) -> None:
    # The extra absent: its import fails, as it does where it is not installed.
    script = (
        "import sys\n"
        "sys.modules['tiktoken'] = None\n"
        "from governance.cli import main\n"
        "raise SystemExit(main(sys.argv[1:]))\n"
    )
    out = tmp_path / "p1.json"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            "build",
            "packets/P-1/packet.yml",
            "-o",
            str(out),
            "--json",
            "--exact-tokens",
        ],
        cwd=repo.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    exact = json.loads(done.stdout)["exact_tokens"]
    assert exact["count"] is None
    assert "pip install 'git-capsule[tokens]'" in exact["unavailable"]
    assert "no exact count" in done.stderr
    assert out.is_file()
