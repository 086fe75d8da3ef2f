"""The `kgbridge` command line: one verb per user intent, thin over the modules that do the work.

Invariant: every verb accepts `--root` (else $KG_KNOWLEDGE_ROOT, else ~/Knowledge) and resolves the
ontology from `--ontology` or, failing that, from the project around the current directory.
Human output goes through rich; `--json` prints one JSON document for machines. A `UserError` (or
a bad option) is caught once, in `main`: one plain line on stderr, exit 2, no traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from kgbridge import project as project_mod
from kgbridge.activation import TransportChoice
from kgbridge.project import Harness
from ontology.errors import NotFound, UserError
from ontology.evidence import Label
from ontology.layout import knowledge_root

if TYPE_CHECKING:
    from ontology import queries
    from ontology.ingest import Ontology

# The graph (ontology.ingest, .search, .queries) is imported by the verbs that read or write it, not
# here: it is most of this module's start-up, and activate / status / flush / install-hooks /
# deactivate, which hooks, scripts and the tests run often, never touch it.

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="kgbridge: an evidential memory bridge for coding agents.")
console = Console()
err = Console(stderr=True)

RootOpt = typer.Option(None, "--root", help="Knowledge root (default $KG_KNOWLEDGE_ROOT or ~/Knowledge).")
OntologyOpt = typer.Option(None, "--ontology", "-o", help="Ontology slug (default: the current project's).")
JsonOpt = typer.Option(False, "--json", help="Print JSON for machines.")


def _slug(ontology: Optional[str]) -> str:
    return ontology or project_mod.resolve().slug


def _open(root: Optional[Path], ontology: Optional[str], *, create: bool = False) -> Ontology:
    from ontology.ingest import Ontology

    return Ontology(knowledge_root(root), _slug(ontology), create=create)


def _files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
        else:
            out.append(path)
    return out


@app.command()
def ingest(paths: list[Path] = typer.Argument(..., help="Files or directories to ingest."),
           root: Optional[Path] = RootOpt, ontology: Optional[str] = OntologyOpt, as_json: bool = JsonOpt) -> None:
    """Ingest artifacts (files or directories); prints new / duplicate / rejected."""
    from ontology.artifact import Channel
    from ontology.ingest import BATCH_SIZE, Status

    onto = _open(root, ontology, create=True)
    files = _files(paths)
    results = []
    with Progress(console=err, transient=True, disable=as_json or len(files) < 20) as progress:
        task = progress.add_task("ingesting", total=len(files))
        for start in range(0, len(files), BATCH_SIZE):  # one transaction per batch (ontology.ingest)
            chunk = files[start:start + BATCH_SIZE]
            results += onto.ingest_paths(chunk, Channel.CLI)
            progress.advance(task, len(chunk))
    onto.close()
    summary = {s.value: sum(r.status is s for r in results) for s in Status}
    if as_json:
        print(json.dumps({"ontology": onto.slug, "summary": summary, "results": [r.to_json() for r in results]}))
        return
    for r in results:
        if r.status is Status.REJECTED:
            console.print(f"[yellow]rejected[/yellow] {escape(r.filename)}: {escape(r.reason or '')}")
    console.print(f"[bold]{onto.slug}[/bold]: {summary['new']} new, {summary['duplicate']} duplicate, "
                  f"{summary['rejected']} rejected")


@app.command()
def rebuild(root: Optional[Path] = RootOpt, ontology: Optional[str] = OntologyOpt) -> None:
    """Regenerate the graph database from the archive."""
    onto = _open(root, ontology)
    count = onto.rebuild()
    console.print(f"[bold]{onto.slug}[/bold]: rebuilt from {count} archived artifacts")


def _assertion_table(items: list[queries.AssertionView], title: str) -> Table:
    table = Table(title=title, show_lines=False)
    for col in ("concept", "assertion", "label", "bel", "pl", "K", "for/against"):
        table.add_column(col, overflow="fold")
    for a in items:
        # Text(): the author's words are shown verbatim (rich would read `[a-z]` or `[x]` as markup)
        table.add_row(Text(a.concept), Text(a.text), a.status, f"{a.belief:.2f}", f"{a.plausibility:.2f}", f"{a.conflict:.2f}",
                      f"{a.n_for}/{a.n_against}")
    return table


@app.command()
def show(concept: Optional[str] = typer.Argument(None, help="A concept key; omit to list assertions."),
         status: Optional[Label] = typer.Option(None, case_sensitive=False, help="Only assertions with this label."),
         root: Optional[Path] = RootOpt, ontology: Optional[str] = OntologyOpt, as_json: bool = JsonOpt) -> None:
    """Show assertions with label, belief, plausibility, conflict and sources (or one concept)."""
    from ontology import queries
    from projection.topic import said_on

    onto = _open(root, ontology)
    with onto.reader() as conn:
        if concept:
            data = queries.concept(conn, concept)
            if data is None:
                raise NotFound(f"no concept {concept!r} in {onto.slug}: `kgbridge search` finds concepts by text")
            if as_json:
                print(json.dumps(data, default=str))
                return
            console.print(f"[bold]{escape(data['key'])}[/bold] ({data['type']}) {escape(data['description'] or '')}")
            items = queries.assertions(conn, concept=concept, standing=True)  # ADR 0012: withdrawn ones apart
            console.print(_assertion_table(items, "assertions"))
            _withdrawn_note(len(queries.assertions(conn, concept=concept, with_sources=False)) - len(items))
            for a in items:
                for s in a.sources:
                    console.print(f"  #{a.id} {s.stance_word:>7} {s.source} v{s.version} {s.timestamp[:10]}"
                                  f"{' (implied)' if s.implied else ''}", markup=False)
            for a in data["assertions"]:  # ADR 0009: an older claim names what replaced it
                for u in a["superseded_by"]:
                    console.print(f"  #{a['id']} superseded by “{u['by']}” ({u['source']}, "
                                  f"{said_on(u['date'], u['received'])}; {u['rule']})",
                                  markup=False)
                for u in a["updates"]:
                    console.print(f"  #{a['id']} updates: {u['old'] or '…'} → {u['new'] or '…'} ({u['rule']})",
                                  markup=False)
            return
        if as_json:
            items = queries.assertions(conn, status=status.value if status else None)
            print(json.dumps({"ontology": onto.slug, "counts": queries.counts(conn),
                              "assertions": [a.to_json() for a in items]}, default=str))
            return
        standing = queries.assertions(conn, status=status.value if status else None, standing=True)
        console.print(_assertion_table(standing, f"{onto.slug}: {len(standing)} assertions"))
        _withdrawn_note(len(queries.assertions(conn, status=status.value if status else None, with_sources=False))
                        - len(standing))
        console.print(queries.counts(conn))


def _withdrawn_note(n: int) -> None:
    """Claims every source withdrew (a deleted file, a version that no longer states them) are history:
    `kgbridge show CONCEPT --json` keeps them with their history (ADR 0012)."""
    if n:
        console.print(f"{n} withdrawn claim{'s' if n != 1 else ''} not listed (no source holds them now; "
                      "their history is in `kgbridge show CONCEPT --json`)", markup=False)


@app.command()
def search(query: str, root: Optional[Path] = RootOpt, ontology: Optional[str] = OntologyOpt,
           limit: int = typer.Option(20, min=1, help="Most hits to show."),
           status: Optional[list[str]] = typer.Option(
               None, "--status", help="Only assertions with this label (repeatable; DISPUTED = CONTESTED or "
                                      "CONTRADICTORY)."),
           concept: Optional[str] = typer.Option(None, "--concept", help="Only this concept and its assertions."),
           since: Optional[str] = typer.Option(None, "--since", help="Only what changed on or after this date."),
           as_json: bool = JsonOpt) -> None:
    """Search concepts and assertions: all-terms hits first (phrase, near, all, then partial), labelled."""
    from ontology import search as search_mod

    onto = _open(root, ontology)
    filters = search_mod.parse_filters(status, concept, since)  # a SearchError is a UserError: see main()
    with onto.reader() as conn:
        hits = search_mod.search(conn, query, limit=limit, filters=filters)
    if as_json:
        print(json.dumps({"ontology": onto.slug, "query": query, "hits": [h.to_json() for h in hits]},
                         ensure_ascii=False))
        return
    table = Table(title=f"{len(hits)} hit{'' if len(hits) == 1 else 's'} for {query!r}")
    for col in ("kind", "match", "concept", "text", "label"):
        table.add_column(col, overflow="fold")
    for h in hits:
        # markup=False: results are shown verbatim (`[x]`, `~/path`, `snake_case` are the author's words)
        table.add_row(h.kind.value, h.match.value, Text(h.concept), Text(h.text), h.status or "")
    console.print(table)


UrlOpt = typer.Option(None, "--url", help="HTTP backend base URL (default $KG_URL).")
ProjectOpt = typer.Option(None, "--project", "-p", help="Project directory (default: current directory).")


@app.command()
def activate(project: Optional[Path] = ProjectOpt, root: Optional[Path] = RootOpt, url: Optional[str] = UrlOpt,
             transport: TransportChoice = typer.Option(TransportChoice.AUTO, help="How to create the ontology."),
             as_json: bool = JsonOpt) -> None:
    """Opt this project in: create its ontology (drop directory or POST /ontologies), lift a veto."""
    from kgbridge.activation import activate as do_activate

    proj = project_mod.resolve(project)
    done = do_activate(proj, root=root, url=url, transport=transport)
    if as_json:
        print(json.dumps(done))
    else:
        console.print(f"[green]active[/green] {done['slug']} via {done['transport']}: {done['target']}")


@app.command()
def deactivate(project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    """Veto this project (hard-off) in .claude/ways.json. Never deletes data."""
    from kgbridge.activation import deactivate as do_deactivate

    proj = project_mod.resolve(project)
    path = do_deactivate(proj)
    if as_json:
        print(json.dumps({"slug": proj.slug, "state": "hard-off", "ways_file": str(path)}))
    else:
        console.print(f"[yellow]hard-off[/yellow] {proj.slug}: veto written to {path}; data untouched")


@app.command()
def status(project: Optional[Path] = ProjectOpt, root: Optional[Path] = RootOpt, as_json: bool = JsonOpt) -> None:
    """State (inactive / active / hard-off), transport, backend, outbox depth, oldest item, refused.
    Exits 2 when the state directory cannot be written (the outbox cannot take new items)."""
    from kgbridge.activation import status as do_status

    info = do_status(project_mod.resolve(project), root=root)
    if as_json:
        print(json.dumps(info))
    else:
        table = Table(show_header=False, title=f"kgbridge: {info['slug']}")
        for key, value in info.items():
            table.add_row(key, str(value))
        console.print(table)
    if info.get("state_problem"):
        err.print(f"[red]{info['state_problem']}[/red]: new memory stays in its files until a rescan can queue it")
        raise typer.Exit(2)


@app.command()
def flush(project: Optional[Path] = ProjectOpt, root: Optional[Path] = RootOpt, as_json: bool = JsonOpt) -> None:
    """Deliver the outbox (oldest first) and anything new in the memory and ledger directories, then
    bring the kept session-start context up to date (ADR 0006).
    Exits 0 when nothing waits, 1 when items still wait (backend away), 2 when the state directory
    is unusable. Refused items go to `refused/` with the backend's answer; the rest go on."""
    from kgbridge.capture import refresh_context, rescan
    from kgbridge.detect import detect
    from kgbridge.state import ProjectState

    proj = project_mod.resolve(project)
    detection = detect(proj, root=root, use_cache=False)
    report = rescan(proj, detection)
    refresh_context(proj, detection)  # a session start the graph cannot answer in time reads it
    summary = ProjectState(proj.slug).summary()
    result = {"slug": proj.slug, "state": detection.state, "transport": detection.transport,
              "delivered": report.delivered, "refused_now": report.refused, "stopped": report.stopped, **summary}
    if as_json:
        print(json.dumps(result))
    else:
        oldest = f", oldest {summary['outbox_oldest_age_s']} s" if summary["outbox_oldest_age_s"] is not None else ""
        console.print(f"{proj.slug}: {detection.state} via {detection.transport}; delivered {report.delivered}, "
                      f"refused {report.refused}; waiting in outbox {summary['outbox_depth']}{oldest}; "
                      f"refused in all {summary['refused']} ({summary['refused_dir']})", markup=False)
        if report.stopped:
            err.print(f"stopped: {report.stopped}", markup=False)
    if summary["state_problem"]:
        err.print(f"[red]{summary['state_problem']}[/red]")
        raise typer.Exit(2)
    if summary["outbox_depth"]:
        raise typer.Exit(1)


