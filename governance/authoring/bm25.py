"""BM25 (k1 = 1.2, b = 0.75) in integer arithmetic, so no platform's floating
point (libm's ``log`` may differ in its last bit) decides an order.

Scores are fixed-point integers: ``SCALE`` is 1.0. The IDF is
``ln(1 + (N - df + 0.5) / (df + 0.5))`` = ``ln((2N + 2) / (2df + 1))``, taken
by an integer logarithm; the term-frequency part is an exact rational,
floored once. Document lengths are in bytes (the average likewise): the
ratio BM25 needs, without tokenising text that holds none of the goal's terms.
"""

from __future__ import annotations

SCALE_BITS = 20
SCALE = 1 << SCALE_BITS
# ln 2 in fixed point with 64 fractional bits (0.693147180559945309417232121458...).
_LN2_64 = 12786308645202655660
_PRECISION = 64


def log2_fixed(num: int, den: int) -> int:
    """floor(log2(num / den) * SCALE) for num >= den > 0, in integers only."""
    if num < den or den <= 0:
        raise ValueError("log2_fixed needs num >= den > 0")
    # Integer part: the largest k with den * 2**k <= num.
    k = num.bit_length() - den.bit_length()
    if den << max(k, 0) > num:
        k -= 1
    # x = num / (den * 2**k) in [1, 2), as a fixed-point integer of _PRECISION bits.
    one = 1 << _PRECISION
    x = (num << _PRECISION) // (den << k)
    result = k
    # One fractional bit per squaring: x**2 >= 2 means the next bit is 1.
    for _ in range(SCALE_BITS):
        x = (x * x) >> _PRECISION
        result <<= 1
        if x >= 2 * one:
            x >>= 1
            result |= 1
    return result


def idf(n_docs: int, doc_freq: int) -> int:
    """The IDF of a term found in ``doc_freq`` of ``n_docs`` documents, x SCALE."""
    return (log2_fixed(2 * n_docs + 2, 2 * doc_freq + 1) * _LN2_64) >> _PRECISION


def term_score(idf_fixed: int, tf: int, doc_len: int, n_docs: int, total_len: int) -> int:
    """One term's BM25 contribution, x SCALE.

    tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)) with k1 = 6/5, b = 3/4
    and avgdl = total_len / n_docs is exactly
    22 tf T / (10 tf T + 3 T + 9 dl N): one floor division of integers.
    """
    if tf <= 0:
        return 0
    total = max(total_len, 1)
    num = 22 * tf * total * idf_fixed
    den = 10 * tf * total + 3 * total + 9 * doc_len * n_docs
    return num // den
