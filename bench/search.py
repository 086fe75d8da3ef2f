"""Search quality and speed on synthetic memory notes with a judged query set (issue 18).

Run: .venv/bin/python -m bench.search [--sizes 1000,10000] [--shape mixed|repetitive|both]
Per size and shape, averaged over the judged queries: precision@10 (relevant hits among the first
min(10, R) hits, R = relevant items: slots beyond R can only hold something else), the on-topic share
of everything the first page shows, recall (relevant items within the first 50 hits, over min(R, 50))
and median latency, for `ontology.search` and for the search main had before issue 18 (`_legacy`, kept
as the baseline that recall and precision are compared with).
"""

from __future__ import annotations

import argparse
import itertools
import random
import sqlite3
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ontology import search
from ontology.artifact import Channel
from ontology.ingest import Ontology

PAGE = 10
RECALL_DEPTH = 50  # the most kg_search returns in one call
RUNS = 5  # timed runs per query; the median of each query's runs, then the median over queries

_SYLLABLES = "ka lo mi ra te su no vi pe da zo ri".split()
FILLER = sorted({a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in _SYLLABLES[:6]})[:800]
random.Random(3).shuffle(FILLER)
_ZIPF = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(FILLER))))
_CJK_FILLER = "設定 配置 温度 接続 手順 画面 記録 更新 変更 確認 测试 环境 部署 日志 文件 계정 설정 확인 기록 화면".split()


@dataclass
class Query:
    text: str
    kind: str  # claim, fact, rare, question, cjk
    planted: list[str]  # sentences that answer it; each note gets one, made unique by a suffix
    count: int  # notes planted with one of them
    needles: tuple[str, ...] = ()  # repetitive shape: a generated line holding all of these is relevant
    relevant: set[str] = field(default_factory=set)  # the exact texts that answer it


# The judged set: what an agent or a person asks of a project's memory.
QUERIES = [
    Query("run migrations before deploy", "claim", ["Run the migrations before every deploy of {s}",
          "Always run migrations before you deploy {s}", "Deploy {s} only after the migrations run"], 12),
    Query("flaky integration tests", "claim", ["The integration tests of {s} are flaky on CI",
          "Quarantine flaky integration tests in {s}"], 12),
    Query("feature flags cleanup", "claim", ["Feature flags in {s} need a cleanup each quarter",
          "Cleanup of stale feature flags for {s} is overdue"], 12),
    Query("cache backend", "fact", ["cache backend: redis ({s})", "cache backend: memcached ({s})",
          "The cache backend of {s} is redis"], 12),
    Query("node version", "fact", ["node version: 20 ({s})", "node version: 18 ({s})"], 12),
    Query("deploy target", "fact", ["deploy target: fly ({s})", "deploy target: kubernetes ({s})"], 12),
    Query("zanzibar", "rare", ["The zanzibar resolver caches tuples for {s}"], 2),
    Query("quokka", "rare", ["quokka is the codename of {s}"], 1),
    Query("tessellate", "rare", ["We tessellate the map tiles of {s} at zoom 14"], 3),
    Query("kerberos", "rare", ["Kerberos tickets for {s} expire after 10 hours"], 2),
    Query("how do we rotate the api keys", "question", ["Rotate the API keys of {s} every 90 days",
          "API keys for {s} rotate through the vault job"], 6),
    Query("where are the backups stored", "question", ["Backups of {s} are stored in the cold bucket",
          "{s} backups stored offsite weekly"], 6),
    Query("why did the build fail on arm", "question", ["The build of {s} fails on arm because of the linker",
          "Arm build failures in {s} come from the old toolchain"], 8),
    Query("which port does the admin server use", "question", [
          "The admin server of {s} listens on port 8081", "Use port 9090 for the admin server of {s}"], 8),
    Query("シリコーン", "cjk", ["{s}のシリコーン型は硬度40", "シリコーンは{s}で使う"], 5),
    Query("数据库", "cjk", ["{s}的数据库是 postgres", "数据库备份 {s} 每天一次"], 5),
    Query("배포", "cjk", ["{s} 배포는 금요일에 하지 않는다 2026", "배포 전에 {s} 테스트 1회"], 5),
    Query("Redis 設定", "cjk", ["{s}のRedis設定はmaxmemory 2gb", "Redis の設定を {s} で変更 3"], 4),
    # Status logs that repeat the same words with other services and environments (shape "repetitive").
    Query("svc3 deployed to staging", "repetitive", [], 0, ("Deployed svc3 to staging ",)),
    Query("status of svc5", "repetitive", [], 0, ("Status of svc5:",)),
    Query("tests passed on canary for svc1", "repetitive", [], 0, ("Tests passed on canary for svc1",)),
]
_TOPIC_WORDS = sorted({w for q in QUERIES if q.kind in ("claim", "fact", "question")
                       for w in q.text.split() if len(w) > 3})


