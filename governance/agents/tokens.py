"""Exact o200k_base token counts, offline, when the ``tokens`` extra is installed.

The encoder is tiktoken's; the vocabulary is the ``o200k_base.tiktoken`` file
the ``bpe-openai`` package ships (MIT licence) and is checked against the
SHA-256 OpenAI publishes for it before use. Nothing is ever downloaded:
tiktoken's own ``get_encoding`` (which fetches the file on first use) is never
called. A count is reported beside the ``utf8_bytes_div_3_ceil`` estimate; it
never enters a capsule's bytes and never gates a build.
"""

from __future__ import annotations

import binascii
import functools
import hashlib
from typing import Any

ENCODING = "o200k_base"
# The SHA-256 of o200k_base.tiktoken as OpenAI publishes it (tiktoken checks
# the same value after a download).
VOCABULARY_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
VOCABULARY_PACKAGE = "bpe-openai"
VOCABULARY_FILE = "bpe_openai/data/o200k_base.tiktoken.gz"
# o200k_base's definition beside its vocabulary: how text is split before the
# byte-pair merges, and its two special tokens (never produced here: counts
# encode ordinary text only).
SPLIT_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


class Unavailable(Exception):
    """Why no exact count can be given (the extra is missing or its file is not
    the published vocabulary)."""


def vocabulary_bytes(expected_sha256: str = VOCABULARY_SHA256) -> bytes:
    """The o200k_base vocabulary as shipped, after its SHA-256 check."""
    import gzip  # noqa: PLC0415 (defers gzip: only a count reads the vocabulary)
    import importlib.metadata  # noqa: PLC0415 (defers tempfile, importlib.resources)

    try:
        dist = importlib.metadata.distribution(VOCABULARY_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise Unavailable(
            "the tokens extra is not installed (pip install 'git-capsule[tokens]')"
        ) from None
    location = dist.locate_file(VOCABULARY_FILE)
    try:
        with open(str(location), "rb") as handle:
            packed = handle.read()
        data = gzip.decompress(packed)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise Unavailable(f"{VOCABULARY_PACKAGE} ships no readable {ENCODING}: {exc}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected_sha256:
        raise Unavailable(
            f"the {ENCODING} vocabulary of {VOCABULARY_PACKAGE} has sha256 {digest}, "
            f"not the published {expected_sha256}"
        )
    return data


def parse_vocabulary(data: bytes) -> dict[bytes, int]:
    """``token-in-base64 rank`` lines -> the mergeable ranks."""
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[binascii.a2b_base64(token)] = int(rank)
    return ranks


@functools.cache
def encoding() -> Any:
    """The o200k_base encoder (built once per process), or Unavailable."""
    try:
        import tiktoken  # noqa: PLC0415 (defers tiktoken, concurrent.futures)
    except ImportError:
        raise Unavailable(
            "the tokens extra is not installed (pip install 'git-capsule[tokens]')"
        ) from None
    return tiktoken.Encoding(
        ENCODING,
        pat_str=SPLIT_PATTERN,
        mergeable_ranks=parse_vocabulary(vocabulary_bytes()),
        special_tokens=SPECIAL_TOKENS,
    )


def count(text: str) -> int:
    """The exact o200k_base token count of ``text`` as ordinary text."""
    return len(encoding().encode_ordinary(text))


def exact_count(data: bytes) -> dict[str, Any]:
    """``{"encoding": "o200k_base", "count": N}`` for UTF-8 ``data``, with
    ``count`` None and the ``unavailable`` reason when the extra is not there
    (a count is a report, never a requirement)."""
    try:
        return {"encoding": ENCODING, "count": count(data.decode("utf-8"))}
    except Unavailable as exc:
        return {"encoding": ENCODING, "count": None, "unavailable": str(exc)}