@app.command("install-hooks")
def install_hooks(claude: bool = typer.Option(False, "--claude", help="Claude Code (default)."),
                  codex: bool = typer.Option(False, "--codex", help="Codex (.codex/hooks.json)."),
                  user: bool = typer.Option(False, "--user", help="User settings instead of the project's."),
                  dry_run: bool = typer.Option(False, "--dry-run", help="Show the diff, write nothing."),
                  uninstall: bool = typer.Option(False, "--uninstall", help="Remove kgbridge's hooks."),
                  trust_project: bool = typer.Option(False, "--trust-project",
                                                     help="Codex: also mark this project trusted (as `codex exec --trust`)."),
                  project: Optional[Path] = ProjectOpt) -> None:
    """Merge kgbridge's hook entries into the harness settings (idempotent; shows the diff)."""
    from kgbridge.install import AUTO_DREAM_WHY, apply, plan, settings_path

    harness = Harness.CODEX if codex and not claude else Harness.CLAUDE
    proj = project_mod.resolve(project)
    path = settings_path(proj, harness, "user" if user else "project")
    p = plan(path, harness, uninstall=uninstall)
    console.print(p.diff() or f"{path}: already up to date", markup=False, highlight=False, soft_wrap=True)
    if harness == Harness.CLAUDE and not uninstall:
        console.print(AUTO_DREAM_WHY)
    if not dry_run:
        apply(p, harness, uninstall=uninstall)
        if harness == Harness.CODEX and not uninstall:
            _trust_codex_hooks(proj.root, project_scope=not user, trust_project=trust_project)
    if not uninstall:
        from kgbridge.activation import DEFAULT_URL
        from kgbridge.detect import backend_token, backend_url
        from kgbridge.install import mcp_instruction

        console.print(f"MCP tools (kg_search, kg_concept, ...), not registered by install-hooks: "
                      f"{mcp_instruction(harness, backend_url() or DEFAULT_URL, bool(backend_token()))}",
                      markup=False, highlight=False, soft_wrap=True)
    if harness == Harness.CLAUDE and not uninstall:
        from kgbridge.install import claude_hooks_status, enabled_plugin

        carriers = claude_hooks_status(proj)
        if carriers.startswith("installed "):
            err.print(f"warning: kgbridge's hooks are {carriers}", markup=False, highlight=False, soft_wrap=True)
        elif dry_run and enabled_plugin(proj):
            err.print(f"warning: the {enabled_plugin(proj)} plugin already installs these hooks; with both, "
                      f"every hook runs twice", markup=False, highlight=False, soft_wrap=True)


