"""The capsule/1 estimate, ceil(UTF-8 bytes / 3), against exact o200k_base counts.

Needs the tokens extra (``make test`` installs it). Prints one row per corpus:
bytes, the estimate, the exact count, exact / estimate, and whether the
estimate is conservative (estimate >= exact). Corpora: this repository's
docs, README and Python sources, the capsule of its own packet GC-003, the
golden capsule GOLD-1 (three tiny reads, so mostly hashes), and a
generated corpus (seeded, so every run counts the same text) of prose in
several scripts, emoji, hex digests, base64, spaced letters and whitespace.
It also times loading the tokenizer and counting a capsule.

    .venv/bin/python bench/bench_tokens.py
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import math
import random
import subprocess
import sys
import time
from pathlib import Path

from governance.agents import tokens

ROOT = Path(__file__).resolve().parent.parent
TARGET_BYTES = 60_000

WORDS = {
    "english": "the capsule holds exact bytes of every source bound to one commit and its hashes",
    "french": "élève être déjà où ça garçon forêt hôpital naïve cœur fenêtre château début",
    "german": "Größe Straße übermäßig Äpfel Öffnung schön früh Brücke Gemüse Mädchen",
    "russian": "привет мир капсула точные байты каждого источника коммит хеш проверка",
    "greek": "καλημέρα κόσμε κάψουλα ακριβή δεδομένα πηγή έλεγχος ιστορία",
    "japanese": "日本語 の 文章 です 確認 履歴 記録 再現 正確 な バイト",
    "chinese": "胶囊 保存 每个 来源 的 精确 字节 并 绑定 到 一个 提交",
    "korean": "캡슐 은 모든 원본 의 정확한 바이트 를 커밋 에 묶는다",
    "arabic": "الكبسولة تحفظ البايتات الدقيقة لكل مصدر مرتبطة بالتزام واحد",
    "hindi": "कैप्सूल हर स्रोत के सटीक बाइट्स को एक कमिट से बांधता है",
    "thai": "แคปซูล เก็บ ไบต์ ที่ แน่นอน ของ ทุก แหล่ง ผูก กับ คอมมิต",
    "emoji": "😀 🎉 👩‍👩‍👧 🚀 ✅ ❌ 🔒 🧪 📦 🇫🇷 🏳️‍🌈 🤖",
}


def generated() -> dict[str, str]:
    rng = random.Random(20260101)
    corpora = {}
    for name, words in WORDS.items():
        vocab = words.split()
        parts: list[str] = []
        size = 0
        while size < TARGET_BYTES:
            sentence = " ".join(rng.choice(vocab) for _ in range(rng.randint(5, 14))) + ".\n"
            parts.append(sentence)
            size += len(sentence.encode())
        corpora[f"generated {name}"] = "".join(parts)
    digests = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(TARGET_BYTES // 65)]
    corpora["generated sha256 hex"] = "\n".join(digests) + "\n"
    blob = rng.randbytes(TARGET_BYTES * 3 // 4)
    corpora["generated base64"] = base64.b64encode(blob).decode() + "\n"
    letters = "abcdefghijklmnopqrstuvwxyz"
    corpora["generated spaced letters"] = " ".join(
        rng.choice(letters) for _ in range(TARGET_BYTES // 2)
    )
    corpora["generated indentation"] = "".join(
        " " * rng.randint(0, 16) + "\t" * rng.randint(0, 3) + "x\n" for _ in range(4000)
    )
    return corpora


def repository() -> dict[str, str]:
    corpora = {
        "docs/*.md": "".join(p.read_text("utf-8") for p in sorted((ROOT / "docs").glob("*.md"))),
        "README.md": (ROOT / "README.md").read_text("utf-8"),
        "governance/**/*.py": "".join(
            p.read_text("utf-8") for p in sorted((ROOT / "governance").rglob("*.py"))
        ),
    }
    golden = ROOT / "tests" / "golden" / "GOLD-1.capsule.json"
    if golden.is_file():
        corpora["golden capsule (tiny reads)"] = golden.read_text("utf-8")
    # At the commit id, not HEAD: the committed bytes, however the work tree is.
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    built = subprocess.run(
        [sys.executable, "-m", "governance", "build", "packets/GC-003/packet.yml", "--at", head],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if built.returncode == 0:
        corpora["capsule of GC-003"] = built.stdout.decode("utf-8")
    else:
        print(f"(GC-003 did not build here: {built.stderr.decode().strip()})", file=sys.stderr)
    return corpora


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest setting, for the smoke test: this script has one size, already small",
    )
    parser.parse_args(argv)

    started = time.perf_counter()
    tokens.encoding()
    loaded = time.perf_counter() - started
    print(f"tokenizer load (vocabulary check, parse, encoder): {loaded * 1000:.0f} ms")
    rows = {**repository(), **generated()}
    print()
    print(f"{'corpus':<28} {'bytes':>8} {'estimate':>9} {'exact':>8} {'exact/est':>9}  verdict")
    for name, text in rows.items():
        size = len(text.encode("utf-8"))
        estimate = math.ceil(size / 3)
        started = time.perf_counter()
        exact = tokens.count(text)
        took = time.perf_counter() - started
        verdict = "conservative" if estimate >= exact else "NOT conservative"
        print(
            f"{name:<28} {size:>8} {estimate:>9} {exact:>8} {exact / estimate:>9.2f}  "
            f"{verdict} ({took * 1000:.1f} ms to count)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