def _filler(rng: random.Random, topical: float) -> str:
    """A line of filler words; `topical` of them are short and hold one word of some query, as a
    note's "Deploy: done" or "Backups ok" does (what makes an any-word search noisy)."""
    if rng.random() < topical:
        words = [rng.choices(FILLER, cum_weights=_ZIPF)[0] for _ in range(rng.randint(1, 4))]
        words.insert(rng.randrange(len(words) + 1), rng.choice(_TOPIC_WORDS))
    else:
        words = [rng.choices(FILLER, cum_weights=_ZIPF)[0] for _ in range(rng.randint(5, 9))]
    return " ".join(words).capitalize()


def _cjk_filler(rng: random.Random) -> str:
    return "".join(rng.sample(_CJK_FILLER, 3)) + str(rng.randint(1, 99))


def corpus(size: int, shape: str, seed: int = 11) -> tuple[list[tuple[str, bytes]], list[Query]]:
    """`size` notes; 'repetitive' notes share most of their lines (status logs of a few services)."""
    rng = random.Random(seed)
    queries = [Query(q.text, q.kind, q.planted, q.count, q.needles) for q in QUERIES]
    plants: dict[int, list[str]] = {}
    slots = rng.sample(range(size), sum(q.count for q in queries))
    for q in queries:
        for n in range(q.count):
            note = slots.pop()
            text = q.planted[n % len(q.planted)].format(s=f"svc{note}")
            q.relevant.add(text)
            plants.setdefault(note, []).append(text)
    services = [f"svc{i}" for i in range(8)]
    out = []
    for i in range(size):
        if shape == "repetitive":
            svc, env = rng.choice(services), rng.choice(["staging", "production", "canary"])
            lines = [f"Deployed {svc} to {env} build {rng.randint(1, 400)}", f"Status of {svc}: green",
                     f"Tests passed on {env} for {svc}", _filler(rng, 0.3)]
            for q in queries:
                q.relevant.update(line for line in lines if q.needles and all(n in line for n in q.needles))
        else:
            lines = [_filler(rng, 0.25) for _ in range(4)]
        if rng.random() < 0.05:
            lines.append(_cjk_filler(rng))
        lines += plants.get(i, [])
        body = "\n".join(f"- {line}" for line in lines)
        if i % 3 == 2:
            data = (f"---\nsession: s{i}\nepoch: 1\ntimestamp: 2026-04-05T14:45:00Z\nphase: progress\n---\n"
                    f"Key decisions:\n{body}\n")
            out.append((f"2026-04-05T1445Z_e{i:06d}.md", data.encode()))
        else:
            data = f"---\nname: note-{i}\ndescription: {_filler(rng, 0.1)}\ntype: project\n---\n{body}\n"
            out.append((f"note-{i}.md", data.encode()))
    return out, queries


