"""The real Codex binary, driven by a scripted fake Responses API: install-hooks' hooks run once
trusted (and status says what is missing until then), Codex's own memory notes reach the ontology,
the next session gets the projection as SessionStart context, whole, and notes Codex deletes or
renames are forgotten or moved (ADR 0012)."""

from __future__ import annotations

import hashlib
import json
import re
import shlex

import pytest

from support.agents import AgentSandbox, conversation, memory_file, wait_until

DB_FACT = "The integration tests use Postgres"
NOTE_ONE = f"- {DB_FACT}\n- The test runner is pytest"
NOTE_TWO = "- The integration tests do not use Postgres"
# Codex's own summary; it names the notes directory in its instructions only when one exists.
SUMMARY = "v1\n## User preferences\n- Answers in short sentences\n"
# Enough concepts, in a script of two bytes a letter, that MEMORY.md at full size (24 KB), or cut
# to 10,000 characters, would be far above Codex's cut at 2,500 tokens of 4 bytes.
FILLER_CONCEPTS = 120


def note(box: AgentSandbox, slug: str, text: str) -> list[dict]:
    """A session whose model appends an ad-hoc memory note, named as Codex names them."""
    return [{"write": {"path": str(box.codex_notes / note_name(slug)), "content": text}}, {"text": "Noted."}]


def note_name(slug: str) -> str:
    return f"2026-11-30T02-15-00-{slug}.md"


def source(slug: str) -> str:
    """The note's source identity, compared without case (graphs have folded file names)."""
    return f"memory:shop/{note_name(slug)}".lower()


def labelled_sources(box: AgentSandbox, text: str) -> tuple[str, set[str]]:
    status, sources = box.sources_of(text)
    return status, {s.lower() for s in sources}


def codex_config(box: AgentSandbox) -> None:
    """Turn Codex's own memory on, with a summary, so its instructions name the notes directory."""
    with open(box.codex_home / "config.toml", "a", encoding="utf-8") as config:
        config.write("\n[features]\nmemories = true\n")
    box.codex_notes.mkdir(parents=True)
    (box.codex_home / "memories_v2" / "memory_summary.md").write_text(SUMMARY)


def install(box: AgentSandbox, *extra: str) -> str:
    assert box.kg("activate").returncode == 0
    done = box.kg("install-hooks", "--codex", *extra)
    assert done.returncode == 0, done.stderr
    return done.stdout


