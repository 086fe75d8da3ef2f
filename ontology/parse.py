"""Parse raw artifact bytes into a valid `Artifact`, or reject them with a reason.

Invariant: parsing never raises anything but `ArtifactRejected` for bad input. Frontmatter is read
defensively: BOM, CRLF, a missing closing `---` and malformed YAML fall back to a line-based read;
YAML that expands explosively or nests deeply is refused, never evaluated.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import replace
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any, Mapping

import frontmatter
import yaml
from frontmatter.default_handlers import YAMLHandler

from ontology.artifact import MEMORY_TYPES, Artifact, ArtifactRejected, Kind, split_drop_name
from ontology import layout
from ontology.layout import MAX_ARTIFACT_BYTES, memory_source, name_key  # the limit's home is stdlib-light: the hook caps reads with it
# An agent's frontmatter never needs anchors; a handful allows hand-written YAML, more is a bomb.
MAX_YAML_ALIASES = 16
# Real frontmatter nests two levels (`metadata:`); 20 leaves room while refusing pathological input.
MAX_YAML_DEPTH = 20
# Share of control characters above which decoded text is treated as binary.
MAX_CONTROL_RATIO = 0.05
# The control characters that count against it: every one below U+0020 but newline, tab and form feed.
# Counted with one regex scan instead of a Python step per character (~7 µs of a POST).
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0d-\x1f]")

LEDGER_NAME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{4}Z_e\d+\.md$", re.IGNORECASE)
_FM_CLOSE_RE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
# TOML frontmatter (Hugo, Zola): a `+++` line, `key = value` lines, a `+++` line (write14).
_TOML_CLOSE_RE = re.compile(r"^\+\+\+[ \t]*$", re.MULTILINE)
_TOML_LINE_RE = re.compile(r"^([A-Za-z0-9_-]+)\s*=\s*(.*?)\s*$")
_KV_LINE_RE = re.compile(r"^([A-Za-z_][\w\- ]{0,40}):(?:[ \t]+(.*))?$")


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses alias bombs and deep nesting while composing, before building."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D401 - PyYAML hook
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise ArtifactRejected(
                    f"frontmatter YAML uses more than {MAX_YAML_ALIASES} aliases (alias bomb refused)"
                )
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise ArtifactRejected(f"frontmatter YAML nests deeper than {MAX_YAML_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


# Without anchors/aliases (& *), flow collections ([ {) or same-line block nesting (- -), YAML can
# neither expand nor nest deeper than its indentation shows, so the C loader is safe to use.
_NEEDS_BOUNDED = re.compile(r"[&*\[{]|^\s*-\s+-", re.MULTILINE)
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _max_indent(block: str) -> int:
    return max((len(line) - len(line.lstrip(" \t")) for line in block.split("\n")), default=0)


class _BoundedYAMLHandler(YAMLHandler):
    def load(self, fm: str, **kwargs: object) -> Any:
        if not _NEEDS_BOUNDED.search(fm) and _max_indent(fm) < MAX_YAML_DEPTH:
            return yaml.load(fm, Loader=_FAST_LOADER)  # noqa: S506 - CSafeLoader
        return yaml.load(fm, Loader=_BoundedLoader)  # noqa: S506 - SafeLoader subclass


# Byte-order marks that name their encoding exactly (UTF-32 before UTF-16: FF FE 00 00 starts with FF FE).
_BOMS = ((b"\x00\x00\xfe\xff", "utf-32-be"), (b"\xff\xfe\x00\x00", "utf-32-le"),
         (b"\xfe\xff", "utf-16-be"), (b"\xff\xfe", "utf-16-le"))
# A Windows-made file without a BOM is often cp1252 (a superset of Latin-1's printable part). It is read
# so only when it is plainly Western text: accented letters inside words that also hold ASCII letters,
# and the typographic marks Word and Notepad write. Russian in cp1251, Greek, Shift-JIS or GBK read as
# cp1252 give words of accented letters only (or bytes cp1252 lacks) and stay refused: no mojibake.
# Letters left out: ð þ (Turkish ğ ş in cp1254), œ Ÿ ¹ ³ (Polish ś ź ą ł in cp1250), ý stays (Czech ý is
# the same byte). Superscripts and fractions count as word characters and are left out too.
_CP1252_LETTERS = frozenset("ŠŽšžµªº" + "".join(chr(c) for c in range(0xC0, 0x100)
                                               if chr(c) not in "×÷ðþÐÞ"))
_CP1252_MARKS = frozenset("\u00a0‘’“”–—…•€£¥¢°©®™«»§¶·×÷¿¡´¨")
_WORD_RE = re.compile(r"[^\W\d_]+")
# A valid UTF-8 multi-byte sequence: a file holding one and an invalid byte mixes encodings; read as
# cp1252 its "é" would show as "Ã©".
_UTF8_SEQUENCE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")
# Share of letters that may be accented in cp1252 text (Portuguese runs about 5 %, French 3 %).
MAX_CP1252_ACCENTED = 0.25
# cp1250 (Czech, Slovak) shares cp1252's bytes for á é í ó ú ý š ž; its č ě ň ř ů ď read as è ì ò ø ù ï.
# Western languages write ì and ù only at a word's end (Italian "così", "più", French "où"); inside a word
# they are ě and ů ("zmìna", "dùm"). And š or ž beside any of è ì ò ø ù ï is Central European text.
_INNER_GRAVE_RE = re.compile(r"[ìùÌÙ](?=[^\W\d_])")
_CP1250_ONLY = frozenset("èìòøùïÈÌÒØÙÏ")


def _plain_cp1252(data: bytes) -> str | None:
    """`data` read as cp1252 when that is plainly Western text (see _CP1252_LETTERS), else None."""
    if _UTF8_SEQUENCE.search(data):
        return None
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    letters = accented = 0
    for word in _WORD_RE.findall(text):
        wide = sum(1 for ch in word if ord(ch) > 127)
        if wide and (wide == len(word) > 1 or any(ord(ch) > 127 and ch not in _CP1252_LETTERS for ch in word)
                     or re.search(r"[^\x00-\x7f]{3}", word)):
            return None
        letters, accented = letters + len(word), accented + wide
    if not accented or accented > MAX_CP1252_ACCENTED * letters:
        return None
    if any(ord(ch) > 127 and ch not in _CP1252_LETTERS and ch not in _CP1252_MARKS for ch in text):
        return None
    if _INNER_GRAVE_RE.search(text) or (not _CP1250_ONLY.isdisjoint(text) and not {"š", "ž", "Š", "Ž"}.isdisjoint(text)):
        return None  # cp1250: a wrong guess would show "zmìna" for "změna"; refused, the file stays as it is
    return text


# UTF-16 without a BOM (PowerShell's and some editors' "Unicode" with the mark stripped): mostly Latin
# text has a NUL high byte in every other byte, on one side only. Read when at least this share of its code
# units has the NUL on one side and the other side has almost none (a CJK unit like U+4E00 has one);
# anything less clear stays binary.
MIN_UTF16_NUL_SHARE = 0.5
MAX_UTF16_OTHER_SIDE = 1 / 16


def _utf16_without_bom(data: bytes) -> tuple[str, str] | None:
    """(text, encoding) of BOM-less UTF-16 whose NUL bytes say its byte order, or None. The order is not
    guessed: the NULs sit on one side of the code units, the text decodes strictly and encodes back to
    the same bytes, with no control character but line breaks and tabs."""
    units = len(data) // 2
    if not units or len(data) % 2:
        return None
    high_first, high_last = data[0::2].count(0), data[1::2].count(0)  # NULs in BE's, in LE's high bytes
    for nuls, other, encoding in ((high_last, high_first, "utf-16-le"), (high_first, high_last, "utf-16-be")):
        if nuls >= MIN_UTF16_NUL_SHARE * units and other <= MAX_UTF16_OTHER_SIDE * nuls:
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError:
                return None
            if text.encode(encoding) != data or any(ord(ch) < 32 and ch not in "\t\n\r\f" for ch in text):
                return None  # a NUL or control character: binary after all
            return text, encoding
    return None


def decode_text(data: bytes) -> tuple[str, str | None]:
    """(text, the encoding it was read from when not UTF-8). A BOM names UTF-16 or UTF-32 exactly; NUL
    bytes on one side of every code unit name BOM-less UTF-16's byte order; else UTF-8, else cp1252 when
    plainly Western text. `ArtifactRejected` for anything else."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(encoding), encoding.upper()
            except UnicodeDecodeError as exc:
                raise ArtifactRejected(f"artifact starts with a {encoding.upper()} byte-order mark but is not "
                                       f"valid {encoding.upper()} (byte {exc.start + len(bom)})") from None
    if b"\x00" in data:
        if (utf16 := _utf16_without_bom(data)) is not None:
            return utf16[0], utf16[1].upper()
        raise ArtifactRejected("artifact contains NUL bytes (binary content is not ingested)")
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        text = _plain_cp1252(data)
        if text is None:
            raise ArtifactRejected(f"artifact is not valid UTF-8 (byte {exc.start}), and not plainly Windows-1252 "
                                   "text either; save it as UTF-8") from None
        return text, "cp1252"