def _legacy(conn: sqlite3.Connection, q: str, limit: int) -> list[str]:
    """The search main had before issue 18: any word matches, two BM25 scales merged as if one."""
    import re
    words = re.findall(r"\w+", q.lower())[:16]
    query = " OR ".join(f'"{w}"' for w in words)
    if not query:
        return []
    hits = [(-r[1], r[0]) for r in conn.execute(
        "SELECT coalesce(c.description, c.title, c.key), bm25(concepts_fts) s FROM concepts_fts JOIN concepts c "
        "ON c.id = concepts_fts.rowid WHERE concepts_fts MATCH ? ORDER BY s LIMIT ?", (query, limit))]
    hits += [(-r[1], r[0]) for r in conn.execute(
        "SELECT a.text, bm25(assertions_fts) s FROM assertions_fts JOIN assertions a ON a.id = assertions_fts.rowid "
        "WHERE assertions_fts MATCH ? ORDER BY s LIMIT ?", (query, limit))]
    hits.sort(key=lambda h: -h[0])
    return [text for _, text in hits[:limit]]


def _current(conn: sqlite3.Connection, q: str, limit: int) -> list[str]:
    return [h.text for h in search.search(conn, q, limit=limit)]


def measure(conn: sqlite3.Connection, queries: list[Query], fn) -> dict[str, object]:
    present = {t for (t,) in conn.execute("SELECT text FROM assertions UNION SELECT description FROM concepts")}
    precision, on_topic, recall, latency, by_kind = [], [], [], [], {}
    for q in queries:
        page = fn(conn, q.text, PAGE)
        deep = fn(conn, q.text, RECALL_DEPTH)
        relevant = q.relevant & present
        if not relevant:
            continue  # a query of the other shape
        judged = min(PAGE, len(relevant))  # slots the relevant items could fill
        p = sum(t in relevant for t in page[:judged]) / judged
        shown = sum(t in relevant for t in page) / len(page) if page else 0.0
        r = len(relevant & set(deep)) / min(len(relevant), RECALL_DEPTH)
        precision.append(p)
        on_topic.append(shown)
        recall.append(r)
        by_kind.setdefault(q.kind, []).append(p)
        runs = []
        for _ in range(RUNS):
            start = time.perf_counter()
            fn(conn, q.text, PAGE)
            runs.append(time.perf_counter() - start)
        latency.append(statistics.median(runs))
    return {"precision": statistics.mean(precision), "on_topic": statistics.mean(on_topic),
            "recall": statistics.mean(recall),
            "median_ms": statistics.median(latency) * 1000, "max_ms": max(latency) * 1000,
            "by_kind": {k: statistics.mean(v) for k, v in by_kind.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--shape", default="both", choices=["mixed", "repetitive", "both"])
    parser.add_argument("--verbose", action="store_true", help="print each query's first page")
    args = parser.parse_args()
    shapes = ["mixed", "repetitive"] if args.shape == "both" else [args.shape]
    for shape in shapes:
        for size in (int(s) for s in args.sizes.split(",")):
            notes, queries = corpus(size, shape)
            with tempfile.TemporaryDirectory() as tmp:
                onto = Ontology(Path(tmp), "bench", create=True)
                onto.ingest_many((name, data, Channel.CLI) for name, data in notes)
                with onto.reader() as conn:
                    for name, fn in (("before", _legacy), ("now", _current)):
                        m = measure(conn, queries, fn)
                        kinds = " ".join(f"{k} {v:.0%}" for k, v in m["by_kind"].items())
                        print(f"{shape:>10} {size:>6} {name:>6}: precision@{PAGE} {m['precision']:.0%}  "
                              f"on-topic share of the page {m['on_topic']:.0%}  "
                              f"recall@{RECALL_DEPTH} {m['recall']:.0%}  median {m['median_ms']:.2f} ms  "
                              f"max {m['max_ms']:.2f} ms  [{kinds}]", flush=True)
                    if args.verbose:
                        for q in (q for q in queries if q.relevant):
                            print(f"  {q.text!r}")
                            for h in search.search(conn, q.text, limit=PAGE):
                                mark = "+" if h.text in q.relevant else "-"
                                print(f"    {mark} {h.match.value:>7} {h.score:.2f} {h.kind.value[:4]} {h.text[:70]}")
                onto.close()


if __name__ == "__main__":
    main()
