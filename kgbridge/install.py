"""Merge kgbridge's hook entries into Claude Code or Codex settings, idempotently and reversibly.

Invariants: other hooks and keys are never touched; our entries are recognised by the
`kgbridge-hook` command and replaced, so installing twice equals installing once; uninstall removes
exactly our entries and restores `autoDreamEnabled` to what it was before the first install (the
previous value is kept in the state directory). A settings file that is not a JSON object is
refused, never overwritten. `claude_hooks_status` says when the plugin and install-hooks both
install them (every hook would run twice).
"""

from __future__ import annotations

import difflib
import json
import shlex
import shutil
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from kgbridge.hook import DETACHED
from kgbridge.project import Harness, Project, claude_home, codex_home
from kgbridge.state import load_json_object, read_json, state_root
from ontology.atomic import atomic_write
from ontology.errors import BadRequest

MARKER = "kgbridge-hook"
# Claude Code: capture memory writes as they happen, and rescan at the session's edges.
# PreToolUse redirects writes into ingestion while the projection is mounted (projection ADR).
CLAUDE_FILE_TOOLS = "Write|Edit|MultiEdit"
CLAUDE_SHELL_TOOL = "Bash"  # PreToolUse only: rm / mv of memory files in the mounted slot (ADR 0012)
CLAUDE_EVENTS: dict[str, str | None] = {
    "SessionStart": None, "PreToolUse": CLAUDE_FILE_TOOLS, "PostToolUse": CLAUDE_FILE_TOOLS,
    "Stop": None, "SubagentStop": None, "PreCompact": None, "SessionEnd": None,
}
# Run in the background (Claude Code's `async`): nothing waits on their output, and a capture they
# miss at teardown is made by the next rescan (ADR 0010).
CLAUDE_ASYNC = frozenset({"PostToolUse", "SubagentStop", "PreCompact", "SessionEnd"})
# Codex (0.169 fires all of these): edits arrive as apply_patch; the rescans at the edges also pick up
# its own memory notes, which it may write with a shell command no PostToolUse matcher sees. No
# PreToolUse: nothing is mounted for Codex, its memory comes back as SessionStart context.
CODEX_EVENTS: dict[str, str | None] = {
    "SessionStart": None, "PostToolUse": "apply_patch|Edit|Write",
    "Stop": None, "SubagentStop": None, "PreCompact": None, "SessionEnd": None,
}


class Gate(Enum):
    """What the POSIX-sh gate in front of `kgbridge-hook` checks before Python starts (ADR 0010): a
    shell and a builtin `case` cost ~2 ms, Python's start-up ~25 ms, and most events need nothing."""

    MARKDOWN = "markdown"  # the payload names a `.md` file (memory files are markdown)
    MOUNTED = "mounted"  # the payload names a FUSE mount point (the PreToolUse redirect is only for the projection)
    BACKGROUND = "background"  # nothing reads the output: the hook runs detached and the agent goes on


# Per harness and event, the gates; an event without any runs `kgbridge-hook` directly (SessionStart:
# its output is the context). Codex 0.169 has no `async`, so the gate gives it one; Claude Code's own
# `async` (CLAUDE_ASYNC) covers the rest of its events, and Stop's rescan goes to the background too.
GATES: dict[Harness, dict[str, frozenset[Gate]]] = {
    Harness.CLAUDE: {"PreToolUse": frozenset({Gate.MARKDOWN, Gate.MOUNTED}), "PostToolUse": frozenset({Gate.MARKDOWN}),
                     "Stop": frozenset({Gate.BACKGROUND})},
    Harness.CODEX: {"PostToolUse": frozenset({Gate.MARKDOWN, Gate.BACKGROUND}),
                    **{event: frozenset({Gate.BACKGROUND}) for event in ("Stop", "SubagentStop", "PreCompact",
                                                                          "SessionEnd")}},
}


# A FUSE mount point the payload names (capture compares the same strings). A mount point the table
# escapes (`\\040` for a space) or JSON would escape (`"`) cannot be matched here: Python decides.
MOUNTED_CHECK = (r'if [ -r /proc/self/mounts ]; then m=; while read -r _ d t _; do case $t in fuse*) '
                 r'case $d in *[\\\"]*) m=1;; esac; case $p in *"$d"/*) m=1;; esac;; esac; '
                 r'done </proc/self/mounts; [ -n "$m" ] || exit 0; fi')