def decode(data: bytes, *, blank: bool = False) -> str:
    """Bytes to normalized text, or `ArtifactRejected` for what cannot be a text artifact (or is
    blank, unless `blank` allows it)."""
    return _decoded(data, blank=blank)[0]


def _decoded(data: bytes, *, blank: bool = False) -> tuple[str, str | None]:
    if len(data) > MAX_ARTIFACT_BYTES:
        raise ArtifactRejected(f"artifact is {len(data)} bytes, over the {MAX_ARTIFACT_BYTES}-byte limit")
    text, encoding = decode_text(data)
    if "\x00" in text:
        raise ArtifactRejected("artifact contains NUL characters (binary content is not ingested)")
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    if "\n" not in text:  # a classic-Mac file: a CR alone ends each line. In any other file a lone CR
        text = text.replace("\r", "\n")  # is the author's own character (a code span `$'\r'`): kept.
    controls = len(_CONTROL_RE.findall(text))
    if text and controls / len(text) > MAX_CONTROL_RATIO:
        raise ArtifactRejected("artifact looks binary (too many control characters)")
    if not blank and not text.strip():
        raise ArtifactRejected("artifact is empty: nothing to ingest")
    return text, encoding


def _line_based(block: str) -> dict[str, object]:
    """Read `key: value` lines (one nested level for `metadata:`) when YAML itself fails."""
    result: dict[str, object] = {}
    nested: dict[str, object] | None = None
    for raw in block.split("\n"):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        indented = raw[:1] in (" ", "\t")
        match = _KV_LINE_RE.match(raw.strip())
        if not match:
            continue
        key, value = match.group(1).strip(), (match.group(2) or "").strip()
        value = value.strip("\"'") if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'" else value
        if indented and nested is not None:
            nested[key] = value
        elif not value:
            nested = {}
            result[key] = nested
        else:
            nested = None
            result[key] = value
    return result