def _trust_codex_hooks(root: Path, *, project_scope: bool, trust_project: bool) -> None:
    """Codex runs only hooks it trusts: record trust for ours, or say exactly what is missing."""
    from kgbridge import codex

    try:
        if project_scope and trust_project:
            codex.trust_project(root)
        if project_scope and not codex.project_trusted(root):
            console.print(f"not yet active: {codex.trust_project_instruction(root)}; then run "
                          f"`kgbridge install-hooks --codex` again to trust the hooks (or use --trust-project).",
                          markup=False, highlight=False, soft_wrap=True)
            return
        trusted = codex.trust_ours(root)
    except codex.CodexUnavailable as exc:
        console.print(f"hooks not trusted yet ({exc}): open Codex in {root}, type /hooks and trust "
                      f"the kgbridge-hook entries, or run this command again with codex on PATH.",
                      markup=False, highlight=False, soft_wrap=True)
        return
    console.print(f"Codex: trusted {len(trusted)} kgbridge hook(s); `kgbridge status` shows codex_hooks.",
                  markup=False, highlight=False, soft_wrap=True)


@app.command()
def mount(at: Optional[Path] = typer.Option(None, "--at", help="Mount point (default: the project's memory dir)."),
          ontology: Optional[str] = OntologyOpt, root: Optional[Path] = RootOpt,
          overlay: bool = typer.Option(True, help="Keep the directory's own files visible (read-only).")) -> None:
    """Mount the read-only projection (MEMORY.md + topic files) over the agent's memory slot."""
    from kgbridge.state import ProjectState
    from projection.mount import mount as do_mount

    proj = project_mod.resolve()
    target = at or proj.memory_dir
    pid = do_mount(knowledge_root(root), _slug(ontology), target, state_dir=ProjectState(_slug(ontology)).dir,
                   overlay=overlay)
    console.print(f"mounted {_slug(ontology)} at {target} (daemon pid {pid}); `kgbridge unmount` to restore")