def codex_hooks(box: AgentSandbox) -> str:
    done = box.kg("status", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["codex_hooks"]


def seed_concepts(box: AgentSandbox, count: int) -> None:
    """Many unrelated memory files dropped for the server, so the projection is large."""
    for i in range(count):
        data = memory_file(f"topic-{i:03d}", f"что команда решила об области {i}",
                           f"- Областью {i} владеет команда {i % 7}\n- Область {i} выходит за флагом")
        digest = hashlib.sha256(data.encode()).hexdigest()[:12]
        tmp = box.ingest / f".topic_{i:03d}.md"
        tmp.write_text(data)
        tmp.rename(box.ingest / f"memory.{digest}.topic_{i:03d}.md")


def test_codex_runs_kgbridge_hooks_once_trusted_and_status_says_what_is_missing(codex_box, serve):
    serve(codex_box)
    codex_config(codex_box)
    printed = install(codex_box)
    assert "codex exec --trust" in printed  # the exact instruction, and the status line
    assert codex_hooks(codex_box).startswith("project not trusted: ")
    codex_box.codex_session("kg-e2e-untrusted", note(codex_box, "untrusted", NOTE_ONE))
    assert not wait_until(lambda: bool(codex_box.assertions()), 3)  # Codex skipped the hooks
    install(codex_box, "--trust-project")
    assert codex_hooks(codex_box) == "trusted (6 hooks)"
    codex_box.codex_session("kg-e2e-trusted", note(codex_box, "trusted", NOTE_ONE))
    notes = {source("untrusted"), source("trusted")}
    # both notes arrive: the new one from PostToolUse, the earlier one from the Stop rescan
    assert wait_until(lambda: labelled_sources(codex_box, DB_FACT)[1] == notes, 30), codex_box.sources_of(DB_FACT)
    codex_box.settled()  # the summary comes with a rescan, which may still be delivering it
    summary = {a["text"] for a in codex_box.assertions()}
    assert "Answers in short sentences" in summary  # memory_summary.md, Codex's own memory, captured too


@pytest.mark.parametrize("transport", ["dir", "http"])
def test_codex_notes_that_disagree_give_a_disputed_claim_the_next_session_gets_whole(codex_box, serve, transport):
    server = serve(codex_box)
    if transport == "http":  # the backend is only reachable over HTTP: no knowledge root here
        codex_box.extra_env.update({"KG_URL": server.url, "KG_KNOWLEDGE_ROOT": str(codex_box.base / "elsewhere")})
    codex_config(codex_box)
    install(codex_box, "--trust-project")
    seed_concepts(codex_box, FILLER_CONCEPTS)
    first = codex_box.codex_session("kg-e2e-one", note(codex_box, "test-db", NOTE_ONE))
    assert "memories_v2/extensions/ad_hoc/notes/" in conversation(codex_box.fake.requests("kg-e2e-one")[0])
    codex_box.codex_session("kg-e2e-two", note(codex_box, "fast-tests", NOTE_TWO))
    both = {source("test-db"), source("fast-tests")}
    assert wait_until(lambda: labelled_sources(codex_box, DB_FACT) == ("CONTESTED", both), 60), \
        codex_box.sources_of(DB_FACT)
    assert wait_until(lambda: len(codex_box.assertions()) > FILLER_CONCEPTS, 60)
    assert codex_box.kg("flush").returncode == 0  # the kept context is current: no race (ADR 0006 session 12)
    codex_box.codex_session("kg-e2e-three", [{"text": "Hello."}])
    request = conversation(codex_box.fake.requests("kg-e2e-three")[0])
    context = re.search(r"kgbridge memory for this project.*?(?=\"})", request, re.S)
    assert context, "no SessionStart context in the first request"
    text = context.group(0)
    assert "CONTESTED" in text and DB_FACT in text
    assert "tokens truncated" not in text  # Codex did not cut it
    last = text.replace("\\n", "\n").rstrip("\n").rsplit("\n", 1)[-1]
    assert last.startswith("_") and last.endswith("._")  # through its closing line (footer or cut note)
    assert not re.search(r"\]\([^)]*\.md\)", text)  # no links to topic files Codex cannot open
    assert first.returncode == 0


def test_after_deactivate_nothing_flows_and_codex_sessions_still_run(codex_box, serve):
    serve(codex_box)
    codex_config(codex_box)
    install(codex_box, "--trust-project")
    assert codex_box.kg("deactivate").returncode == 0
    done = codex_box.codex_session("kg-e2e-off", note(codex_box, "off", NOTE_ONE))
    assert "Noted." in done.stdout
    assert (codex_box.codex_notes / note_name("off")).read_text().startswith(f"- {DB_FACT}")
    assert not wait_until(lambda: bool(codex_box.assertions()) or any(codex_box.ingest.iterdir()), 3)
    assert "kgbridge memory" not in conversation(codex_box.fake.requests("kg-e2e-off")[0])


def test_notes_codex_deletes_or_renames_stop_counting_once_and_a_rename_stays_one_source(codex_box, serve):
    serve(codex_box)
    codex_config(codex_box)
    install(codex_box, "--trust-project")
    freeze = "Deploys are frozen on Fridays"
    kept = codex_box.codex_notes / note_name("deploy-freeze")
    first = [{"write": {"path": str(codex_box.codex_notes / note_name("test-db")), "content": NOTE_ONE}},
             {"write": {"path": str(kept), "content": f"- {freeze}"}}, {"text": "Noted."}]
    codex_box.codex_session("kg-e2e-notes", first)
    assert wait_until(lambda: labelled_sources(codex_box, DB_FACT)[1] == {source("test-db")}, 30)
    assert wait_until(lambda: labelled_sources(codex_box, freeze)[1] == {source("deploy-freeze")}, 30)
    # Codex itself deletes one note and renames the other in one apply_patch
    renamed = codex_box.codex_notes / "2026-11-30T02-17-00-release-freeze.md"
    patch = (f"*** Begin Patch\n*** Delete File: {codex_box.codex_notes / note_name('test-db')}\n"
             f"*** Update File: {kept}\n*** Move to: {renamed}\n@@\n - {freeze}\n*** End Patch\n")
    codex_box.codex_session("kg-e2e-forget", [{"patch": patch}, {"text": "Done."}])
    assert renamed.exists() and not kept.exists()
    moved = f"memory:shop/{renamed.name}".lower()
    assert wait_until(lambda: labelled_sources(codex_box, DB_FACT)[1] == set(), 30), codex_box.sources_of(DB_FACT)
    assert wait_until(lambda: labelled_sources(codex_box, freeze)[1] == {moved}, 30), codex_box.sources_of(freeze)
    # a shell `rm` is reported to no hook but Stop: its rescan sends the tombstone
    codex_box.codex_session("kg-e2e-rm", [{"exec": f"rm {renamed}"}, {"text": "Removed."}])
    assert wait_until(lambda: labelled_sources(codex_box, freeze)[1] == set(), 30), codex_box.sources_of(freeze)


def test_codex_starts_python_only_for_a_memory_write_and_still_captures_it(codex_box, serve):
    """The gate in front of kgbridge-hook (ADR 0010): an apply_patch of a source file starts no Python,
    the memory note in the same session does and reaches the ontology; Stop's rescan runs detached."""
    serve(codex_box)
    codex_config(codex_box)
    codex_box.trace_hook_starts()
    install(codex_box, "--trust-project")
    source_file = codex_box.project / "app.py"
    steps = [{"write": {"path": str(source_file), "content": "DB = 'postgres'\n"}},
             *note(codex_box, "gated", NOTE_ONE)]
    done = codex_box.codex_session("kg-e2e-gated", steps)
    assert source_file.read_text() == "DB = 'postgres'\n" and "Noted." in done.stdout
    assert wait_until(lambda: labelled_sources(codex_box, DB_FACT)[1] == {source("gated")}, 30), \
        codex_box.sources_of(DB_FACT)
    codex_box.settled()  # Stop runs in the background: it may start after the note is in (and Codex is gone)
    starts = codex_box.hook_starts()
    posts = [s["tool_input"]["command"] for s in starts if s["hook_event_name"] == "PostToolUse"]
    assert len(posts) == 1 and note_name("gated") in posts[0] and "app.py" not in posts[0], posts
    assert {"SessionStart", "Stop"} <= {s["hook_event_name"] for s in starts}


def test_the_mcp_line_install_hooks_prints_registers_the_server_with_codex(codex_box, serve):
    server = serve(codex_box)
    codex_box.extra_env.update({"KG_URL": server.url, "KG_TOKEN": "secret-token"})
    printed = install(codex_box)
    line = next(x for x in printed.splitlines() if "codex mcp add" in x)
    assert "secret-token" not in printed  # the token is named, never printed
    command = shlex.split(line[line.index("codex mcp add"):])
    added = codex_box.run(str(codex_box.bin / "codex"), *command[1:])
    assert added.returncode == 0, added.stdout + added.stderr
    shown = codex_box.run(str(codex_box.bin / "codex"), "mcp", "get", "kgbridge", "--json")
    entry = json.loads(shown.stdout)
    assert entry["transport"]["url"] == f"{server.url}/mcp", shown.stdout
    assert entry["transport"].get("bearer_token_env_var") == "KG_TOKEN", shown.stdout


def test_a_note_codex_writes_to_forget_a_preference_is_not_shown_as_confirming_it(codex_box, serve):
    """Blind round 9 (ADR 0010, "Session 14 (codex14)"): asked to forget a preference, Codex writes an ad-hoc
    note naming it, while its summary still holds it. The next session's context must not call the
    preference confirmed (the request read as a second source of it did)."""
    serve(codex_box)
    codex_config(codex_box)  # the summary: "Answers in short sentences"
    install(codex_box, "--trust-project")
    forget = "Forget: the user wants answers in short sentences. They want full explanations now."
    codex_box.codex_session("kg-e2e-forget-pref", note(codex_box, "forget-short-answers", forget))
    kept = "They want full explanations now"
    assert wait_until(lambda: labelled_sources(codex_box, kept)[1] == {source("forget-short-answers")}, 30), \
        codex_box.assertions()
    # The summary comes with the SessionStart (or Stop) rescan, whose worker may deliver it after the note's
    # (a loaded machine: the note first, the summary not yet in, and `set()` here)
    codex_box.settled()
    assert labelled_sources(codex_box, "Answers in short sentences")[1] == {"memory:shop/memory_summary.md"}
    assert codex_box.kg("flush").returncode == 0
    codex_box.codex_session("kg-e2e-after-forget", [{"text": "Hello."}])
    request = conversation(codex_box.fake.requests("kg-e2e-after-forget")[0])
    context = re.search(r"kgbridge memory for this project.*?(?=\"})", request, re.S)
    assert context and kept in context.group(0), request[-3000:]
    assert "confirmed" not in context.group(0) and "Forget:" not in context.group(0), context.group(0)