def _toml_frontmatter(text: str) -> tuple[dict[str, object], str, tuple[str, ...]] | None:
    """A TOML (`+++`) block at the top: (its fields, the body, notes), or None when there is none (no closing
    `+++`: the text is the author's, read as written). Its fields name the note as YAML's do: a note missing from
    the index was summarised by its raw `+++` block (write14)."""
    first_break = text.find("\n")
    close = _TOML_CLOSE_RE.search(text, first_break + 1) if first_break >= 0 else None
    if close is None:
        return None
    block, body = text[first_break + 1 : close.start()], text[close.end() :].lstrip("\n")
    import tomllib  # lazily: few notes carry TOML

    try:
        return dict(tomllib.loads(block)), body, ()
    except (tomllib.TOMLDecodeError, RecursionError, ValueError):
        meta: dict[str, object] = {}
        for line in block.split("\n"):
            found = _TOML_LINE_RE.match(line.strip())
            if found:
                meta.setdefault(found.group(1), found.group(2).strip("\"'"))
        return meta, body, ("frontmatter is not valid TOML; read line by line",)


def split_frontmatter(text: str) -> tuple[dict[str, object], str, tuple[str, ...]]:
    """(frontmatter, body, notes). Refusals (bombs, depth) propagate as `ArtifactRejected`."""
    if text.startswith("+++") and text[3:4] in ("\n", " ", "\t"):
        toml = _toml_frontmatter(text)
        if toml is not None:
            return toml
    if not text.startswith("---") or text[3:4] not in ("\n", " ", "\t", ""):
        return {}, text, ()
    first_break = text.find("\n")
    if first_break < 0:
        return {}, "", ("frontmatter opened but file ends",)
    close = _FM_CLOSE_RE.search(text, first_break + 1)
    if close is None:
        # No closing `---`: the leading run of key: value lines is the frontmatter, the rest body.
        lines = text[first_break + 1 :].split("\n")
        cut = 0
        while cut < len(lines) and (_KV_LINE_RE.match(lines[cut].strip()) or lines[cut][:1] in (" ", "\t")):
            cut += 1
        meta = _line_based("\n".join(lines[:cut]))
        return meta, "\n".join(lines[cut:]).strip("\n"), ("frontmatter has no closing ---; read line by line",)
    block = text[first_break + 1 : close.start()]
    body = text[close.end() :].lstrip("\n")
    try:
        meta, _ = frontmatter.parse("---\n" + block + "\n---\n", handler=_BoundedYAMLHandler())
    except ArtifactRejected:
        raise
    except Exception:  # noqa: BLE001 - any YAML error means "not YAML"; fall back, never fail
        return _line_based(block), body, ("frontmatter is not valid YAML; read line by line",)
    if not isinstance(meta, dict):
        return _line_based(block), body, ("frontmatter is not a mapping; read line by line",)
    return dict(meta), body, ()


