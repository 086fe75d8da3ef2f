"""Search over concepts and assertions: every query word counts, one score across both kinds.

Invariant: read-only SQL. A hit's match tier (phrase > near > all terms > partial) always outranks
its text score; within a tier the score is the list's BM25 divided by that list's best, times an
evidence factor in (0, 1], so concept and assertion hits compare on one scale (docs/adr/0008).
Text in scripts written without spaces (CJK, kana, Hangul, Thai) and pictographs (🚀, ✅) are matched by
substring through a trigram index beside the word index; `index_concept`/`index_assertion` keep both in step.
"""

from __future__ import annotations

import enum
import math
import re
import sqlite3
from dataclasses import dataclass, field, replace
from itertools import combinations

from ontology.evidence import Label
from ontology.search_terms import (  # noqa: F401 (search's public API: parse, then search)
    Filters, SearchError, Term, has_boundaryless, needs_substrings, parse_filters, parse_query, script_variants,
    search_key)

# Partial matches try subsets of the query's terms, heaviest first, until the page is full: the six
# heaviest terms, and at most ten subsets (all 3- and 2-term subsets of four terms), so a long
# question with few answers still costs a bounded number of index lookups (~0.2 ms each at 10k notes).
MAX_PARTIAL_TERMS = 6
MAX_PARTIAL_SUBSETS = 10
# A partial hit must contain terms carrying at least 40 % of the query's weight (inverse document
# frequency): "postgres" alone answers "postgres database", "database" alone does not; of two words of
# about equal weight either will do (half, give or take), of three equal ones it takes two.
MIN_PARTIAL_SHARE = 0.4
NEAR_SLACK = 6  # "near": all terms with at most six other words among them (a memory line is short)
DF_CAP = 5000  # document frequency is counted up to here: beyond it a term is common, whatever its count
FETCH_FACTOR = 2  # rows fetched per list and tier: the evidence factor may reorder within a tier
TRIGRAM = 3  # FTS5's trigram tokenizer needs three characters to use its index; shorter terms scan


class Match(enum.Enum):
    """How a hit relates to the query, best first."""
    PHRASE = "phrase"  # every term, adjacent and in order
    NEAR = "near"  # every term, within NEAR_SLACK words
    ALL = "all"  # every term
    PARTIAL = "partial"  # terms carrying at least MIN_PARTIAL_SHARE of the query's weight


_TIER = {Match.PHRASE: 3, Match.NEAR: 2, Match.ALL: 1, Match.PARTIAL: 0}


class HitKind(enum.Enum):
    CONCEPT = "concept"
    ASSERTION = "assertion"


@dataclass(frozen=True)
class Hit:
    kind: HitKind
    concept: str
    text: str
    match: Match
    matched: int  # query terms this hit contains
    terms: int  # query terms in all
    score: float  # tier + relevance in (0, 1]; comparable across kinds
    id: int | None = None
    status: str | None = None
    belief: float | None = None
    n_for: int | None = None
    n_against: int | None = None
    updated_at: str | None = None

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"kind": self.kind.value, "concept": self.concept, "text": self.text,
                                   "match": self.match.value, "matched": self.matched, "terms": self.terms,
                                   "score": round(self.score, 6)}
        if self.kind is HitKind.ASSERTION:
            data.update(id=self.id, status=self.status, belief=self.belief, n_for=self.n_for,
                        n_against=self.n_against, updated_at=self.updated_at)
        return data


# -- index maintenance (called by the writer, inside its transaction) -------------------------------

def index_concept(conn: sqlite3.Connection, concept_id: int, fields: tuple[str, str, str, str],
                  *, replace: bool) -> None:
    """(key, name, title, description) into the word index, and into the trigram index when any of
    it is in a script without spaces or holds a pictograph."""
    if replace:
        conn.execute("DELETE FROM concepts_fts WHERE rowid=?", (concept_id,))
        conn.execute("DELETE FROM concepts_cjk WHERE rowid=?", (concept_id,))
    fields = tuple(_indexed(f) for f in fields)
    conn.execute("INSERT INTO concepts_fts(rowid, key, name, title, description) VALUES(?,?,?,?,?)",
                 (concept_id, *fields))
    text = "\n".join(dict.fromkeys(f for f in fields if f))  # name often repeats the key
    if needs_substrings(text):
        conn.execute("INSERT INTO concepts_cjk(rowid, text) VALUES(?,?)", (concept_id, text))


