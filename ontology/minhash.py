"""MinHash signatures and LSH bands: near-duplicate candidates without comparing every pair.

Invariant: the same token set always yields the same bands (keyed blake2b and tuple hashing of ints
are both stable across processes), so a rebuilt database finds the same candidates. Candidates are
verified with exact Jaccard by the caller; bands only keep the lookup cost flat as the graph grows.
"""

from __future__ import annotations

import hashlib
import struct
from functools import lru_cache
from typing import Iterable

# 15 bands of 4 rows: a pair at Jaccard 0.7 becomes a candidate with p = 1 - (1 - 0.7^4)^15 = 0.984,
# at 0.8 with p = 0.9997, while an unrelated pair at 0.2 does only with p = 0.024 (verified cheaply
# with exact Jaccard). Each band is one indexed row per assertion, and those rows are most of the
# write cost of ingest (bench/ingest.py), so fewer bands is faster; 15 keeps recall at 0.7 >= 0.98.
BANDS = 15
ROWS = 4
_PER_DIGEST = 16  # a 64-byte blake2b digest holds 16 independent 32-bit hash values
_DIGESTS = -(-BANDS * ROWS // _PER_DIGEST)
_UNPACK = struct.Struct(f"<{_PER_DIGEST}I").unpack
_MASK63 = (1 << 63) - 1  # SQLite INTEGER is signed 64-bit


@lru_cache(maxsize=1 << 16)  # vocabularies repeat heavily (Zipf); hashing is the hot path
def _token_values(token: str) -> tuple[int, ...]:
    data = token.encode()
    values: tuple[int, ...] = ()
    for salt in range(_DIGESTS):
        values += _UNPACK(hashlib.blake2b(data, digest_size=64, salt=salt.to_bytes(16, "little")).digest())
    return values[: BANDS * ROWS]


def signature(tokens: Iterable[str]) -> list[int]:
    per_token = [_token_values(t) for t in set(tokens)]
    return list(map(min, zip(*per_token))) if per_token else []


def bands(tokens: Iterable[str]) -> list[tuple[int, int]]:
    """(band index, band hash) pairs, stored and looked up in an indexed table."""
    sig = signature(tokens)
    return [(b, hash(tuple(sig[b * ROWS : (b + 1) * ROWS])) & _MASK63) for b in range(BANDS)] if sig else []
