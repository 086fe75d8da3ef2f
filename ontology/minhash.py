"""MinHash signatures and LSH bands: near-duplicate candidates without comparing every pair.

Invariant: the same token set always yields the same bands (hashing is seeded, not randomized per
process), so a rebuilt database finds the same candidates. Candidates are verified with exact
Jaccard by the caller; bands only make the lookup cost flat as the graph grows.
"""

from __future__ import annotations

import hashlib
from typing import Iterable

# 10 bands of 3 rows: a pair at Jaccard 0.7 becomes a candidate with p = 1 - (1 - 0.7^3)^10 = 0.985,
# at 0.8 with p = 0.9992, while a pair at 0.3 does only with p = 0.24 (cheap to verify and drop).
BANDS = 10
ROWS = 3
_PRIME = (1 << 61) - 1
_SEEDS = [
    (int.from_bytes(hashlib.blake2b(f"a{i}".encode(), digest_size=8).digest(), "big") | 1,
     int.from_bytes(hashlib.blake2b(f"b{i}".encode(), digest_size=8).digest(), "big"))
    for i in range(BANDS * ROWS)
]


def _token_hash(token: str) -> int:
    return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")


def signature(tokens: Iterable[str]) -> list[int]:
    hashes = [_token_hash(t) for t in set(tokens)]
    if not hashes:
        return []
    return [min((a * h + b) % _PRIME for h in hashes) for a, b in _SEEDS]


def bands(tokens: Iterable[str]) -> list[tuple[int, int]]:
    """(band index, band hash) pairs, stored and looked up in an indexed table (signed 63-bit)."""
    sig = signature(tokens)
    if not sig:
        return []
    out = []
    for band in range(BANDS):
        chunk = ",".join(map(str, sig[band * ROWS : (band + 1) * ROWS])).encode()
        out.append((band, int.from_bytes(hashlib.blake2b(chunk, digest_size=8).digest(), "big") >> 1))
    return out


def jaccard(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
