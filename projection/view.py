"""The projected files of one ontology, rendered on demand (memory files in batches) and cached per graph version.

Invariant: a rendered file is reused only while the graph is unchanged (a stat stamp of graph.db
and its WAL, then the graph version: last artifact id, artifact count, database inode), so a new
ingest shows up on the next read and nothing stale is ever served. Names: MEMORY.md, each memory
file under its own name, every other concept as `<key>.md`, and MEMORY.full.md (the author's whole
index) while MEMORY.md cannot show all of it; under another name (render.full_index_name) when the
author has a file of that name, which stays theirs.
"""

from __future__ import annotations

import bisect
import itertools
import sqlite3
import threading
from pathlib import Path

from ontology import queries
from ontology.ingest import Ontology
from projection.render import FULL_INDEX_NAME, full_index_name, index_cut, render_memory
from projection.snapshot import (FORGOTTEN_FILES, MEMORY_NAME, PAGED_CONCEPTS, beside_a_file, forgotten_keys,
                                 host_index_bytes,
                                 graph_version, memory_files, memory_snapshot, memory_topics)
from projection.topic import memory_topic_bytes, render_topic


# The cache key of the author's whole index: never a file's name, so no file of the folder can be served it.
_WHOLE = "\0whole index"
# The author's MEMORY.md as written, for the worker that saves an edit of ours: a hidden name (never listed,
# no host file can have it: the overlay hides dot names), read to keep the index's BOM, line ends and final
# newline (write14).
AUTHOR_INDEX_NAME = ".kgbridge-author-index.md"
_AUTHOR = "\0author index"


class ProjectionView:
    """The projected files of one ontology: MEMORY.md, the memory files, `<concept key>.md`."""

    def __init__(self, ontology: Ontology) -> None:
        self.ontology = ontology
        self._lock = threading.Lock()
        self._version: tuple[int, int, int] | None = None
        self._files: dict[str, str] = {}  # memory file name -> concept key
        self._file_of: dict[str, str] = {}  # concept key -> its memory file's name (first by name)
        self._keys: list[str] = []  # concepts without a memory file of their own
        self._key_set: frozenset[str] = frozenset()
        self._forgotten: set[str] = set()
        self._cache: dict[str, bytes] = {}  # file name -> its bytes; _WHOLE -> the whole index (b"": not cut)
        self._full_name = FULL_INDEX_NAME  # the name the whole index is served under (full_index_name)
        self._last_stamp: tuple[object, ...] = ()
        self._seen_stamp: tuple[object, ...] = ()
        database = ontology.paths.database  # stat-ed on every FUSE request: build the paths once
        self._stamped = (database, Path(f"{database}-wal"))

    def _stamp(self) -> tuple[object, ...]:
        """Changes whenever a commit lands (WAL size/mtime) or the file is replaced (rebuild)."""
        out: list[object] = []
        for path in self._stamped:
            try:
                st = path.stat()
                out += [st.st_ino, st.st_mtime_ns, st.st_size]
            except OSError:
                out.append(None)
        return tuple(out)

    def _refresh(self, conn: sqlite3.Connection) -> None:
        version = graph_version(conn, self.ontology.paths.database)
        if version != self._version:  # all read before any is kept: a failure leaves the view as it was
            files = memory_files(conn)
            file_of: dict[str, str] = {}
            for name, key in files.items():
                file_of.setdefault(key, name)
            forgotten = {r[0] for r in conn.execute(FORGOTTEN_FILES)}
            gone = forgotten_keys(forgotten)  # a deleted file does not come back as a page (harm14)
            folded = {name.casefold() for name in files}
            keys = [r[0] for r in conn.execute(PAGED_CONCEPTS)
                    if r[0] not in file_of and not beside_a_file(r[0], folded) and r[0] not in gone]
            self._files, self._file_of, self._keys, self._key_set = files, file_of, keys, frozenset(keys)
            self._forgotten, self._cache, self._version = forgotten, {}, version
            self._full_name = full_index_name(files)
        self._last_stamp = self._seen_stamp

    def _fresh(self) -> bool:
        """True when nothing was committed since the last refresh: serve from cache, no SQL at all."""
        stamp = self._stamp()
        if self._version is not None and stamp == self._last_stamp:
            return True
        self._seen_stamp = stamp  # recorded by `_refresh` once it succeeds: a failed one is tried again
        return False

    def forgotten(self) -> frozenset[str]:
        """Memory files the graph had and no longer shows (deleted or renamed away, ADR 0012): a mount's
        overlay hides a host file so named, which is still on the disk underneath the read-only mount."""
        with self._lock:
            if not self._fresh():
                with self.ontology.reader() as conn:
                    self._refresh(conn)
            return frozenset(self._forgotten)

    def names(self) -> list[str]:
        with self._lock:
            if not self._fresh():
                with self.ontology.reader() as conn:
                    self._refresh(conn)
            topics = [*self._files, *(f"{key}.md" for key in self._keys)]
            if self._full_index() is not None:
                topics.append(self._full_name)
            return [MEMORY_NAME, *sorted(n for n in topics if n != MEMORY_NAME)]

    def _full_index(self) -> bytes | None:
        """The author's whole index when MEMORY.md could not show all of it, else None. Called with the lock
        held and the view fresh; renders MEMORY.md if it is not cached yet."""
        if MEMORY_NAME not in self._cache:
            self._render(MEMORY_NAME, stale=False)
        return self._cache.get(_WHOLE) or None

    def full_index(self) -> tuple[str, bytes] | None:
        """(the name it is served under, the author's whole index) while MEMORY.md leaves entries of it out."""
        with self._lock:
            if not self._fresh():
                with self.ontology.reader() as conn:
                    self._refresh(conn)
            whole = self._full_index()
            return (self._full_name, whole) if whole is not None else None

    def read(self, name: str) -> bytes | None:
        """The file's current bytes, or None if the projection has no such file."""
        with self._lock:
            stale = not self._fresh()
            if stale and name == AUTHOR_INDEX_NAME:
                with self.ontology.reader() as conn:
                    self._refresh(conn)
                stale = False
            if stale:  # refreshed in the same read; the whole index's name may change with the graph
                data = self._render(name, stale)
                return self._full_index() if name == self._full_name else data
            if name == AUTHOR_INDEX_NAME:
                if _AUTHOR not in self._cache:
                    with self.ontology.reader() as conn:
                        self._cache[_AUTHOR] = host_index_bytes(conn) or b""
                return self._cache[_AUTHOR] or None
            if name == self._full_name:
                # Ours only while MEMORY.md is cut; an author's file of this name is never ours (write14): the
                # name is the first one none of theirs holds.
                return self._full_index()
            if name in self._cache:
                return self._cache[name]
            if not self._shows(name):
                return None  # known for this graph version: no SQL for names the projection lacks
            return self._render(name, stale)

    def _shows(self, name: str) -> bool:
        return name == MEMORY_NAME or name in self._files or (name.endswith(".md") and name[:-3] in self._key_set)

    def _render(self, name: str, stale: bool) -> bytes | None:
        with self.ontology.reader() as conn:
            if stale:
                self._refresh(conn)
            if name in self._cache:
                return self._cache[name]
            data: bytes | None = None
            if name == MEMORY_NAME:
                snap = memory_snapshot(conn, self.ontology.slug)
                text = render_memory(snap)
                data = text.encode("utf-8")
                cut = snap.host_index is not None and index_cut(text)
                verbatim = snap.host_index is not None and text == snap.host_index  # nothing of ours added
                # The author's index as written (BOM, CRLF, no final newline), wherever it is served whole.
                whole = host_index_bytes(conn) if cut or verbatim else None
                data = whole if verbatim and whole is not None else data
                self._cache[_WHOLE] = (whole or b"") if cut else b""
            elif name in self._files:
                # `ls -l` stats every file in listing order, and a topic's size is its rendering's: render
                # the next few uncached ones with it, in one set of queries (render = charge, no estimate).
                for filename, topic in memory_topics(conn, self._uncached_from(name)).items():
                    self._cache[filename] = memory_topic_bytes(topic)  # the author's bytes, BOM and CRLF kept
                return self._cache.get(name)
            elif name.endswith(".md") and name[:-3] in self._key_set:
                concept = queries.concept(conn, name[:-3])
                data = render_topic(concept, self._file_of).encode("utf-8") if concept else None
            if data is not None:
                self._cache[name] = data
            return data

    def _uncached_from(self, name: str) -> list[str]:
        """`name` and the memory files after it in listing order (wrapping round) not rendered yet,
        TOPIC_BATCH at most: any order of reading, forward, backward or random, fills whole batches."""
        names = list(self._files)  # sorted by name (memory_files)
        at = bisect.bisect_right(names, name)
        batch = [name]
        for other in itertools.chain(names[at:], names[:at]):
            if len(batch) == TOPIC_BATCH:
                break
            if other != name and other not in self._cache:
                batch.append(other)
        return batch