@app.command()
def unmount(at: Optional[Path] = typer.Option(None, "--at", help="Mount point (default: the project's memory dir)."),
            ontology: Optional[str] = OntologyOpt) -> None:
    """Unmount the projection (lazily if busy or orphaned); the host directory is left as it was."""
    from kgbridge.state import ProjectState
    from projection.mount import unmount as do_unmount

    target = at or project_mod.resolve().memory_dir
    was = do_unmount(target, ProjectState(_slug(ontology)).dir)
    console.print(f"unmounted {target}" if was else f"nothing mounted at {target}")


def _same_or_inside(path: Path, directory: Path) -> bool:
    a, b = Path(path).expanduser().resolve(), Path(directory).expanduser().resolve()
    return a == b or b in a.parents


@app.command("project")
def project_cmd(to: Path = typer.Option(..., "--to", help="Directory to write MEMORY.md and topic files into."),
                ontology: Optional[str] = OntologyOpt, root: Optional[Path] = RootOpt) -> None:
    """Write the projection as plain files (where FUSE is unavailable) into an empty directory."""
    from projection.view import ProjectionView, TargetHoldsFiles, materialize

    if any(_same_or_inside(to, slot) for slot in (project_mod.resolve().memory_dir, project_mod.codex_memories())):
        fail(f"{to} is a memory folder the hooks capture from: files written there would come back as the "
             f"agent's own. Write the projection to another directory, or use `kgbridge mount`.")
    onto = _open(root, ontology)
    try:
        names = materialize(ProjectionView(onto), to)
    except TargetHoldsFiles as exc:
        fail(str(exc))
    console.print(f"wrote {len(names)} files to {to}")


