"""Has text of a private development corpus leaked into this repository? Lists every shared run.

Run: .venv/bin/python -m bench.leak CORPUS_DIR [--min-run 48] [--generic 3]
Fixtures must reproduce a real folder's *shape* in invented words, never its text. This compares
every file git tracks with every text file under CORPUS_DIR (whitespace collapsed) and prints each
run of at least `--min-run` characters the two share, with both paths. Runs found in `--generic` or
more corpus folders (Claude Code's own frontmatter, a license line) are shapes, not an author's
words, and are left out. Exit status 1 when anything is listed, so it can gate a commit.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

_SPACE = re.compile(r"\s+")
_TEXT_SUFFIXES = {".md", ".txt", ".json", ".jsonl", ".toml", ".yaml", ".yml", ".py", ".sh", ".tsv", ""}


def _flat(data: bytes) -> str:
    return _SPACE.sub(" ", data.decode("utf-8", "replace"))


def corpus_windows(corpus: Path, window: int, stride: int) -> dict[str, set[str]]:
    """Windows of `window` characters taken every `stride` characters of each corpus file, mapped to
    the corpus folders (first path part) that hold them. Any run of window + stride - 1 or more
    characters shared with the corpus contains one of them."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(corpus.rglob("*")):
        if not path.is_file() or path.suffix.lower() not in _TEXT_SUFFIXES:
            continue
        folder = path.relative_to(corpus).parts[0]
        text = _flat(path.read_bytes())
        for start in range(0, max(len(text) - window + 1, 0), stride):
            found[text[start:start + window]].add(folder)
    return found


def tracked_files(repo: Path) -> list[Path]:
    out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], check=True, capture_output=True).stdout
    return [repo / name for name in out.decode().split("\0") if name]


def leaks(repo: Path, corpus: Path, min_run: int, generic: int) -> list[tuple[str, str, str]]:
    """(repo file, corpus folders, shared text) for each shared run found, one per repo position."""
    stride = max(min_run // 6, 1)
    window = min_run - stride + 1
    windows = corpus_windows(corpus, window, stride)
    hits = []
    for path in tracked_files(repo):
        try:
            text = _flat(path.read_bytes())
        except OSError:
            continue
        start = 0
        while start <= len(text) - window:
            folders = windows.get(text[start:start + window])
            if folders and len(folders) < generic:
                hits.append((str(path.relative_to(repo)), ",".join(sorted(folders)), text[start:start + window]))
                start += window  # one line per shared run, not one per character of it
            else:
                start += 1
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path, help="the private corpus (a folder of memory folders)")
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--min-run", type=int, default=48, help="shortest shared run reported, in characters")
    parser.add_argument("--generic", type=int, default=3,
                        help="runs found in this many corpus folders or more are shapes, not an author's text")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        parser.error(f"{args.corpus} is not a directory")
    hits = leaks(args.repo.resolve(), args.corpus.resolve(), args.min_run, args.generic)
    for path, folders, text in hits:
        print(f"{path}: shares with {folders}: {text!r}")
    print(f"{len(hits)} shared run(s) of >= {args.min_run} characters", file=sys.stderr)
    sys.exit(1 if hits else 0)


if __name__ == "__main__":
    main()