def gated(command: str, gates: frozenset[Gate]) -> str:
    """`command` behind a POSIX-sh prefilter (both agents run a hook command with `sh -c`): the
    payload is read once, checked with builtins only, and handed on unchanged when Python is needed.
    Where a check cannot be made (no /proc), Python decides, as it always did."""
    if not gates:
        return command
    checks = ["p=$(cat)"]
    if Gate.MARKDOWN in gates:
        checks.append("case $p in *.md*) ;; *) exit 0;; esac")
    if Gate.MOUNTED in gates:
        checks.append(MOUNTED_CHECK)
    if Gate.BACKGROUND in gates:
        checks.append(f'{{ printf %s "$p" | {command} {DETACHED}; }} >/dev/null 2>&1 &')
    else:
        checks.append(f'printf %s "$p" | {command}')
    return "; ".join(checks)


HOOK_TIMEOUT_S = 10  # our hook returns in well under a second; this only bounds a pathological case
# Codex clamps a SessionEnd hook to 3 s and warns on every session when asked for more.
CODEX_TIMEOUTS_S = {"SessionEnd": 3}
# Codex cuts SessionStart context above ~2,500 tokens unless the hook sets a limit; ours is rendered
# to CODEX_CONTEXT_BYTES (kgbridge.capture), and no tokenizer counts more tokens than bytes, so a
# limit of that many tokens always lets it through whole.
CODEX_CONTEXT_LIMIT_TOKENS = 10_000
AUTO_DREAM_WHY = ("autoDreamEnabled=false: background consolidation would rewrite memory files behind the "
                  "projection; kgbridge keeps every version as evidence instead.")
_ABSENT = "__absent__"


class SettingsInvalid(BadRequest, ValueError):
    """A harness settings file we cannot parse: never overwritten, the user fixes it first."""


@dataclass(frozen=True)
class Plan:
    path: Path
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.before.splitlines(True), self.after.splitlines(True),
                                            f"{self.path} (before)", f"{self.path} (after)"))


def hook_command(harness: Harness) -> str:
    script = shlex.quote(shutil.which(MARKER) or str(Path(sys.executable).parent / MARKER))
    return f"{script} --harness {Harness.CODEX}" if harness == Harness.CODEX else script


def _handlers(harness: Harness, event: str, command: str) -> list[dict[str, object]]:
    handler: dict[str, object] = {"type": "command", "command": gated(command, GATES[harness].get(event, frozenset())),
                                  "timeout": HOOK_TIMEOUT_S}
    if harness == Harness.CODEX:
        handler["timeout"] = CODEX_TIMEOUTS_S.get(event, HOOK_TIMEOUT_S)
        if event == "SessionStart":
            handler["additionalContextLimit"] = CODEX_CONTEXT_LIMIT_TOKENS
    elif event in CLAUDE_ASYNC:
        handler["async"] = True
    return [handler]


def wiring(harness: Harness, command: str) -> dict[str, list[dict[str, object]]]:
    """The hook groups per event: what install-hooks merges and what hooks/ ships as files. Claude
    Code's file tools get one group per tool whose `if` lets only `.md` paths start a process; its
    Bash tool gets a PreToolUse group too (`rm`/`mv` in the mounted slot, ADR 0012), without an `if`
    (a compound command matches no single rule): the gate starts Python only for a command naming a
    `.md` file under a mounted FUSE path."""
    groups: dict[str, list[dict[str, object]]] = {}
    for event, matcher in (CODEX_EVENTS if harness == Harness.CODEX else CLAUDE_EVENTS).items():
        if harness == Harness.CLAUDE and matcher == CLAUDE_FILE_TOOLS:
            groups[event] = [{"matcher": tool, "hooks": [{**h, "if": f"{tool}(**/*.md)"}
                                                         for h in _handlers(harness, event, command)]}
                             for tool in matcher.split("|")]
            if event == "PreToolUse":
                groups[event].append({"matcher": CLAUDE_SHELL_TOOL, "hooks": _handlers(harness, event, command)})
        else:
            groups[event] = [{**({"matcher": matcher} if matcher else {}), "hooks": _handlers(harness, event, command)}]
    return groups


def settings_path(project: Project, harness: Harness, scope: str) -> Path:
    if harness == Harness.CODEX:
        return (project.root / ".codex" if scope == "project" else codex_home()) / "hooks.json"
    return (project.root / ".claude" if scope == "project" else claude_home()) / "settings.json"


def _load(path: Path) -> tuple[str, dict[str, object]]:
    return load_json_object(path, SettingsInvalid)


def _without_ours(hooks: dict[str, object]) -> dict[str, object]:
    cleaned: dict[str, object] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            cleaned[event] = groups
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                inner = [h for h in group["hooks"] if not (isinstance(h, dict) and MARKER in str(h.get("command", "")))]
                if inner:
                    kept.append({**group, "hooks": inner})
            else:
                kept.append(group)
        if kept:
            cleaned[event] = kept
    return cleaned