def _indexed(text: str) -> str:
    """The text as the indexes hold it: the search key queries are read in (search_terms.search_key:
    NFKC and ASCII digits), so full-width `ｍａｋｅ` is found by "make", a decomposed (NFD) "Việt" by a
    composed one and "۲۰۲۶" by "2026". Shown text is the author's: hits read it from the assertion or
    concept, never from the index."""
    return search_key(text)


def index_assertion(conn: sqlite3.Connection, assertion_id: int, text: str, *, replace: bool) -> None:
    if replace:
        conn.execute("DELETE FROM assertions_fts WHERE rowid=?", (assertion_id,))
        conn.execute("DELETE FROM assertions_cjk WHERE rowid=?", (assertion_id,))
    text = _indexed(text)
    conn.execute("INSERT INTO assertions_fts(rowid, text) VALUES(?,?)", (assertion_id, text))
    if needs_substrings(text):
        conn.execute("INSERT INTO assertions_cjk(rowid, text) VALUES(?,?)", (assertion_id, text))


# -- the two lists --------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Row:
    kind: HitKind
    id: int
    concept: str
    text: str
    raw: float  # relevance within its list and query, higher is better
    status: str | None = None
    belief: float | None = None
    n_for: int | None = None
    n_against: int | None = None
    updated_at: str | None = None
    scale: str = ""  # the index that scored it: BM25 is comparable only within one


@dataclass(frozen=True)
class _List:
    kind: HitKind
    words: str  # the FTS5 word table
    trigrams: str  # the FTS5 trigram table
    columns: str
    joins: str
    bm25_weights: str
    text_of: str  # the word table's text as one SQL expression ({t}: the table), for a pictograph's LIKE

    def where(self, filters: Filters) -> tuple[str, list[object]]:
        sql, params = "", []
        if self.kind is HitKind.ASSERTION and filters.status:
            sql += f" AND a.status IN ({','.join('?' * len(filters.status))})"
            params += sorted(label.value for label in filters.status)
        if filters.concept:
            sql += " AND c.key = ?"
            params.append(filters.concept)
        if filters.since:
            sql += f" AND {'a' if self.kind is HitKind.ASSERTION else 'c'}.updated_at >= ?"
            params.append(filters.since)
        return sql, params

    def fetch(self, conn: sqlite3.Connection, terms: tuple[Term, ...], tier: Match, filters: Filters,
              limit: int, *, trigrams: bool = False, marks: tuple[Term, ...] = ()) -> list[_Row]:
        """Rows matching `terms` the way `tier` asks, best first; from the trigram index when a term
        is CJK or `trigrams` says so (every term then a substring). `marks` (pictographs) must also be
        in a word-index row's text, as substrings."""
        where, params = self.where(filters)
        if trigrams or any(t.cjk for t in terms):
            long = [t for t in terms if len(t.literal) >= TRIGRAM]
            short = [t for t in terms if len(t.literal) < TRIGRAM]
            table = self.trigrams
            clauses = [f"{table}.text LIKE ? ESCAPE '\\'" for _ in short]
            args: list[object] = [_like(t.literal) for t in short]
            if long:
                clauses.insert(0, f"{table} MATCH ?")
                args.insert(0, " AND ".join(t.substring for t in long))
                score = f"-bm25({table})"
            else:  # no term long enough to rank by: the shorter text is the more focused one
                score = f"1.0 / length({table}.text)"
        else:
            table = self.words
            clauses, args = [f"{table} MATCH ?"], [_expression(terms, tier)]
            clauses += [f"{self.text_of.format(t=table)} LIKE ? ESCAPE '\\'" for _ in marks]
            args += [_like(m.literal) for m in marks]
            score = f"-bm25({table}{self.bm25_weights})"
        sql = (f"SELECT {self.columns}, {score} AS raw FROM {table} {self.joins.format(t=table)} "
               f"WHERE {' AND '.join(clauses)}{where} ORDER BY raw DESC LIMIT ?")
        return [_Row(self.kind, row[0], row[1], row[2], row[-1], *row[3:-1], scale=table)
                for row in conn.execute(sql, [*args, *params, limit])]

    def document_frequency(self, conn: sqlite3.Connection, term: Term) -> int:
        """Rows holding `term`, counted up to DF_CAP."""
        if term.cjk and len(term.literal) < TRIGRAM:
            sql, arg = f"SELECT 1 FROM {self.trigrams} WHERE text LIKE ? ESCAPE '\\'", _like(term.literal)
        elif term.cjk:
            sql, arg = f"SELECT 1 FROM {self.trigrams} WHERE {self.trigrams} MATCH ?", term.substring
        else:
            sql, arg = f"SELECT 1 FROM {self.words} WHERE {self.words} MATCH ?", term.fts
        return conn.execute(f"SELECT count(*) FROM ({sql} LIMIT {DF_CAP})", (arg,)).fetchone()[0]