def _text_field(value: object) -> str | None:
    """Frontmatter values arrive with any type; keep scalars as trimmed text, drop the rest."""
    if value is None or isinstance(value, (dict, list, tuple, set)):
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    text = str(value).strip()
    return text or None


def _field(meta: Mapping[str, object], key: str) -> str | None:
    """A key from the flat shape, else from the nested `metadata:` shape."""
    if key in meta:
        return _text_field(meta[key])
    nested = meta.get("metadata")
    if isinstance(nested, Mapping) and key in nested:
        return _text_field(nested[key])
    return None


def classify(filename: str, meta: Mapping[str, object], hint: Kind | None) -> Kind:
    # MEMORY.md is the index the harness loads whole, whatever its top holds: an index with frontmatter
    # (a title, a date, an Obsidian-style header) read as a document lost every line of it (blind14).
    if filename.lower() == "memory.md" and hint is not Kind.LEDGER:
        return Kind.MEMORY_INDEX
    if hint is Kind.LEDGER or ((_field(meta, "session") and (_field(meta, "epoch") or _field(meta, "phase")))):
        return Kind.LEDGER
    if LEDGER_NAME_RE.match(filename) and _field(meta, "session"):
        return Kind.LEDGER
    memory_type = (_field(meta, "type") or "").lower()
    if hint is Kind.MEMORY or memory_type in MEMORY_TYPES or (_field(meta, "name") and _field(meta, "description")):
        return Kind.MEMORY
    return Kind.DOCUMENT


def source_identity(kind: Kind, ontology: str, filename: str, meta: Mapping[str, object]) -> str:
    """The independent source an artifact speaks for (docs/reference.md §4: versions are one source)."""
    if kind is Kind.LEDGER:
        session = _field(meta, "session") or PurePosixPath(filename).stem
        return f"ledger:{session}#{_field(meta, 'epoch') or '0'}"
    if kind in (Kind.MEMORY, Kind.MEMORY_INDEX):
        return memory_source(ontology, filename)
    return f"document:{name_key(filename)}"


def _forgetting(data: bytes, expected: str, original: str, fields: tuple[str, ...]) -> dict[str, str]:
    """The JSON object of a tombstone or a move (docs/reference.md §4), checked field by field."""
    try:
        record = json.loads(decode(data))
    except ValueError:
        raise ArtifactRejected(f"a {expected} must be a JSON object (docs/reference.md §4)") from None
    if not isinstance(record, dict) or record.get("kgbridge") != expected:
        raise ArtifactRejected(f'a {expected} must be a JSON object with "kgbridge": "{expected}"')
    for key in fields:
        if not isinstance(record.get(key), str) or not record[key]:
            raise ArtifactRejected(f'a {expected} needs a non-empty text field "{key}"')
    named = record["file"] if expected == "tombstone" else record["to"]
    if named != original:
        raise ArtifactRejected(f"the {expected} names {named!r} but was delivered as {original!r}")
    return record