# Topic files rendered per miss (see `_render`): a batch of 64 costs what about ten single renders do,
# and stays small enough that reading one file after a change pays little for the others.
TOPIC_BATCH = 64


# Left in a directory `materialize` wrote, so it may write there again (hidden: never ingested, never shown).
MATERIALIZED_MARK = ".kgbridge-projection"


class TargetHoldsFiles(ValueError):
    """`materialize` was pointed at a directory holding markdown files it did not write."""


def materialize(view: ProjectionView, target: Path) -> list[str]:
    """`kgbridge project --to DIR`: write every projected file atomically; returns the names.

    Refuses a directory holding markdown files of its own (TargetHoldsFiles) unless an earlier
    materialize wrote it: pointed at an agent's memory folder, it replaced the author's MEMORY.md and
    notes with our rendering, which the hooks then captured as the author's words, one more header,
    footer and appendix per round (blind14)."""
    from ontology.atomic import atomic_write

    target = Path(target)
    if target.is_dir() and not (target / MATERIALIZED_MARK).exists():
        own = sorted(p.name for p in target.iterdir() if p.suffix.lower() == ".md" and not p.name.startswith("."))
        if own:
            raise TargetHoldsFiles(f"{target} holds markdown files kgbridge did not write ({', '.join(own[:3])}"
                                   f"{', …' if len(own) > 3 else ''}): the projection would replace them. Write it "
                                   f"to an empty directory; over a memory folder, use `kgbridge mount`, which "
                                   f"leaves its files untouched.")
    names = view.names()
    atomic_write(target / MATERIALIZED_MARK, b"written by kgbridge project --to; safe to delete with this folder\n",
                 mode=0o644)
    for name in names:
        data = view.read(name)
        if data is not None:
            atomic_write(target / name, data, mode=0o644)
    return names