_CONCEPTS = _List(
    HitKind.CONCEPT, "concepts_fts", "concepts_cjk",
    "c.id, c.key, coalesce(c.description, c.title, c.key)",
    "JOIN concepts c ON c.id = {t}.rowid",
    # key, name and title name the concept; the description is a sentence about it.
    ", 2.0, 2.0, 2.0, 1.0",
    "(coalesce({t}.name, '') || ' ' || coalesce({t}.title, '') || ' ' || coalesce({t}.description, ''))")
_ASSERTIONS = _List(
    HitKind.ASSERTION, "assertions_fts", "assertions_cjk",
    "a.id, c.key, a.text, a.status, a.belief, a.n_for, a.n_against, a.updated_at",
    "JOIN assertions a ON a.id = {t}.rowid JOIN concepts c ON c.id = a.concept_id",
    "", "{t}.text")


def _like(literal: str) -> str:
    return "%" + re.sub(r"([%_\\])", r"\\\1", literal) + "%"


def _expression(terms: tuple[Term, ...], tier: Match) -> str:
    if tier is Match.PHRASE:
        return '"' + " ".join(tok for t in terms for tok in t.tokens) + '"'
    if tier is Match.NEAR:
        return f"NEAR({' '.join(t.fts for t in terms)}, {NEAR_SLACK})"
    return " AND ".join(t.fts for t in terms)


# -- ranking --------------------------------------------------------------------------------------

# Evidence at equal relevance: an agent should meet what is disputed or confirmed before a claim that
# every source has since withdrawn. Single-source claims (most of a memory folder) and concepts sit
# just below the grounded ones, so relevance still decides between them.
GROUNDED = 1.0
SINGLE = 0.9
WITHDRAWN = 0.5


def evidence_factor(row: _Row) -> float:
    if row.kind is HitKind.CONCEPT:
        return SINGLE
    if not row.n_for and not row.n_against:
        return WITHDRAWN  # no source holds it any more
    if row.status in (Label.CONTESTED.value, Label.CONTRADICTORY.value, Label.AFFIRMATIVE.value):
        return GROUNDED
    return SINGLE


@dataclass
class _Found:
    row: _Row
    match: Match
    matched: int
    share: float = 1.0  # weight share of the terms it contains (partial hits)


@dataclass
class _Collector:
    lists: tuple[_List, ...]
    found: dict[tuple[HitKind, int], _Found] = field(default_factory=dict)

    def count(self, kind: HitKind) -> int:
        return sum(1 for key in self.found if key[0] is kind)

    def add(self, rows: list[_Row], match: Match, matched: int, share: float = 1.0) -> None:
        for row in rows:
            self.found.setdefault((row.kind, row.id), _Found(row, match, matched, share))


def search(conn: sqlite3.Connection, text: str, *, limit: int = 20, filters: Filters = Filters()) -> list[Hit]:
    """The page of hits for `text`, best first (see the module docstring for the order)."""
    terms = parse_query(text)
    if not terms or limit < 1:
        return []
    if filters.concept and conn.execute("SELECT 1 FROM concepts WHERE key=?", (filters.concept,)).fetchone() is None:
        # `architecture` for `Architecture.md`: the one file whose key folds to it (ADR 0005, "Session 14 (case14)")
        held = conn.execute("SELECT c.key FROM case_keys f JOIN concepts c ON c.key = f.key WHERE f.fold=? LIMIT 2",
                            (filters.concept,)).fetchall()
        if len(held) != 1:
            raise SearchError(f"no concept {filters.concept!r}")
        filters = replace(filters, concept=held[0][0])
    lists = (_ASSERTIONS,) if filters.status else (_CONCEPTS, _ASSERTIONS)
    found = _Collector(lists)
    for variant in script_variants(text):  # the query as written first: its hits keep their tier
        if variant_terms := (terms if variant == text else parse_query(variant)):
            _collect(conn, variant_terms, filters, limit, found)
    return _rank(found, len(terms))[:limit]