def plan(path: Path, harness: Harness, *, uninstall: bool = False) -> Plan:
    before, data = _load(path)
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    hooks = _without_ours(hooks)  # type: ignore[arg-type]
    backups = read_json(state_root() / "install-backup.json")
    if not uninstall:
        for event, event_groups in wiring(harness, hook_command(harness)).items():
            hooks.setdefault(event, []).extend(event_groups)  # type: ignore[union-attr]
    if hooks:
        data["hooks"] = hooks
    else:
        data.pop("hooks", None)
    if harness == Harness.CLAUDE:
        if uninstall:
            previous = backups.get(str(path), {}).get("autoDreamEnabled", _ABSENT)  # type: ignore[union-attr]
            if previous == _ABSENT:
                data.pop("autoDreamEnabled", None)
            else:
                data["autoDreamEnabled"] = previous
        else:
            data["autoDreamEnabled"] = False
    existed = backups.get(str(path), {}).get("existed", True) if uninstall else True  # type: ignore[union-attr]
    after = json.dumps(data, indent=2) + "\n" if data or (before and existed) else ""
    return Plan(path, before, after)


def apply(p: Plan, harness: Harness, *, uninstall: bool = False) -> None:
    backup_file = state_root() / "install-backup.json"
    backups = read_json(backup_file)
    if not uninstall and str(p.path) not in backups:  # what to restore: recorded at the first install only
        _, data = _load(p.path)
        backups[str(p.path)] = {"existed": p.path.exists(), "autoDreamEnabled": data.get("autoDreamEnabled", _ABSENT)}
        atomic_write(backup_file, json.dumps(backups, indent=2).encode())
    if p.changed:
        if p.after:
            atomic_write(p.path, p.after.encode(), mode=0o644)
        else:
            p.path.unlink(missing_ok=True)
    if uninstall and str(p.path) in backups:
        backups.pop(str(p.path))
        atomic_write(backup_file, json.dumps(backups, indent=2).encode())


PLUGIN = "kgbridge"  # the plugin's name in hooks/.claude-plugin/plugin.json (any marketplace)


def _claude_settings(project: Project) -> list[Path]:
    """Claude Code's settings files for this project, lowest precedence first."""
    return [claude_home() / "settings.json", project.root / ".claude" / "settings.json",
            project.root / ".claude" / "settings.local.json"]


def enabled_plugin(project: Project) -> str | None:
    """`kgbridge@<marketplace>` when Claude Code has the plugin enabled here (the last settings file
    that says anything about it wins), else None."""
    state: dict[str, bool] = {}
    for path in _claude_settings(project):
        plugins = read_json(path).get("enabledPlugins")
        if isinstance(plugins, dict):
            state.update({k: bool(v) for k, v in plugins.items() if str(k).split("@", 1)[0] == PLUGIN})
    return next((name for name, on in state.items() if on), None)


def settings_with_hooks(project: Project) -> list[Path]:
    """Claude Code settings files that carry kgbridge's hooks (written by install-hooks)."""
    return [path for path in _claude_settings(project) if MARKER in json.dumps(read_json(path).get("hooks", {}))]


def claude_hooks_status(project: Project) -> str:
    """One line for `kgbridge status`: who installs kgbridge's hooks for Claude Code here. Both the
    plugin and install-hooks run every hook twice (deliveries are idempotent, the cost is not)."""
    plugin, files = enabled_plugin(project), settings_with_hooks(project)
    carriers = [f"plugin {plugin}"] * bool(plugin) + [str(path) for path in files]
    if not carriers:
        return "not installed (kgbridge install-hooks, or the plugin: see README)"
    if len(carriers) == 1:
        return carriers[0]
    remove = "`kgbridge install-hooks --uninstall [--user]`" + (f" or `claude plugin uninstall {plugin}`" if plugin else "")
    return (f"installed {len(carriers)} times, every hook runs {len(carriers)} times: {', '.join(carriers)}; "
            f"keep one ({remove})")


def mcp_instruction(harness: Harness, url: str, token: bool) -> str:
    """The agent's own command that registers kgbridge's MCP server (ADR 0010: install-hooks prints it
    and never runs it; the agent owns that configuration). A token is named, never printed."""
    endpoint = f"{url.rstrip('/')}/mcp"
    if harness == Harness.CODEX:
        auth = " --bearer-token-env-var KG_TOKEN" if token else ""
        return f"codex mcp add kgbridge --url {endpoint}{auth}"
    auth = ' --header "Authorization: Bearer $KG_TOKEN"' if token else ""
    return f"claude mcp add --transport http --scope user kgbridge {endpoint}{auth}"
