"""Ingest throughput at 1k, 5k and 20k synthetic artifacts, and how per-artifact cost grows.

Run: .venv/bin/python -m bench.ingest [--sizes 1000,5000,20000] [--modes bulk,single] [--long-share 0.3]
Reports artifacts/s per size and cost(20k)/cost(1k) per artifact (target: >= 500/s, ratio <= 1.5)
for two ways in: `bulk` is `Ontology.ingest_many` (what `kgbridge ingest DIR` and a watcher burst
do: one transaction per batch), `single` is one `Ontology.ingest` call per artifact (what one
POST /ingest does). All sizes run in one process so ratios compare like with like on a shared,
noisy machine.
"""

from __future__ import annotations

import argparse
import itertools
import random
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


def _word(rng: random.Random) -> str:
    return rng.choices(WORDS, cum_weights=_ZIPF)[0]


def synthetic(i: int, rng: random.Random, long_share: float = 0.0) -> tuple[str, bytes]:
    """A realistic mix: memory files (some restating or negating others) and ledger entries. Statements
    have 5 content words; `long_share` of them get 4 more (9), which the near-duplicate index
    handles with LSH instead of exact subsets."""
    def sentence() -> str:
        words = [_word(rng) for _ in range(9 if long_share and rng.random() < long_share else 5)]
        neg = "Never " if rng.random() < 0.15 else ""
        return f"{neg}{words[0]} the {words[1]} before the {' '.join(words[2:])}"

    if i % 3 == 2:
        body = "Key decisions:\n" + "\n".join(f"- {sentence()}" for _ in range(4))
        # Subjects of facts are diverse (uniform); their values repeat (Zipf), as "database: postgres" does.
        body += f"\n- {rng.choice(WORDS)}: {_word(rng)}"
        data = (f"---\nsession: s{i}\nepoch: 1\ntimestamp: 2026-04-05T14:45:00Z\nphase: progress\n---\n{body}\n")
        return f"2026-04-05T1445Z_e{i:06d}.md", data.encode()
    body = "\n".join(f"- {sentence()}" for _ in range(4))
    data = f"---\nname: note-{i}\ndescription: {sentence()}\ntype: project\n---\n{body}\n"
    return f"note-{i}.md", data.encode()


def run(size: int, mode: str, long_share: float, seed: int = 7) -> float:
    rng = random.Random(seed)
    artifacts = [synthetic(i, rng, long_share) for i in range(size)]
    with tempfile.TemporaryDirectory() as tmp:
        onto = Ontology(Path(tmp), "bench", create=True)
        start = time.perf_counter()
        if mode == "bulk":
            onto.ingest_many((name, data, Channel.CLI) for name, data in artifacts)
        else:
            for name, data in artifacts:
                onto.ingest(name, data, Channel.CLI)
        elapsed = time.perf_counter() - start
        onto.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,5000,20000")
    parser.add_argument("--modes", default="bulk,single")
    parser.add_argument("--long-share", type=float, default=0.0,
                        help="share of 9-word statements (0.3 exercises the LSH path)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    for mode in args.modes.split(","):
        per_artifact: dict[int, float] = {}
        for size in sizes:
            elapsed = run(size, mode, args.long_share)
            per_artifact[size] = elapsed / size
            print(f"{mode:>6} {size:>6} artifacts: {elapsed:7.2f} s  {size / elapsed:8.1f} artifacts/s  "
                  f"{per_artifact[size] * 1000:6.3f} ms/artifact", flush=True)
        if len(sizes) > 1:
            ratio = per_artifact[sizes[-1]] / per_artifact[sizes[0]]
            print(f"{mode:>6} cost per artifact at {sizes[-1]} / at {sizes[0]}: {ratio:.2f}", flush=True)


if __name__ == "__main__":
    main()