def _collect(conn: sqlite3.Connection, terms: tuple[Term, ...], filters: Filters, limit: int,
             found: _Collector) -> None:
    """The hits of one form of the query, tier by tier, into `found` (a row found before keeps its tier)."""
    lists = found.lists
    marks = tuple(t for t in terms if t.pictograph)
    words = tuple(t for t in terms if not t.pictograph)
    if marks and words and not any(t.cjk for t in words):
        # "✅ migrations": the words are read as words (stems, folded accents, phrase and near tiers) and
        # the emoji must be in the row too; the substring pass below would miss "migration" (ADR 0008).
        for tier in ([Match.PHRASE, Match.NEAR, Match.ALL] if len(words) > 1 else [Match.ALL]):
            for lst in lists:
                fetched = lst.fetch(conn, words, tier, filters, FETCH_FACTOR * limit + found.count(lst.kind),
                                    marks=marks)
                found.add(fetched, tier, len(terms))
    tiers = [Match.ALL]
    if len(terms) > 1 and not any(t.cjk for t in terms):
        tiers = [Match.PHRASE, Match.NEAR, Match.ALL]
    for tier in tiers:
        for lst in lists:
            fetched = lst.fetch(conn, terms, tier, filters, FETCH_FACTOR * limit + found.count(lst.kind))
            found.add(fetched, tier, len(terms))
    if not any(t.cjk for t in terms) and all(len(t.literal) >= TRIGRAM for t in terms):
        # Latin words glued to CJK text ("Redisの設定", "PowerShell로") are one token to the word
        # index: the trigram index finds them as substrings of those rows.
        for lst in lists:
            found.add(lst.fetch(conn, terms, Match.ALL, filters, limit, trigrams=True), Match.ALL, len(terms))
    if len(terms) > 1:
        _partial(conn, terms, filters, limit, found)


def _partial(conn: sqlite3.Connection, terms: tuple[Term, ...], filters: Filters, limit: int,
             found: _Collector) -> None:
    """Fill the page up to `limit` with hits on subsets of the terms, heaviest subset first."""
    if len(found.found) >= limit:
        return
    weights = _weights(conn, terms)
    total = sum(weights.values())
    ranked = sorted(terms, key=lambda t: -weights[t])[:MAX_PARTIAL_TERMS]
    subsets = [s for size in range(len(ranked) - 1, 0, -1) for s in combinations(ranked, size)
               if sum(weights[t] for t in s) >= MIN_PARTIAL_SHARE * total]
    for subset in sorted(subsets, key=lambda s: -sum(weights[t] for t in s))[:MAX_PARTIAL_SUBSETS]:
        share = sum(weights[t] for t in subset) / total
        for lst in found.lists:
            # Rows found before come back too: ask for enough to leave `limit` new ones.
            fetched = lst.fetch(conn, subset, Match.ALL, filters, limit + found.count(lst.kind))
            found.add(fetched, Match.PARTIAL, len(subset), share)
        if len(found.found) >= limit:
            return


def _weights(conn: sqlite3.Connection, terms: tuple[Term, ...]) -> dict[Term, float]:
    """Inverse document frequency of each term over concepts and assertions together."""
    n = sum(conn.execute(f"SELECT coalesce(max(id), 0) FROM {t}").fetchone()[0] for t in ("concepts", "assertions"))
    out = {}
    for term in terms:
        df = sum(lst.document_frequency(conn, term) for lst in (_CONCEPTS, _ASSERTIONS))
        out[term] = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return out


def _rank(found: _Collector, n_terms: int) -> list[Hit]:
    """Normalize each list's text score to its best within the tier, weigh by evidence, order."""
    best: dict[tuple[HitKind, Match, str], float] = {}
    for f in found.found.values():
        key = (f.row.kind, f.match, f.row.scale)
        best[key] = max(best.get(key, 0.0), f.row.raw)
    hits = []
    said = {(f.row.concept, f.row.text) for f in found.found.values() if f.row.kind is HitKind.ASSERTION}
    for f in found.found.values():
        if f.row.kind is HitKind.CONCEPT and (f.row.concept, f.row.text) in said:
            continue  # a description is also its concept's first assertion: one hit, the labelled one
        top = best[(f.row.kind, f.match, f.row.scale)]
        relevance = (f.row.raw / top if top > 0 else 1.0) * evidence_factor(f.row)
        score = _TIER[f.match] + relevance if f.match is not Match.PARTIAL else f.share * relevance
        r = f.row
        hits.append(Hit(r.kind, r.concept, r.text, f.match, f.matched, n_terms, score, r.id if r.kind is
                        HitKind.ASSERTION else None, r.status, r.belief, r.n_for, r.n_against, r.updated_at))
    hits.sort(key=lambda h: (-h.score, h.kind is HitKind.ASSERTION, h.concept, h.text))
    return hits
