"""Where an ontology lives on disk (docs/reference.md §2), and the checks that keep outside names inside it.

Invariant: every path this module returns for a slug or a filename that came from outside lies
below `<root>/ontology/`; a name that could escape (separators, `..`, NUL, control characters)
raises `UnsafeName` instead. Standard library only: the hook imports this module.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import namedtuple
from pathlib import Path

from ontology.errors import BadRequest

ROOT_ENV = "KG_KNOWLEDGE_ROOT"
DEFAULT_ROOT = "~/Knowledge"

# docs/reference.md §2: slugs are [a-z0-9-], at most 64 characters; always matched whole (`fullmatch`: with
# `match`, `$` also matches before a final newline, so "shop\n" would pass as a look-alike of "shop").
SLUG_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
# Names Windows reserves for devices: a folder so named cannot be created or copied there.
WINDOWS_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"{p}{i}" for p in ("com", "lpt") for i in range(10))})
# Filenames from outside: one path component, printable, not hidden-by-accident, bounded length.
MAX_FILENAME = 200
# Far above any real memory file or ledger entry (those are a few KiB), low enough that one
# artifact cannot stall the single writer or bloat the archive. The parser refuses larger ones and
# the hook never reads them (kgbridge.bounded.read_regular), so this module is its one home.
MAX_ARTIFACT_BYTES = 1024 * 1024
_BAD_FILENAME_CHARS = re.compile(r"[\x00-\x1f\x7f/\\]")


class UnsafeName(BadRequest, ValueError):
    """A slug or filename from outside that could escape the ontology folder or is malformed."""

    kind = "invalid-name"


def knowledge_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The knowledge root: the explicit value, else $KG_KNOWLEDGE_ROOT, else ~/Knowledge."""
    raw = explicit if explicit is not None else os.environ.get(ROOT_ENV) or DEFAULT_ROOT
    return Path(raw).expanduser()


def is_slug(name: object) -> bool:
    return isinstance(name, str) and SLUG_RE.fullmatch(name) is not None and name not in WINDOWS_RESERVED


def validate_slug(slug: str) -> str:
    if not is_slug(slug):
        raise UnsafeName(f"invalid ontology slug {slug!r}: expected [a-z0-9-], 1-64 chars, not a Windows device name")
    return slug


def validate_filename(name: str) -> str:
    """Accept a single, plain path component; refuse anything that names a directory or escapes."""
    if not isinstance(name, str) or not name or name in {".", ".."}:
        raise UnsafeName(f"invalid filename {name!r}")
    if _BAD_FILENAME_CHARS.search(name):
        raise UnsafeName(f"invalid filename {name!r}: path separators or control characters")
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:  # a drop file whose name is not UTF-8 arrives with surrogate escapes
        raise UnsafeName(f"invalid filename {name!r}: not valid UTF-8") from None
    if len(encoded) > MAX_FILENAME:
        raise UnsafeName(f"filename longer than {MAX_FILENAME} bytes")
    return name


class OntologyPaths(namedtuple("OntologyPaths", "root slug")):
    """The folders and files of one ontology below `<root>/ontology/<slug>/`. An immutable record;
    a namedtuple rather than a dataclass because the hook imports this module on every delivery and
    `dataclasses` alone costs it ~7 ms of start-up (bench/hook.py)."""

    __slots__ = ()
    root: Path
    slug: str

    @property
    def base(self) -> Path:
        return self.root / "ontology" / self.slug

    @property
    def ingest(self) -> Path:
        return self.base / "ingest"

    @property
    def archive(self) -> Path:
        return self.base / "archive"

    @property
    def rejected(self) -> Path:
        return self.base / "rejected"

    @property
    def database(self) -> Path:
        return self.base / "graph.db"

    @property
    def lock(self) -> Path:
        return self.base / ".writer.lock"


# Drop-directory names written by the bridge: `<hint>.<sha12>.<original name>`, so the backend can
# recover the artifact's kind hint and original name (which is part of its source identity). The
# hints are values of `ontology.artifact.Kind` (not imported: the hook reads this module).
DROP_KINDS = ("memory", "ledger", "document", "tombstone", "move")  # the last two: docs/adr/0012
DROP_NAME_RE = re.compile(rf"^({'|'.join(DROP_KINDS)})\.([0-9a-f]{{12}})\.(.+)$")


def drop_name(kind: str, data: bytes, original: str) -> str:
    """The name under which `data` is dropped (or kept in the outbox): kind hint, content, name."""
    return f"{kind}.{hashlib.sha256(data).hexdigest()[:12]}.{original}"


def name_key(filename: str) -> str:
    """One spelling per file name in source identities: Unicode NFC, since macOS writes names NFD.
    Case is kept: on a case-sensitive disk `Deploys.md` and `deploys.md` are two files, and the
    identity is shown to people as the name they wrote."""
    import unicodedata  # lazily: the hook imports this module on every delivery

    return unicodedata.normalize("NFC", filename)


def memory_source(slug: str, filename: str) -> str:
    """The source identity of a memory file: every version (and every spelling, see `name_key`)
    of `<slug>/<filename>` is one source."""
    return f"memory:{slug}/{name_key(filename)}"


def split_drop_name(name: str) -> tuple[str | None, str]:
    """(kind hint, original filename) from a drop-directory name; plain names carry no hint."""
    match = DROP_NAME_RE.match(name)
    return (match.group(1), match.group(3)) if match else (None, name)


def ontology_paths(root: Path, slug: str) -> OntologyPaths:
    return OntologyPaths(root=Path(root), slug=validate_slug(slug))


def list_ontologies(root: Path) -> list[str]:
    """Slugs of ontologies that have a folder under `<root>/ontology/`, sorted."""
    parent = Path(root) / "ontology"
    try:
        entries = sorted(p.name for p in parent.iterdir() if p.is_dir())
    except FileNotFoundError:
        return []
    return [name for name in entries if is_slug(name)]
