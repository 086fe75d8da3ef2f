"""Near-duplicate lookup: which stored assertion a new wording restates (Jaccard >= 0.7 over stemmed
content tokens), found without comparing every pair.

Invariant: exact between statements of <= EXACT_MAX_TOKENS (8) tokens, filed under their deletion
neighbourhoods; longer ones use MinHash LSH (recall >= 0.98), which statements of <= 6 tokens never
touch. Keys are stable across processes, each returns <= ROWS_PER_KEY rows (a lookup reads a bounded
number of candidates however large the graph), and candidates are verified with the exact Jaccard.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import sqlite3
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from sys import intern

from ontology import minhash
from ontology.language import NEGATION_CUE
from ontology.normalize import NAMES_IN_CODE_RE, Proposition, case_apart, names_apart, numbers, rival, swap, swapped_in_place, value_marks
from ontology.schema import in_chunks

# Words that state a value of a switch: two wordings differing by one of them state two values.
_SWITCHES = frozenset("on off true false enabled disabled enable disable active inactive required optional "
                      "allowed forbidden public private sync async".split())

# Jaccard over stemmed content tokens at or above which two wordings are one proposition. 0.7 merges
# rewordings that add or drop one content word in four ("hit the real database in tests" / "tests
# hit a real database"), and keeps apart ones that swap a content word ("unit" vs "integration").
NEAR_DUPLICATE_JACCARD = 0.7
_T = Fraction(7, 10)  # the same threshold as an exact fraction, for sizes (0.7 * 10 is 7.000000000000001)
assert float(_T) == NEAR_DUPLICATE_JACCARD
MIN_NEAR_DUPLICATE_TOKENS = 3  # shorter statements match only exactly: too little to compare
# The largest subset filed as a key: 1 + n keys for n = 4..6 (fewer rows than 15 LSH bands), 28 for 7
# and 8 tokens. Subsets of 7 would grow combinatorially (176 keys at 10 tokens), so longer statements
# use LSH. J >= t forces |A & B| >= ceil(t * max(|A|, |B|)), and that is <= 6 up to 8 tokens.
SUBSET_MAX_SIZE = 6
ROWS_PER_KEY = 20  # rows read per key (oldest first): bounds a lookup when a key is crowded
# New keys go to the small table `subsets_recent`, which joins `subsets` in one pass in key order once it
# holds this many rows (`settle`, before a commit). Filed straight into `subsets`, a batch's ~7,000
# random keys dirtied most of its leaf pages at every commit (2,651 of a batch's 6,565 WAL pages at 30k
# Zipf artifacts), and the checkpoint copied them back; the small table stays a few hundred pages, and
# the big one is rewritten once per ~9 batches instead of at each (ADR 0007, "Session 6").
# `subsets_recent` is appended in arrival order (rowid), so one artifact's ~28 keys land on its last page
# or two instead of ~26 random leaves (31 of a single POST's 75 WAL pages, ADR 0007 "Session 7"); the
# writer looks them up in memory (`_recent_rows`, read back from the table when it opens or when
# another connection has committed), ~6 MiB at RECENT_ROWS rows.
RECENT_ROWS = 65_536
# Candidate token sets kept in memory (~600 bytes each, so <= ~40 MiB): a Zipf vocabulary makes the same
# assertions candidates again and again, and fetching them was a third of the near-duplicate cost.
CACHE_SIZE = 65_536
_MASK63 = (1 << 63) - 1  # SQLite INTEGER is signed 64-bit
# The writer's filter of the keys `subsets` holds (`_KeyFilter`): 2^24 bits (2 MiB), 3 probes. At 100k
# Zipf artifacts `subsets` holds 1.8 M distinct keys (9 bits each, ~3 % false positives), and three in
# four keys a lookup probes are in neither table: each of those cost a B-tree descent to a random leaf.
FILTER_BITS = 1 << 24


@lru_cache(maxsize=256)
def min_overlap(size: int) -> int:
    """Fewest shared tokens a set of `size` tokens needs with any set to reach the threshold:
    J >= t implies |A & B| >= t * |A|."""
    return math.ceil(_T * size)


# Statements up to this many tokens are filed under subsets: any two of them meet under a key (8).
EXACT_MAX_TOKENS = max(n for n in range(1, 4 * SUBSET_MAX_SIZE) if min_overlap(n) <= SUBSET_MAX_SIZE)
# The shortest statement that can restate one longer than EXACT_MAX_TOKENS (|A| / |B| >= t for A in B):
# from it up, statements are also filed in LSH (7); shorter ones never meet a statement LSH holds.
LSH_MIN_TOKENS = math.ceil(_T * (EXACT_MAX_TOKENS + 1))


def subset_key(tokens: tuple[str, ...]) -> int:
    """A stable 63-bit key for a set of tokens (sorted; blake2b, not `hash`, which is salted per process)."""
    digest = hashlib.blake2b("\x1f".join(tokens).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & _MASK63


def subset_keys(tokens: frozenset[str], sizes: range) -> list[int]:
    ordered = sorted(tokens)
    return [subset_key(combo) for size in sizes for combo in itertools.combinations(ordered, size)]


@dataclass(frozen=True)
class IndexKeys:
    """Where a new assertion is filed: deletion-neighbourhood keys and LSH (band, hash) pairs.
    Keys that already hold ROWS_PER_KEY rows are left out: they return their oldest rows forever,
    so a new row there would never be read."""

    subsets: list[int] = field(default_factory=list)
    bands: list[tuple[int, int]] = field(default_factory=list)


class _KeyFilter:
    """A Bloom filter over the keys of `subsets`: `might_hold` is False only for a key the table lacks.
    Keys are blake2b digests (`subset_key`), so their own bits place the probes (double hashing)."""

    __slots__ = ("_bits", "_mask")

    def __init__(self, bits: int = FILTER_BITS) -> None:
        self._bits = bytearray(bits // 8)
        self._mask = bits - 1

    def add(self, key: int) -> None:
        bits, mask = self._bits, self._mask
        step, spot = (key >> 31) | 1, key & mask
        bits[spot >> 3] |= 1 << (spot & 7)
        spot = (spot + step) & mask
        bits[spot >> 3] |= 1 << (spot & 7)
        spot = (spot + step) & mask
        bits[spot >> 3] |= 1 << (spot & 7)

    def might_hold(self, key: int) -> bool:
        bits, mask = self._bits, self._mask
        step, spot = (key >> 31) | 1, key & mask
        if not bits[spot >> 3] >> (spot & 7) & 1:
            return False
        spot = (spot + step) & mask
        if not bits[spot >> 3] >> (spot & 7) & 1:
            return False
        spot = (spot + step) & mask
        return bool(bits[spot >> 3] >> (spot & 7) & 1)


def _score(scored: tuple[float, int]) -> float:
    return scored[0]


@lru_cache(maxsize=128)
def _lookup_sql(n_subsets: int, n_bands: int) -> str:
    """One row, one column per key: that key's first ROWS_PER_KEY assertion ids in `subsets` (the rows
    in `subsets_recent` are read from memory), comma-joined."""
    column = "(SELECT group_concat(assertion_id) FROM (SELECT assertion_id FROM {} LIMIT %d))" % ROWS_PER_KEY
    return "SELECT " + ", ".join([column.format(f"subsets WHERE key=?{k + 1}") for k in range(n_subsets)]
                                 + [column.format(f"lsh WHERE band=?{n_subsets + 2 * b + 1} AND "
                                                  f"hash=?{n_subsets + 2 * b + 2}") for b in range(n_bands)])


class NearDuplicateIndex:
    """The writer's near-duplicate index; lives as long as the writer's connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        # assertion id -> (tokens, slot, value, polarity). Tokens, slot and value never change once written;
        # polarity changes when a memory file re-anchors the assertion, which must call `changed`; ids are
        # never reused except after a rollback, which must call `forget`. The tokens are a tuple of distinct
        # interned strings, not a frozenset of fresh ones: ~170 bytes an entry instead of ~1 KB (a set of
        # five takes a 32-slot table), so a full cache is ~11 MiB, not ~65 (ADR 0007, "Session 12").
        # An assertion this writer creates enters the cache as it is filed (`add`): it is a candidate of
        # later statements far more often than not, and was a SQL fetch at its first candidacy.
        self._cache: dict[int, tuple[tuple[str, ...], str | None, str | None, int]] = {}
        # assertion id -> its text, for the swap check (`_best`), read at its first check; changes with the
        # text (`changed`), goes with the cache.
        self._texts: dict[int, str] = {}
        # subsets_recent as key -> its assertion id (most keys hold one: a bare int, 6 MiB at RECENT_ROWS
        # rows where one-item lists took 10), or its ids oldest first, and the number of rows; None: read
        # it back from the table at the next use (on open, after a rollback, after another writer's commit).
        self._recent_rows: dict[int, int | list[int]] | None = None
        self._recent = 0
        self._data_version: int | None = None
        # A filter of the keys in `subsets` (None: none yet, every key is looked up in SQL). Built for free
        # when the table is empty at first use (a new graph, a rebuild, a bulk ingest from scratch), else
        # by one scan at this writer's first `settle`, which is already bulk work: a scan of 2 M rows costs
        # about a second, too much to add to opening a large graph for a few artifacts.
        self._filter: _KeyFilter | None = None
        self._filter_checked = False

    def forget(self) -> None:
        self._cache.clear()
        self._texts.clear()
        self._recent_rows = None  # a rollback took back rows it held

    def begin(self) -> None:
        """At the start of a write transaction: another connection (a second writer process, between
        our transactions) may have filed keys since we read the table; then read it again."""
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._recent_rows = None
            self._filter, self._filter_checked = None, False  # another writer may have moved keys into subsets
            self._cache.clear()  # ... or re-anchored an assertion: its polarity and text changed
            self._texts.clear()
            self._data_version = version

    def _key_filter(self) -> _KeyFilter | None:
        if not self._filter_checked:
            self._filter_checked = True
            if self.conn.execute("SELECT 1 FROM subsets LIMIT 1").fetchone() is None:
                self._filter = _KeyFilter()
        return self._filter

    def _recent_table(self) -> dict[int, int | list[int]]:
        if self._recent_rows is None:
            self._recent_rows, self._recent = {}, 0
            for key, assertion_id in self.conn.execute("SELECT key, assertion_id FROM subsets_recent "
                                                       "ORDER BY assertion_id, rowid"):
                self._file_recent(key, assertion_id)
        return self._recent_rows

    def _file_recent(self, key: int, assertion_id: int) -> bool:
        """Add a row to the in-memory copy (ids arrive oldest first); False if it was there already."""
        rows = self._recent_rows
        assert rows is not None
        held = rows.get(key)
        if held is None:
            rows[key] = assertion_id
        elif isinstance(held, int):
            if held == assertion_id:
                return False
            rows[key] = [held, assertion_id]
        elif assertion_id in held:
            return False
        else:
            held.append(assertion_id)
        self._recent += 1
        return True

    def changed(self, assertion_id: int) -> None:
        """An assertion's polarity changed (a memory file re-anchored it, `store._maybe_move_owner`): its
        cached entry would let a near wording of the old polarity merge in, and deny the new owner."""
        self._cache.pop(assertion_id, None)
        self._texts.pop(assertion_id, None)

    def settle(self) -> None:
        """Before a commit: once subsets_recent holds RECENT_ROWS rows, move them all into subsets, in
        key order (one pass over its leaves), and empty it."""
        recent = self._recent_table()
        if self._recent < RECENT_ROWS:
            return
        # No row can conflict (the keys are new assertions'); OR IGNORE spares the statement journal a plain
        # INSERT keeps in case it fails halfway (in memory: +26 MB of peak RSS at 100k artifacts).
        self.conn.execute("INSERT OR IGNORE INTO subsets(key, assertion_id) "
                          "SELECT key, assertion_id FROM subsets_recent ORDER BY key, assertion_id")
        self.conn.execute("DELETE FROM subsets_recent")
        key_filter = self._key_filter()
        if key_filter is None:  # the table held keys when this writer opened: one scan, once
            key_filter = _KeyFilter()
            for (key,) in self.conn.execute("SELECT key FROM subsets"):
                key_filter.add(key)
            self._filter = key_filter
        else:
            for key in recent:
                key_filter.add(key)
        recent.clear()
        self._recent = 0

    def find(self, prop: Proposition, text: str | None = None) -> tuple[int | None, IndexKeys]:
        """The assertion `prop` restates, if any (best Jaccard, then lowest id), and the keys to file
        `prop` under if it becomes a new assertion: the same keys it probes. With the statement's `text`,
        a wording that swaps one word in place of another keeps apart (`normalize.swapped_in_place`)."""
        size = len(prop.tokens)
        if size < MIN_NEAR_DUPLICATE_TOKENS:
            return None, IndexKeys()  # never anyone's near-duplicate: nothing to index either
        subsets = subset_keys(prop.tokens, range(min_overlap(size), min(size, SUBSET_MAX_SIZE) + 1)) \
            if size <= EXACT_MAX_TOKENS else []
        bands = minhash.bands(prop.tokens) if size >= LSH_MIN_TOKENS else []
        # Only keys the filter says `subsets` may hold are looked up there; the others have no row in it.
        key_filter = self._key_filter() if subsets else None
        held = [True] * len(subsets) if key_filter is None else [key_filter.might_hold(key) for key in subsets]
        params = [key for key, maybe in zip(subsets, held) if maybe] + [x for pair in bands for x in pair]
        row = self.conn.execute(_lookup_sql(sum(held), len(bands)), params).fetchone() if params else ()
        columns = iter([column.split(",") if column else [] for column in row])
        found = [next(columns) if maybe else [] for maybe in held] + list(columns)
        if subsets:
            # Every id in subsets is older (smaller) than every id in subsets_recent (`settle` moves all of
            # them at once, and new assertions get larger ids): a key's oldest rows are those of subsets,
            # then those waiting in memory.
            recent = self._recent_table()
            for k, key in enumerate(subsets):
                if (waiting := recent.get(key)) is not None and len(found[k]) < ROWS_PER_KEY:
                    found[k] = found[k] + ([waiting] if isinstance(waiting, int) else waiting[:ROWS_PER_KEY - len(found[k])])
        keys = IndexKeys(subsets=[k for k, rows in zip(subsets, found) if len(rows) < ROWS_PER_KEY],
                         bands=[pair for pair, rows in zip(bands, found[len(subsets):]) if len(rows) < ROWS_PER_KEY])
        ids = sorted({int(i) for rows in found for i in rows})
        return self._best(prop, ids, text), keys

    def _text(self, assertion_id: int) -> str:
        if (text := self._texts.get(assertion_id)) is None:
            text = self._texts[assertion_id] = self.conn.execute(
                "SELECT text FROM assertion_rows WHERE id=?", (assertion_id,)).fetchone()[0]
        return text

    def add(self, assertion_id: int, keys: IndexKeys, prop: Proposition | None = None) -> None:
        """File a new assertion under `keys` (`find`'s); with its `prop`, cache it as a fetch would have (a
        statement filed under no key is nobody's candidate)."""
        if prop is not None and (keys.subsets or keys.bands) and len(self._cache) < CACHE_SIZE:
            # Exactly what `_best` would read back: the stored tokens are `prop`'s, sorted and space-joined.
            self._cache[assertion_id] = (tuple(frozenset(map(intern, " ".join(sorted(prop.tokens)).split()))),
                                         prop.slot, prop.value, prop.polarity)
        self._recent_table()
        # The newest id: each key's ids stay oldest first.
        # An executemany with no rows still looks its statement up and resets it (store._many): a
        # statement of <= 6 tokens has no bands, one of >= 9 no subset keys.
        if rows := [(key, assertion_id) for key in keys.subsets if self._file_recent(key, assertion_id)]:
            self.conn.executemany("INSERT INTO subsets_recent(key, assertion_id) VALUES(?,?)", rows)
        if keys.bands:
            self.conn.executemany("INSERT OR IGNORE INTO lsh(band, hash, assertion_id) VALUES(?,?,?)",
                                  [(b, h, assertion_id) for b, h in keys.bands])

    def _best(self, prop: Proposition, ids: list[int], text: str | None = None) -> int | None:
        if not ids:
            return None
        cache = self._cache
        missing = [i for i in ids if i not in cache]
        if missing:
            if len(cache) + len(missing) > CACHE_SIZE:
                cache.clear()  # bounded memory; the common candidates come back within a few lookups
                self._texts.clear()
                missing = ids
            for marks, chunk in in_chunks(missing):
                for cid, tokens, slot, value, polarity in self.conn.execute(
                        f"SELECT id, tokens, slot, value, polarity FROM assertions WHERE id IN ({marks})", chunk):
                    cache[cid] = (tuple(frozenset(map(intern, tokens.split()))), slot, value, polarity)
        # Jaccard = |A & B| / (|A| + |B| - |A & B|); one comprehension keeps the per-candidate cost low.
        # Interned, the statement's tokens meet the cached ones by identity, without comparing characters.
        mine, size = frozenset(map(intern, prop.tokens)), len(prop.tokens)
        scored = [(score, cid) for cid in ids
                  if (score := (common := len(mine.intersection((entry := cache[cid])[0])))
                      / (size + len(entry[0]) - common)) >= NEAR_DUPLICATE_JACCARD]
        if not scored:
            return None
        # The statement's own side of each check, once per lookup instead of once per candidate (all
        # pure functions of its tokens; mem12).
        my_numbers, my_negated, my_marks = numbers(mine), NEGATION_CUE in mine, value_marks(mine)
        my_named = text is not None and NAMES_IN_CODE_RE.search(text) is not None
        # Best Jaccard first, then lowest id: the first candidate that passes every check is the answer, and
        # the ones after it are never checked (ids come sorted, so a stable sort on the score keeps ties in
        # id order).
        if len(scored) > 1:
            scored.sort(key=_score, reverse=True)
        for score, cid in scored:
            listed, slot, value, polarity = cache[cid]
            if slot and prop.slot and (slot != prop.slot or rival(value, prop.value)):
                continue  # rival values of one slot are alternatives, never the same claim
            if polarity != prop.polarity:
                continue  # only the same wording negated (one key) denies a claim; a near one may not
            tokens = frozenset(listed)  # the few candidates that reach the checks below
            if numbers(tokens) != my_numbers:
                continue  # "185 tests green" and "257 tests green" are two claims
            if (NEGATION_CUE in tokens) != my_negated:
                continue  # "Không dùng Redis …" is not "Dùng Redis …" (a negation we cannot read)
            if (tokens ^ mine) & _SWITCHES:
                continue  # "Debug logging is off" is not "Debug logging is on" ("on" is a stopword)
            if (theirs := value_marks(tokens)) and my_marks and theirs != my_marks:
                continue  # "ฐานข้อมูล: MySQL" is not "ฐานข้อมูล: PostgreSQL" (a fact that is no slot)
            if names_apart(tokens, mine):
                continue  # "block_k: [32, 64]" is not "block_k=64 same as block_k=32" (ADR 0004)
            if text is not None and swap(tokens, mine) and swapped_in_place(self._text(cid), tokens, text, mine):
                continue  # "… the web package first" is not "… the api package first" (ADR 0004)
            if my_named and case_apart(self._text(cid), text):  # type: ignore[arg-type]
                continue  # `secId` and `secID` are two names to code: no claim of both (judge14)
            return cid
        return None
