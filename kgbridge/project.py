"""Which project a directory belongs to, its slug, and where its agent keeps memory and ledger.

Invariant: derived without configuration and stable: the same directory (through any symlink)
always gives the same project root and slug. Standard library only, because the hook imports it
(python-slugify would do, but the hook may not pay for importing it).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import namedtuple
from enum import StrEnum
from pathlib import Path

from kgbridge.state import read_json

MAX_SLUG = 64  # docs/reference.md §2
_NON_SLUG = re.compile(r"[^a-z0-9]+")
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]")


def slugify(name: str) -> str:
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    slug = _NON_SLUG.sub("-", folded).strip("-")[:MAX_SLUG].strip("-")
    return slug or "project"


def find_root(start: Path) -> Path:
    """The canonical git root above `start` (realpath), else `start` itself: its own project."""
    here = Path(os.path.realpath(start))
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return here


def claude_home() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex").expanduser()


def codex_memories() -> Path:
    """Codex's own memory store (`memories_v2`): `memory_summary.md` is injected at every session
    start, and "remember" requests become notes under `extensions/ad_hoc/notes/`. Per user, not per
    project."""
    return codex_home() / "memories_v2"


def memory_dir(root: Path) -> Path:
    """docs/reference.md §2: `autoMemoryDirectory` (project settings, then user settings) wins; else
    `<claude home>/projects/<root with every non-alphanumeric char replaced by ->/memory/`."""
    for settings in (root / ".claude" / "settings.local.json", root / ".claude" / "settings.json",
                     claude_home() / "settings.json"):
        override = read_json(settings).get("autoMemoryDirectory")
        if isinstance(override, str) and override.strip():
            path = Path(override).expanduser()
            return path if path.is_absolute() else (root / path)
    return claude_home() / "projects" / _NON_ALNUM.sub("-", str(root)) / "memory"


class Harness(StrEnum):
    """The coding agents kgbridge hooks into."""

    CLAUDE = "claude"  # Claude Code: .claude/settings.json, auto-memory files, ledger
    CODEX = "codex"  # Codex: .codex/hooks.json, apply_patch edits


class Project(namedtuple("Project", "root slug")):
    """A project and its slug. A namedtuple rather than a dataclass to keep `dataclasses` out of the
    hook's start-up (see `kgbridge.detect.Detection`)."""

    __slots__ = ()
    root: Path
    slug: str

    @property
    def memory_dir(self) -> Path:
        return memory_dir(self.root)

    @property
    def ledger_dir(self) -> Path:
        return claude_home() / "ledger" / self.slug

    @property
    def ways_file(self) -> Path:
        return self.root / ".claude" / "ways.json"


def resolve(start: Path | str | None = None) -> Project:
    root = find_root(Path(start) if start is not None else Path.cwd())
    return Project(root=root, slug=slugify(root.name))


def vetoed(project: Project) -> bool:
    """docs/reference.md §2: `{"reflection": {"kg": false}}` is the veto; the project file wins over the user's."""
    for ways in (project.ways_file, claude_home() / "ways.json"):
        reflection = read_json(ways).get("reflection")
        if isinstance(reflection, dict) and "kg" in reflection:
            return reflection["kg"] is False
    return False