@app.command()
def serve(root: Optional[Path] = RootOpt,
          host: str = typer.Option("127.0.0.1", help="Bind address; off loopback a token is required."),
          port: int = typer.Option(8765, help="TCP port."),
          token: Optional[str] = typer.Option(None, help="Bearer token (default $KG_TOKEN).")) -> None:
    """Run the graph server: drop-directory watcher, HTTP API and MCP (/mcp) in one process."""
    from kgbridge.detect import backend_token
    from kgbridge.serve import serve as run_server

    run_server(knowledge_root(root), host=host, port=port, token=backend_token(token))


def fail(message: str) -> NoReturn:
    """One line on stderr, exit 2. Plain `print`, not rich: markup would eat text such as
    `[a-z0-9-]`, and wrapping at the terminal's width would split the line."""
    print(f"kgbridge: {' '.join(message.split())}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    try:
        code = app(sys.argv[1:] or ["--help"], standalone_mode=False)  # no verb: the help, exit 0
    except BrokenPipeError:  # `kgbridge show | head` is normal use
        sys.exit(0)
    except typer.TyperException as exc:  # unknown option, a value outside its choices (named in the message)
        ctx = getattr(exc, "ctx", None)
        fail(exc.format_message() + (f" (see `{ctx.command_path} --help`)" if ctx is not None else ""))
    except typer.Abort:
        fail("aborted")
    except (UserError, OSError) as exc:  # OSError: a path the user named cannot be read or written
        fail(str(exc))
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
