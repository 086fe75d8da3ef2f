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
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from sys import intern

from ontology import minhash
from ontology.language import NEGATION_CUE
from ontology.normalize import Proposition, names_apart, numbers, rival, swap, swapped_in_place, value_marks
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


# A wording: (tokens, slot, value, polarity, text, or a function reading it: most checks never need it).
Wording = tuple[frozenset[str], "str | None", "str | None", int, "str | Callable[[], str]"]
# Groups larger than this are not checked for a center (quadratic); a wording joins them only through
# the assertion's own wording, as before wordings were kept.
MAX_GROUP = 16


def _jaccard(a: frozenset[str], b: frozenset[str] | tuple[str, ...]) -> float:
    common = len(a.intersection(b))
    return common / (len(a) + len(b) - common) if common else 0.0


def _passes(tokens: frozenset[str], slot: str | None, value: str | None, polarity: int, text: str | Callable[[], str],
            mine: frozenset[str], my_slot: str | None, my_value: str | None, my_polarity: int,
            my_text: str | Callable[[], str]) -> bool:
    """The checks `NearDuplicateIndex._best` makes after the Jaccard, for one pair of wordings."""
    if slot and my_slot and (slot != my_slot or rival(value, my_value)):
        return False
    if polarity != my_polarity or numbers(tokens) != numbers(mine):
        return False
    if (NEGATION_CUE in tokens) != (NEGATION_CUE in mine) or (tokens ^ mine) & _SWITCHES:
        return False
    if (theirs := value_marks(tokens)) and (marks := value_marks(mine)) and theirs != marks:
        return False
    if names_apart(tokens, mine):
        return False
    if not swap(tokens, mine):
        return True
    return not swapped_in_place(text() if callable(text) else text, tokens,
                                my_text() if callable(my_text) else my_text, mine)


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
        # Wordings an assertion took besides its own (table `wordings`, ADR 0004 "Session 14 (recall14)"):
        # assertion id -> [(tokens, slot, value, polarity, text)], read for a candidate that has any, and the
        # set of assertions that have any (None: read it at the next use).
        self._extra: dict[int, list[Wording]] = {}
        self._with_extra: set[int] | None = None
        self._linked: list[int] = []  # `_best`'s passing candidates, for `find_linked`
        self._moved: dict[int, int] = {}  # merged assertion -> survivor, for ids the in-memory subsets_recent holds

    def forget(self) -> None:
        self._cache.clear()
        self._texts.clear()
        self._recent_rows = None  # a rollback took back rows it held
        self._moved.clear()
        self._forget_wordings()

    def _forget_wordings(self) -> None:
        self._extra.clear()
        self._with_extra = None

    def begin(self) -> None:
        """At the start of a write transaction: another connection (a second writer process, between
        our transactions) may have filed keys since we read the table; then read it again."""
        version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._recent_rows = None
            self._moved.clear()
            self._filter, self._filter_checked = None, False  # another writer may have moved keys into subsets
            self._cache.clear()  # ... or re-anchored an assertion: its polarity and text changed
            self._texts.clear()
            self._forget_wordings()  # ... or filed wordings and merged assertions
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
        self._extra.pop(assertion_id, None)

    # -- wordings and merges (ADR 0004, "Session 14 (recall14)") -----------------------------------

    def _extras_index(self) -> set[int]:
        if self._with_extra is None:
            self._with_extra = {a for (a,) in self.conn.execute("SELECT DISTINCT assertion_id FROM wordings")}
        return self._with_extra

    def has_extras(self, assertion_id: int) -> bool:
        """Whether the assertion took wordings besides its own."""
        return assertion_id in self._extras_index()

    def has_wordings(self) -> bool:
        """Whether any assertion took another wording (else the key lookups skip the table)."""
        return bool(self._extras_index())

    def wordings(self, assertion_id: int) -> list[Wording]:
        """Every wording of an assertion: its own (first), then those it took."""
        entry = self._entry(assertion_id)
        own = (frozenset(entry[0]), entry[1], entry[2], entry[3], lambda: self._text(assertion_id))  # read if needed
        return [own, *self._extras(assertion_id)]

    def _entry(self, assertion_id: int) -> tuple[tuple[str, ...], str | None, str | None, int]:
        if assertion_id not in self._cache:
            self._fetch([assertion_id])
        return self._cache[assertion_id]

    def _extras(self, assertion_id: int) -> list[Wording]:
        if assertion_id not in self._extras_index():
            return []
        held = self._extra.get(assertion_id)
        if held is None:
            held = self._extra[assertion_id] = [
                (frozenset(map(intern, tokens.split())), slot, value, polarity, text) for tokens, slot, value, polarity, text
                in self.conn.execute("SELECT tokens, slot, value, polarity, text FROM wordings WHERE assertion_id=? "
                                     "ORDER BY key", (assertion_id,))]
        return held

    def add_wording(self, assertion_id: int, keys: IndexKeys, prop: Proposition, text: str) -> None:
        """A wording with a key of its own joined `assertion_id`: keep it and file it under its keys (the
        ones `find` probed), so a later wording near it (and not near the assertion's own) finds it."""
        if self.conn.execute("INSERT OR IGNORE INTO wordings(key, assertion_id, text, tokens, slot, value, polarity) "
                             "VALUES(?,?,?,?,?,?,?)", (prop.key, assertion_id, text, " ".join(sorted(prop.tokens)),
                                                      prop.slot, prop.value, prop.polarity)).rowcount:
            self._extras_index().add(assertion_id)
            self._extra.pop(assertion_id, None)
            self.add(assertion_id, keys)

    def repoint(self, gone: int, keep: int, token_sets: list[frozenset[str]]) -> None:
        """`gone` was merged into `keep`: the keys its wordings (`token_sets`) were filed under name `keep`
        now (recomputed as `find` computes them: the tables have no index by assertion)."""
        conn = self.conn
        for tokens in token_sets:
            size = len(tokens)
            if size < MIN_NEAR_DUPLICATE_TOKENS:
                continue
            if size <= EXACT_MAX_TOKENS:
                for key in subset_keys(tokens, range(min_overlap(size), min(size, SUBSET_MAX_SIZE) + 1)):
                    if conn.execute("DELETE FROM subsets WHERE key=? AND assertion_id=?", (key, gone)).rowcount:
                        conn.execute("INSERT OR IGNORE INTO subsets(key, assertion_id) VALUES(?,?)", (key, keep))
            if size >= LSH_MIN_TOKENS:
                for band, value in minhash.bands(tokens):
                    if conn.execute("DELETE FROM lsh WHERE band=? AND hash=? AND assertion_id=?",
                                    (band, value, gone)).rowcount:
                        conn.execute("INSERT OR IGNORE INTO lsh(band, hash, assertion_id) VALUES(?,?,?)",
                                     (band, value, keep))
        conn.execute("UPDATE subsets_recent SET assertion_id=? WHERE assertion_id=?", (keep, gone))
        # The in-memory copy of subsets_recent still names `gone`: read as `keep` until it is read again or
        # settled (reading it back from the table after every merge cost a scan of up to RECENT_ROWS rows).
        self._moved[gone] = keep
        for moved, kept in self._moved.items():
            if kept == gone:
                self._moved[moved] = keep
        for held in (self._cache, self._texts, self._extra):
            held.pop(gone, None)  # type: ignore[attr-defined]
        self._extra.pop(keep, None)
        if self._with_extra is not None:
            self._with_extra.discard(gone)
            self._with_extra.add(keep)

    def links(self, a: Wording, b: Wording) -> bool:
        """Are two wordings one proposition: J >= the threshold and every check `_best` makes?"""
        common = len(a[0] & b[0])
        if not common or common / (len(a[0]) + len(b[0]) - common) < NEAR_DUPLICATE_JACCARD:
            return False
        return _passes(a[0], a[1], a[2], a[3], a[4], b[0], b[1], b[2], b[3], b[4])

    def center(self, group: list[Wording]) -> bool:
        """Does one wording of the group stand within the near-duplicate checks of every other one?"""
        if len(group) > MAX_GROUP:
            return False
        return any(all(i == j or self.links(w, v) for j, v in enumerate(group)) for i, w in enumerate(group))

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
        self._moved.clear()

    def find(self, prop: Proposition, text: str | None = None) -> tuple[int | None, IndexKeys]:
        """The assertion `prop` restates, if any (best Jaccard, then lowest id), and the keys to file
        `prop` under if it becomes a new assertion: the same keys it probes. With the statement's `text`,
        a wording that swaps one word in place of another keeps apart (`normalize.swapped_in_place`)."""
        size = len(prop.tokens)
        self._linked = []
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
        ids = {int(i) for rows in found for i in rows}
        if self._moved:
            ids = {self._moved.get(i, i) for i in ids}
        return self._best(prop, sorted(ids), text), keys

    def find_linked(self, prop: Proposition, text: str) -> tuple[list[int], IndexKeys]:
        """Every assertion one of whose wordings `prop` restates (best Jaccard first, then lowest id), and
        the keys `find` gives. Without wordings taken or merges in the graph, `find`'s answer."""
        best, keys = self.find(prop, text)
        return (list(self._linked) if self._linked else ([best] if best is not None else [])), keys

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

    def _fetch(self, missing: list[int]) -> None:
        cache = self._cache
        for marks, chunk in in_chunks(missing):
            for cid, tokens, slot, value, polarity in self.conn.execute(
                    f"SELECT id, tokens, slot, value, polarity FROM assertions WHERE id IN ({marks})", chunk):
                cache[cid] = (tuple(frozenset(map(intern, tokens.split()))), slot, value, polarity)

    def _best(self, prop: Proposition, ids: list[int], text: str | None = None) -> int | None:
        self._linked = []
        if not ids:
            return None
        cache = self._cache
        missing = [i for i in ids if i not in cache]
        if missing:
            if len(cache) + len(missing) > CACHE_SIZE:
                cache.clear()  # bounded memory; the common candidates come back within a few lookups
                self._texts.clear()
                missing = ids
            self._fetch(missing)
        extras = self._extras_index()
        if extras and text is not None and not extras.isdisjoint(ids):
            return self._best_of_wordings(prop, ids, text)
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
        # Best Jaccard first, then lowest id: the first candidate that passes every check is the answer; the
        # others that pass are kept too (`_linked`: a wording that bridges two assertions links both). Ids
        # come sorted, so a stable sort on the score keeps ties in id order.
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
            self._linked.append(cid)  # every passing candidate, for `find_linked` (a bridge links several)
        return self._linked[0] if self._linked else None

    def _best_of_wordings(self, prop: Proposition, ids: list[int], text: str) -> int | None:
        """`_best` over every wording of each candidate: the candidates one of whose wordings `prop`
        restates, by their best Jaccard, then lowest id (into `_linked`); the first of them."""
        mine = frozenset(map(intern, prop.tokens))
        mine_rest = (prop.slot, prop.value, prop.polarity, text)
        extras = self._extras_index()
        scored: list[tuple[float, int]] = []
        for cid in ids:
            listed, slot, value, polarity = self._cache[cid]
            best = None
            if (score := _jaccard(mine, listed)) >= NEAR_DUPLICATE_JACCARD and _passes(
                    frozenset(listed), slot, value, polarity, lambda cid=cid: self._text(cid), mine, *mine_rest):
                best = score
            if cid in extras:
                for w in self._extras(cid):
                    if (score := _jaccard(mine, w[0])) >= NEAR_DUPLICATE_JACCARD and (best is None or score > best) \
                            and _passes(*w, mine, *mine_rest):
                        best = score
            if best is not None:
                scored.append((best, cid))
        scored.sort(key=lambda sc: (-sc[0], sc[1]))
        self._linked = [cid for _, cid in scored]
        return self._linked[0] if self._linked else None
