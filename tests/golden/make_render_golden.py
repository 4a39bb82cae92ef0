"""Regenerate (or --check) the golden renderings in this folder.

Each is ``capsule render`` of a capsule built from a repository this script
creates from fixed files with pinned authors and dates, so the bytes are the
same on every machine. HOSTILE-1 is made to break a careless view: content
full of backtick and tilde runs (one without a final line feed, one in CRLF),
headings with markup and fences in them, paths holding a backtick, a line
separator (U+2028) and a NEL (U+0085), a question that opens a fence.

    .venv/bin/python tests/golden/make_render_golden.py          # rewrite
    .venv/bin/python tests/golden/make_render_golden.py --check  # exit 1 on a diff
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pygit2

from governance.agents.render import render_markdown
from governance.core.builder import build_capsule
from governance.core.reader import read_capsule
from governance.core.repository import open_repository
from governance.core.snapshot import Snapshot
from governance.history.pre_adr import predates_adr_limits

HERE = Path(__file__).resolve().parent

FENCES = (
    "# Fences\n\n"
    "```\nnot closed by this\n```\n\n"
    "````markdown\n~~~\n`````\n````\n\n"
    "~~~~~~~ tilde run of seven\n"
    "   ``````````` eleven backticks, indented\n"
    "`` inline `` and ```inline``` too\n"
    "last line without a line feed ~~~~~~~~"
)
MARKUP = (
    "# Markup\n\n"
    "## Setup <script>alert(1)</script> *bold* [link](http://x.invalid) `code`\n\n"
    "Body of setup.\n\n"
    "## Close ``` and ~~~ here ##\n\n"
    "```\n## Not a heading\n```\n\n"
    "## Escaped \\*stars\\* &lt;b&gt; \\[x\\](y) &amp;amp;\n\nBody.\n\n"
    "## Windows\r\n\r\nCRLF body ```\r\n~~~\r\n"
)
POLICY = (
    b"target_tokens: 4000\nhard_limit_tokens: 6000\n"
    b"reserve_tokens: 500\nmax_required_reads: 9\nestimator: utf8_bytes_div_3_ceil\n"
)
LINE_SEPARATOR_PATH = "docs/line\u2028break.md"
NEL_PATH = "docs/nel\u0085name.md"
TICK_PATH = "docs/`tick` &amp; *x*.md"

FILES: dict[str, bytes] = {
    "policies/capsule.yml": POLICY,
    "docs/fences.md": FENCES.encode(),
    "docs/markup.md": MARKUP.encode(),
    LINE_SEPARATOR_PATH: b"# Line\n\nA path with a line separator.\n",
    NEL_PATH: b"# NEL\n\nA path with a next-line control.\n",
    TICK_PATH: b"# Tick\n\n``` a fence opener as content\n",
    "packets/HOSTILE-1/packet.yml": (
        "id: HOSTILE-1\ntitle: Hostile rendering\nobjective: Break the Markdown view.\n"
        "scope:\n  - docs\ndependencies: []\ncontracts:\n  - fences hold\n"
        'question: "```\\n# Injected heading\\n~~~ <b>bold</b> *x* [a](b)"\n'
        "required_reads:\n"
        "  - docs/fences.md\n"
        "  - docs/markup.md#setup-alert1-bold-link-code\n"
        "  - docs/markup.md#close--and--here\n"
        "  - docs/markup.md#escaped-stars-b-xy-amp\n"
        "  - docs/markup.md#windows\n"
        # YAML escapes: a raw U+2028 or U+0085 is a line break to YAML.
        '  - "docs/line\\u2028break.md"\n'
        '  - "docs/nel\\x85name.md"\n'
        f"  - '{TICK_PATH}'\n"
    ).encode(),
    "packets/HOSTILE-1/context.md": b"# Context\n\n~~~\nA context that opens a fence.\n",
}
GOLDEN = {"packets/HOSTILE-1/packet.yml": HERE / "HOSTILE-1.render.md"}


def _git(repo: Path, *args: str) -> None:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Golden",
        "GIT_AUTHOR_EMAIL": "golden@example.invalid",
        "GIT_COMMITTER_NAME": "Golden",
        "GIT_COMMITTER_EMAIL": "golden@example.invalid",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace")
        raise RuntimeError(f"git {' '.join(args)} in {repo}: {said}")


def make_repository(root: Path) -> Path:
    repo = root / "render-golden-repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    for rel, data in FILES.items():
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "render golden")
    return repo


def build_capsules(root: Path) -> dict[Path, bytes]:
    """Golden path -> the capsule JSON it renders."""
    repo = open_repository(make_repository(root))
    # The policy's 500-token reserve loosens the ADR's: this golden is a record
    # from before capsule/1 enforced them (its commit is dated 2026-01-01), and
    # is built by the rule its replay keeps (governance/history/pre_adr.py).
    head = repo.revparse_single("HEAD")
    assert isinstance(head, pygit2.Commit)
    assert predates_adr_limits(head)
    snapshot = Snapshot.at(repo, "HEAD", check_worktree=False)
    return {
        golden: build_capsule(snapshot, packet, adr_limits=False).data
        for packet, golden in GOLDEN.items()
    }


def build_all(root: Path) -> dict[Path, bytes]:
    return {
        golden: render_markdown(read_capsule(data)).encode("utf-8")
        for golden, data in build_capsules(root).items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        built = build_all(Path(tmp))
    drift = 0
    for path, data in built.items():
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                print(f"{path.name}: differs from a fresh rendering", file=sys.stderr)
                drift = 1
        else:
            path.write_bytes(data)
            print(f"wrote {path.name} ({len(data)} bytes)")
    return drift


if __name__ == "__main__":
    raise SystemExit(main())
