"""What an agent's shell command would do to the mounted memory slot, read conservatively.

Simple commands joined by `&&`, `;` or newlines are read word by word (`shlex`); `cd DIR` is
followed. A plain `rm`/`git rm` of memory files becomes a deletion and a plain `mv`/`git mv` between
two of them a rename (docs/adr/0012); anything else that would write into the slot (globs, `find
-delete`, redirects, pipes, other tools) is named so the agent can be told. Standard library only.
"""

from __future__ import annotations

import os
import re
import shlex
from collections import namedtuple
from enum import StrEnum
from pathlib import Path

_JOINERS = frozenset({"&&", ";"})
_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", ">&", "<", "<<<"})
_FD = re.compile(r"^\d+$")
_PUNCTUATION = frozenset("();<>|&")
_GLOB = re.compile(r"[*?\[$`]")
# Tools that change the files they are given (every operand), and those that write their last one.
_CHANGE_OPERANDS = frozenset({"rm", "unlink", "rmdir", "shred", "truncate", "touch", "mv", "chmod", "tee",
                              "git rm", "git mv"})
_WRITE_LAST = frozenset({"cp", "ln", "install", "rsync"})
# The flags under which a plain rm / mv means "delete these files" / "rename this file".
_PLAIN_FLAGS = {"rm": re.compile(r"^-[rRfvid]+$|^--(force|recursive|verbose)$"),
                "git rm": re.compile(r"^-[rfq]+$|^--(force|quiet)$"),
                "mv": re.compile(r"^-[fvn]+$|^--(force|verbose|no-clobber)$"),
                "git mv": re.compile(r"^-[fvk]+$|^--(force|verbose)$")}


class Verb(StrEnum):
    """What a recorded operation does to memory files."""

    DELETE = "rm"
    RENAME = "mv"


class Operation(namedtuple("Operation", "verb paths")):
    """One recorded change: DELETE of `paths`, or RENAME of `paths[0]` to `paths[1]`."""

    __slots__ = ()
    verb: Verb
    paths: tuple[Path, ...]


class Plan(namedtuple("Plan", "operations unrecorded")):
    """What the command does to the slot: the operations kgbridge can record, and the first part
    that writes into the slot but cannot be recorded (None when every part can)."""

    __slots__ = ()
    operations: tuple[Operation, ...]
    unrecorded: str | None


def _inside(path: Path, directory: Path) -> bool:
    """Lexical containment only: the slot is a FUSE mount, never stat'ed here."""
    base = os.path.abspath(directory).rstrip("/")
    lexical = os.path.abspath(path)
    return lexical == base or lexical.startswith(base + "/")


def _segments(command: str) -> list[list[str]]:
    """The simple commands of `command` as word lists (shell punctuation kept as words).
    Raises ValueError on unbalanced quotes."""
    segments: list[list[str]] = [[]]
    for line in command.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        for word in lexer:
            if word in _JOINERS:
                segments.append([])
            else:
                segments[-1].append(word)
        segments.append([])
    return [s for s in segments if s]


def _redirected(words: list[str], cwd: Path) -> tuple[list[str], list[Path]]:
    """The words without their redirections (`2>/dev/null`, `>out.txt`), and the files written to."""
    kept: list[str] = []
    written: list[Path] = []
    words = iter(words)
    for word in words:
        if word not in _REDIRECTS:
            kept.append(word)
            continue
        if kept and _FD.match(kept[-1]):
            kept.pop()  # the descriptor of `2>`
        target = next(words, "")
        if word != "<" and word != "<<<" and target and not _FD.match(target):
            written.append(Path(os.path.normpath(cwd / os.path.expanduser(target))))
    return kept, written


def _split(words: list[str]) -> tuple[str, list[str], list[str]]:
    """(verb, flags, operands) of one simple command; `git rm` / `git mv` are one verb."""
    verb, rest = words[0], words[1:]
    if verb == "git" and rest and rest[0] in ("rm", "mv"):
        verb, rest = f"git {rest[0]}", rest[1:]
    flags, operands, literal = [], [], False
    for word in rest:
        if word == "--" and not literal:
            literal = True
        elif word.startswith("-") and not literal:
            flags.append(word)
        else:
            operands.append(word)
    return verb, flags, operands


def plan(command: str, cwd: Path, slot: Path) -> Plan | None:
    """The plan of `command` run in `cwd`, or None when it writes nothing into `slot` (it may run)."""
    try:
        segments = _segments(command)
    except ValueError:
        return Plan((), "a command with unbalanced quotes") if str(slot) in command else None
    operations: list[Operation] = []
    unrecorded: str | None = None
    others: list[str] = []
    writes = False
    for segment in segments:
        text = " ".join(segment)
        words, targets = _redirected(segment, cwd)
        if not words:
            continue
        verb, flags, operands = _split(words)
        paths = [Path(os.path.normpath(cwd / os.path.expanduser(o))) for o in operands]
        if verb == "cd" and not flags and len(operands) == 1 and not _PUNCTUATION & set(text):
            cwd = paths[0]
            continue
        if any(_inside(t, slot) for t in targets):
            writes = True
            unrecorded = unrecorded or f"`{text}` (a redirect into it)"
            continue
        if verb in _CHANGE_OPERANDS:
            targets += paths
        elif verb in _WRITE_LAST and paths:
            targets.append(paths[-1])
        elif verb == "sed" and any(f.startswith(("-i", "--in-place")) for f in flags):
            targets += paths
        elif verb == "find" and {"-delete", "-exec", "-execdir"} & set(flags):
            targets += paths or [cwd]
        if not any(_inside(t, slot) for t in targets):
            others.append(text)
            continue
        writes = True
        recorded = _recorded(verb, flags, operands, paths, " ".join(words), slot)
        if recorded is None:
            unrecorded = unrecorded or f"`{text}`"
        else:
            operations.append(recorded)
    if not writes:
        return None
    named = [p for op in operations for p in op.paths]
    if unrecorded is None and len({os.path.abspath(p) for p in named}) < len(named):
        unrecorded = "several operations on one file"
    if unrecorded is None and others:
        unrecorded = f"`{others[0]}` in the same command"
    return Plan(tuple(operations), unrecorded)


def _recorded(verb: str, flags: list[str], operands: list[str], paths: list[Path], text: str,
              slot: Path) -> Operation | None:
    """The operation a plain rm / mv of memory files in the slot records, else None."""
    pattern = _PLAIN_FLAGS.get(verb)
    if pattern is None or not all(pattern.match(f) for f in flags) or _PUNCTUATION & set(text) or \
            any(_GLOB.search(o) for o in operands) or not paths:
        return None
    if not all(_inside(p, slot) and p.suffix == ".md" and os.path.abspath(p.parent) ==
               os.path.abspath(slot) for p in paths):
        return None
    if verb in ("rm", "git rm"):
        return Operation(Verb.DELETE, tuple(paths))
    return Operation(Verb.RENAME, tuple(paths)) if len(paths) == 2 else None
