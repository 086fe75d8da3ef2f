"""Why a single POST costs more than a bulk artifact: the same artifacts, one transaction each, with
parse + extract taken right before each transaction (what a POST does) or all first, against bulk.

Run: .venv/bin/python -m bench.post_phases [--warm 2000] [--n 2000] [--rounds 3] [--orders ...]
Each order runs in a fresh process, the orders alternating round by round (the machine drifts); the
figure is the process's CPU per artifact. `split-pinned` runs the two phases on two threads, each
pinned to its own core, so each core's caches keep one phase (ADR 0007, "Session 10").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.ingest import corpus
from ontology.artifact import Channel
from ontology.ingest import BATCH_SIZE, Ontology

ORDERS = ("interleaved", "grouped", "bulk", "split-pinned")


def run(order: str, warm: int, n: int) -> float:
    """CPU seconds per artifact of `n` zipf artifacts after `warm` ingested in bulk, in `order`."""
    artifacts = corpus("zipf", warm + n, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        onto = Ontology(Path(tmp), "bench", create=True)
        onto.ingest_many((name, data, Channel.CLI) for name, data in artifacts[:warm])
        rest = artifacts[warm:]

        def prepare(i: int) -> object:
            return onto._prepare(i, rest[i][0], rest[i][1], Channel.HTTP, None)

        def apply(batch: list) -> None:
            with onto._exclusive() as writer:
                onto._apply_batch(writer, batch)

        phases = [ThreadPoolExecutor(1), ThreadPoolExecutor(1)]
        if order == "split-pinned":
            for cpu, pool in enumerate(phases):
                pool.submit(os.sched_setaffinity, 0, {cpu}).result()
        start = time.process_time()
        if order == "interleaved":
            for i in range(n):
                apply([prepare(i)])
        elif order == "split-pinned":
            for i in range(n):
                parsed = phases[0].submit(prepare, i).result()
                phases[1].submit(apply, [parsed]).result()
        else:
            parsed = [prepare(i) for i in range(n)]
            step = 1 if order == "grouped" else BATCH_SIZE
            for at in range(0, n, step):
                apply(parsed[at:at + step])
        cpu = time.process_time() - start
        for pool in phases:
            pool.shutdown()
        onto.close()
    return cpu / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warm", type=int, default=2000)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--orders", default=",".join(ORDERS))
    parser.add_argument("--child", help=argparse.SUPPRESS)  # one order: JSON out
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run(args.child, args.warm, args.n)))
        return
    orders = args.orders.split(",")
    if "split-pinned" in orders and len(os.sched_getaffinity(0)) < 2:
        orders.remove("split-pinned")
    figures: dict[str, list[float]] = {order: [] for order in orders}
    for _ in range(args.rounds):
        for order in orders:
            out = subprocess.run([sys.executable, "-m", "bench.post_phases", "--child", order, "--warm", str(args.warm),
                                  "--n", str(args.n)], check=True, capture_output=True, text=True)
            figures[order].append(json.loads(out.stdout.strip().splitlines()[-1]))
    for order, runs in figures.items():
        print(f"{order:>13}: CPU per artifact {', '.join(f'{cpu * 1000:.3f}' for cpu in runs)} ms "
              f"(zipf {args.n} after {args.warm}; load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