def _tombstone(ontology: str, original: str, data: bytes) -> Artifact:
    record = _forgetting(data, "tombstone", original, ("file", "at"))
    layout.validate_filename(record["file"])
    return Artifact(filename=original, sha256=hashlib.sha256(data).hexdigest(), kind=Kind.TOMBSTONE,
                    text=data.decode("utf-8"), body="", frontmatter={},
                    source_identity=memory_source(ontology, original), timestamp=record["at"])


def _move(ontology: str, original: str, data: bytes) -> Artifact:
    """A memory file renamed: its new content under the new name, carrying the old source's identity."""
    record = _forgetting(data, "move", original, ("from", "to", "at"))
    layout.validate_filename(record["from"])
    inner = _parse(ontology, original, _moved_bytes(record), Kind.MEMORY)
    if inner.kind is not Kind.MEMORY:
        raise ArtifactRejected("a move carries a memory file, not the index")
    return replace(inner, sha256=hashlib.sha256(data).hexdigest(), timestamp=inner.timestamp or record["at"],
                   moved_from=memory_source(ontology, record["from"]),
                   notes=(*inner.notes, f"moved from {record['from']}"))


def _moved_bytes(record: Mapping[str, object]) -> bytes:
    """A move's content: text, or (a file not in UTF-8) its bytes in `content_base64`."""
    if isinstance(record.get("content"), str):
        return record["content"].encode("utf-8", "surrogatepass")  # type: ignore[union-attr]
    encoded = record.get("content_base64")
    try:
        if isinstance(encoded, str):
            return base64.b64decode(encoded, validate=True)
    except ValueError:
        raise ArtifactRejected('a move\'s "content_base64" is not base64') from None
    raise ArtifactRejected('a move needs a text field "content" (or "content_base64")')


def parse_artifact(ontology: str, filename: str, data: bytes) -> Artifact:
    """Decode, split frontmatter, classify. Raises `ArtifactRejected` with a reason on bad input."""
    raw_hint, original = layout.split_drop_name(filename)
    if raw_hint == "tombstone":
        return _tombstone(ontology, original, data)
    if raw_hint == "move":
        return _move(ontology, original, data)
    hint, original = split_drop_name(filename)
    return _parse(ontology, original, data, hint)


def _parse(ontology: str, original: str, data: bytes, hint: Kind | None) -> Artifact:
    text, encoding = _decoded(data, blank=True)
    meta, body, notes = split_frontmatter(text)
    if encoding is not None:  # kept with the artifact: its archived bytes are not the UTF-8 the graph shows
        notes = (f"read as {encoding}", *notes)
    kind = classify(original, meta, hint)
    if not text.strip() and kind not in (Kind.MEMORY, Kind.MEMORY_INDEX):
        # A memory file its author emptied is a new version of it (it says nothing now); any other
        # blank artifact carries nothing to ingest.
        raise ArtifactRejected("artifact is empty: nothing to ingest")
    memory_type = (_field(meta, "type") or "").lower() or None
    if memory_type not in MEMORY_TYPES:
        memory_type = None
    return Artifact(
        filename=original,
        sha256=hashlib.sha256(data).hexdigest(),
        kind=kind,
        text=text,
        body=body,
        frontmatter=meta,
        source_identity=source_identity(kind, ontology, original, meta),
        timestamp=_field(meta, "modified") or _field(meta, "timestamp") or _field(meta, "date"),
        name=_field(meta, "name"),
        description=_field(meta, "description"),
        memory_type=memory_type,
        notes=notes,
        # UTF-8 only: a file in another encoding is shown in UTF-8, which the agent's tools read and write.
        raw=data if kind in (Kind.MEMORY, Kind.MEMORY_INDEX) and encoding is None and data != text.encode() else None,
    )
