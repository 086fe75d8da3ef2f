"""activate / status / deactivate for one project (docs/reference.md §3, ADR-141).

Invariants: deactivate only writes the veto into the project's `.claude/ways.json` (atomically,
keeping every other key) and never deletes data; activate creates the ontology (drop directory, or
`POST /ontologies` over HTTP) and lifts a veto; a ways.json that is not valid JSON is never
overwritten (the user's file is theirs), the verb fails with a clear error instead.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

from kgbridge.codex import hooks_status as codex_hooks_status
from kgbridge.install import claude_hooks_status
from kgbridge.detect import HTTP_TIMEOUT_S, Transport, backend_token, backend_url, detect, forget, http_get
from kgbridge.project import Project, claude_home, vetoed
from kgbridge.state import ProjectState, load_json_object, read_json
from ontology.atomic import atomic_write
from ontology.errors import BadRequest
from ontology.clock import utc_from_epoch
from ontology.layout import knowledge_root, ontology_paths

DEFAULT_URL = "http://127.0.0.1:8765"
# Activation is a deliberate, interactive act; it may wait longer than a hook's probe.
ACTIVATE_TIMEOUT_S = 5.0


class WaysFileInvalid(BadRequest, ValueError):
    """ways.json exists but is not a JSON object; we refuse to overwrite it."""


class ActivationFailed(BadRequest):
    """The backend could not be asked, or refused: nothing was activated."""


class TransportChoice(StrEnum):
    """How `activate` creates the ontology: `auto` takes the drop directory when the knowledge root
    is on this machine, else HTTP when $KG_URL is set."""

    AUTO = "auto"
    DIR = Transport.DIR.value
    HTTP = Transport.HTTP.value


def _load_ways(path: Path) -> dict[str, object]:
    return load_json_object(path, WaysFileInvalid)[1]


def _set_kg(path: Path, value: bool | None) -> None:
    """Set (or with None remove) `reflection.kg`, keeping every other key; atomic."""
    ways = _load_ways(path)
    reflection = ways.get("reflection")
    reflection = dict(reflection) if isinstance(reflection, dict) else {}
    if value is None:
        if "kg" not in reflection:
            return
        reflection.pop("kg")
    else:
        reflection["kg"] = value
    ways["reflection"] = reflection
    atomic_write(path, (json.dumps(ways, indent=2) + "\n").encode(), mode=0o644)


def deactivate(project: Project) -> Path:
    _set_kg(project.ways_file, False)
    forget(project)
    return project.ways_file


def activate(project: Project, *, root: Path | None = None, url: str | None = None, token: str | None = None,
             transport: TransportChoice = TransportChoice.AUTO) -> dict[str, object]:
    """Create the ontology and lift any veto; returns what was done."""
    reflection = _load_ways(project.ways_file).get("reflection")
    if isinstance(reflection, dict) and reflection.get("kg") is False:
        _set_kg(project.ways_file, None)
    if vetoed(project):  # still vetoed by the user-level file: the project file wins
        _set_kg(project.ways_file, True)
    root = knowledge_root(root)
    url, token = backend_url(url), backend_token(token)
    use_http = transport == TransportChoice.HTTP or (transport == TransportChoice.AUTO and url is not None
                                                     and not root.exists())
    if use_http:
        if not url:
            raise ActivationFailed("HTTP activation needs the backend's URL: set KG_URL or pass --url")
        import urllib.error
        import urllib.request

        body = json.dumps({"name": project.slug}).encode()
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
        request = urllib.request.Request(f"{url}/ontologies", data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=ACTIVATE_TIMEOUT_S) as response:  # noqa: S310
                created = response.status == 201
        except urllib.error.HTTPError as exc:
            if exc.code != 409:
                raise ActivationFailed(f"backend refused activation: HTTP {exc.code}") from None
            created = False
        except OSError as exc:  # refused, timed out, no such host
            raise ActivationFailed(f"cannot reach the backend at {url} ({getattr(exc, 'reason', exc)}): "
                                   "start `kgbridge serve` there, or fix KG_URL / --url") from None
        target = f"{url}/ingest"
    else:
        ingest = ontology_paths(root, project.slug).ingest
        created = not ingest.exists()
        ingest.mkdir(parents=True, exist_ok=True)
        target = str(ingest)
    ProjectState(project.slug).mark_known()
    forget(project)
    return {"slug": project.slug, "transport": Transport.HTTP if use_http else Transport.DIR, "target": target,
            "created": created}


def backend_health(url: str | None, token: str | None) -> str:
    try:
        status, body = http_get(f"{(url or DEFAULT_URL).rstrip('/')}/health", token, HTTP_TIMEOUT_S * 4)
        return str(json.loads(body or b"{}").get("status", f"HTTP {status}")) if status == 200 else f"HTTP {status}"
    except (OSError, ValueError):
        return "unreachable"


def status(project: Project, *, root: Path | None = None) -> dict[str, object]:
    detection = detect(project, root=root, use_cache=False)
    state = ProjectState(project.slug)
    last = read_json(state.last_delivery)
    return {
        "project": str(project.root),
        "slug": project.slug,
        **{k: v for k, v in detection._asdict().items() if k != "cached"},
        "vetoed": vetoed(project),
        "knowledge_root": str(knowledge_root(root)),
        "memory_dir": str(project.memory_dir),
        "ledger_dir": str(project.ledger_dir),
        "claude_home": str(claude_home()),
        **state.summary(),
        "last_delivery": utc_from_epoch(float(last["at"])) if "at" in last else None,  # type: ignore[arg-type]
        "backend": backend_health(backend_url(), backend_token()),
        "claude_hooks": claude_hooks_status(project),
        "codex_hooks": codex_hooks_status(project.root),
    }
