"""Ingest throughput over two corpus shapes, at sizes up to 100k, with per-artifact cost ratios.

Run: .venv/bin/python -m bench.ingest [--corpus zipf,repetitive] [--sizes 1000,5000,20000,100000]
     [--modes bulk,single,post] [--long-share 0.3] [--small-repeats 5]
`bulk` is `Ontology.ingest_many` (`kgbridge ingest DIR`, a watcher burst), `single` one
`Ontology.ingest` call per artifact (what one POST /ingest does inside the server), `post` one real
POST /ingest per artifact from one client to a real `kgbridge serve` (bench.server). Each size runs in
a fresh child process (so its peak RSS is its own) started by one parent: ratios compare like with
like on a noisy machine; sizes up to 5k run several times, half before and half after the larger
sizes, and report their median, since every ratio divides by them. CPU time (user + system of the ingesting process: for `post`, the server's)
is reported beside wall time: on a shared machine it is the steadier measure of the work done per
artifact (it leaves out waits on fsync and on other processes).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ontology.artifact import Channel
from ontology.ingest import Ontology

# Real notes draw on a vocabulary of thousands of words; a few dozen would make every sentence a
# near-duplicate candidate of every other. 600 generated words with a Zipf-like pick is closer.
_SYLLABLES = "ka lo mi ra te su no vi pe da zo ri".split()
WORDS = sorted({a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in _SYLLABLES[:5]})[:600]
random.Random(1).shuffle(WORDS)
_ZIPF = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(WORDS))))  # Zipf, s = 1
NEGATED_SHARE = 0.15  # of statements, as in real notes ("never", "don't")
# The repetitive shape (issue 15): a project's memory restates the same few hundred facts session
# after session, and `key: value` slots collect rival values over time.
REPEATED_STATEMENTS = 600
SLOTS, RIVALS_PER_SLOT = 300, 4
FACT_SHARE = 0.25  # of bullets that are a `key: value` slot fact
REVISED_SHARE = 0.10  # of memory files that are a new version of an earlier one (replaces its stances)


def _word(rng: random.Random) -> str:
    return rng.choices(WORDS, cum_weights=_ZIPF)[0]


def _sentence(words: list[str], rng: random.Random) -> str:
    neg = "Never " if rng.random() < NEGATED_SHARE else ""
    return f"{neg}{words[0]} the {words[1]} before the {' '.join(words[2:])}"


def _file(i: int, bullets: list[str], rng: random.Random, *, memory_name: int | None = None) -> tuple[str, bytes]:
    """A ledger entry (every third artifact) or a memory file carrying `bullets`."""
    if memory_name is None:
        body = "Key decisions:\n" + "\n".join(f"- {b}" for b in bullets)
        data = f"---\nsession: s{i}\nepoch: 1\ntimestamp: 2026-04-05T14:45:00Z\nphase: progress\n---\n{body}\n"
        return f"2026-04-05T1445Z_e{i:06d}.md", data.encode()
    body = "\n".join(f"- {b}" for b in bullets)
    description = _sentence([_word(rng) for _ in range(5)], rng)
    data = f"---\nname: note-{memory_name}\ndescription: {description}\ntype: project\n---\n{body}\n"
    return f"note-{memory_name}.md", data.encode()


def zipf_corpus(size: int, rng: random.Random, long_share: float = 0.0) -> list[tuple[str, bytes]]:
    """Memory files and ledger entries whose statements have 5 content words drawn from the Zipf
    vocabulary (rarely the same proposition twice); `long_share` get 4 more words (LSH path). One
    `key: value` fact per ledger entry: uniform subjects, Zipf values."""
    def sentence() -> str:
        return _sentence([_word(rng) for _ in range(9 if long_share and rng.random() < long_share else 5)], rng)

    out = []
    for i in range(size):
        if i % 3 == 2:
            out.append(_file(i, [sentence() for _ in range(4)] + [f"{rng.choice(WORDS)}: {_word(rng)}"], rng))
        else:
            out.append(_file(i, [sentence() for _ in range(4)], rng, memory_name=i))
    return out


def repetitive_corpus(size: int, rng: random.Random) -> list[tuple[str, bytes]]:
    """The same 600 statements restated across all files (15 % negated) and 300 `key: value` slots
    with 4 rival values each; 3-6 bullets per file; 10 % of memory files revise an earlier one."""
    shapes = random.Random(3)
    statements = [[shapes.choice(WORDS) for _ in range(5)] for _ in range(REPEATED_STATEMENTS)]
    keys = shapes.sample(WORDS, SLOTS)
    values = {key: shapes.sample(WORDS, RIVALS_PER_SLOT) for key in keys}

    def bullet() -> str:
        if rng.random() < FACT_SHARE:
            key = rng.choice(keys)
            return f"{key}: {rng.choice(values[key])}"
        return _sentence(rng.choice(statements), rng)

    out, names = [], []
    for i in range(size):
        bullets = [bullet() for _ in range(rng.randint(3, 6))]
        if i % 3 == 2:
            out.append(_file(i, bullets, rng))
            continue
        name = rng.choice(names) if names and rng.random() < REVISED_SHARE else i
        names.append(name)
        out.append(_file(i, bullets, rng, memory_name=name))
    return out


def corpus(kind: str, size: int, long_share: float, seed: int = 7) -> list[tuple[str, bytes]]:
    rng = random.Random(seed)
    if kind == "zipf":
        return zipf_corpus(size, rng, long_share)
    if kind == "repetitive":
        return repetitive_corpus(size, rng)
    raise ValueError(f"unknown corpus {kind!r}")


def run(kind: str, size: int, mode: str, long_share: float) -> dict[str, float]:
    """One measurement in this process: wall time of the ingest and the process's peak RSS."""
    if mode == "post":
        from bench.server import single_posts  # it imports this module's corpora

        figures = single_posts(kind, size)
        return {"elapsed": figures["elapsed"], "cpu": figures["server_cpu"], "client_cpu": figures["client_cpu"],
                "loop_cpu": figures["loop_cpu"], "peak_rss_mb": figures["peak_rss_mb"]}
    artifacts = corpus(kind, size, long_share)
    with tempfile.TemporaryDirectory() as tmp:
        onto = Ontology(Path(tmp), "bench", create=True)
        cpu_start = _cpu_seconds()
        start = time.perf_counter()
        if mode == "bulk":
            onto.ingest_many((name, data, Channel.CLI) for name, data in artifacts)
        elif mode == "single":
            for name, data in artifacts:
                onto.ingest(name, data, Channel.CLI)
        else:
            raise ValueError(f"unknown mode {mode!r}")
        elapsed = time.perf_counter() - start
        cpu = _cpu_seconds() - cpu_start
        onto.close()
    return {"elapsed": elapsed, "cpu": cpu, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


# A run this small takes 1-3 s, so a scheduling hiccup or a cold cache moves it by a third (1k runs of
# one tree measured 1.24-1.78 ms/artifact minutes apart): it is the denominator of every cost ratio,
# so it is run several times and its median taken. Half of its runs come before the larger sizes and
# half after them: the machine's speed drifts over the minutes a 20k or 100k run takes (the five-run
# median of one tree moved 1.33 -> 2.13 ms between invocations), and a denominator sampled only
# before the numerator measured that drift as growth, in either direction.
SMALL_RUN = 5_000


def _child(kind: str, size: int, mode: str, long_share: float) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-m", "bench.ingest", "--child", f"{kind},{size},{mode}",
                          "--long-share", str(long_share)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _median(kind: str, size: int, mode: str, runs: list[dict[str, float]]) -> dict[str, float]:
    """The figures of the run with the median CPU time (the runs are listed in the order they ran)."""
    if len(runs) > 1:
        print(f"{kind:>10} {mode:>6} {size:>6} artifacts, {len(runs)} runs: CPU ms/artifact "
              + ", ".join(f"{figures['cpu'] / size * 1000:.3f}" for figures in runs) + "; the median is used",
              flush=True)
    return sorted(runs, key=lambda figures: figures["cpu"])[len(runs) // 2]


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="zipf,repetitive")
    parser.add_argument("--sizes", default="1000,5000,20000")
    parser.add_argument("--modes", default="bulk,single")
    parser.add_argument("--long-share", type=float, default=0.0,
                        help="share of 9-word statements in the zipf corpus (0.3 exercises the LSH path)")
    parser.add_argument("--small-repeats", type=int, default=5,
                        help=f"runs of each size up to {SMALL_RUN} (the median is used: ratios divide by it)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # corpus,size,mode: one run, JSON out
    args = parser.parse_args()
    if args.child:
        kind, size, mode = args.child.split(",")
        print(json.dumps(run(kind, int(size), mode, args.long_share)))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    for kind, mode in itertools.product(args.corpus.split(","), args.modes.split(",")):
        per_artifact: dict[int, float] = {}
        cpu_per_artifact: dict[int, float] = {}
        runs: dict[int, list[dict[str, float]]] = {size: [] for size in sizes}
        large = any(size > SMALL_RUN for size in sizes)
        repeats = {size: max(args.small_repeats, 1) if size <= SMALL_RUN else 1 for size in sizes}
        after = {size: repeats[size] // 2 if large and size <= SMALL_RUN else 0 for size in sizes}
        for size in sizes:  # the larger sizes between the two halves of the small ones' runs
            runs[size] += [_child(kind, size, mode, args.long_share) for _ in range(repeats[size] - after[size])]
        for size in sizes:
            runs[size] += [_child(kind, size, mode, args.long_share) for _ in range(after[size])]
        for size in sizes:
            figures = _median(kind, size, mode, runs[size])
            per_artifact[size] = figures["elapsed"] / size
            cpu_per_artifact[size] = figures["cpu"] / size
            client = (f"  client CPU {figures['client_cpu'] / size * 1000:6.3f} ms, server + client "
                      f"{size / (figures['cpu'] + figures['client_cpu']):7.1f}/s, server's event loop "
                      f"{figures['loop_cpu'] / size * 1000:6.3f} ms") if "client_cpu" in figures else ""
            print(f"{kind:>10} {mode:>6} {size:>6} artifacts: {figures['elapsed']:7.2f} s  "
                  f"{size / figures['elapsed']:7.1f}/s  {per_artifact[size] * 1000:6.3f} ms/artifact  "
                  f"(CPU {cpu_per_artifact[size] * 1000:6.3f} ms, {size / figures['cpu']:7.1f}/s)  "
                  f"peak RSS {figures['peak_rss_mb']:5.0f} MB{client}  load {os.getloadavg()[0]:.1f}", flush=True)
        for size in sizes[1:]:
            print(f"{kind:>10} {mode:>6} cost per artifact {size} / {sizes[0]}: wall "
                  f"{per_artifact[size] / per_artifact[sizes[0]]:.2f}, CPU "
                  f"{cpu_per_artifact[size] / cpu_per_artifact[sizes[0]]:.2f}", flush=True)


if __name__ == "__main__":
    main()
