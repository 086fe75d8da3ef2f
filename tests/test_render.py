"""The budgeted renderer and the ranking: budgets hold by construction on adversarial graphs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projection.rank import ConceptStats, rank
from projection.render import (DISPUTED_SHARE, FOOTER_TAIL, MAX_BYTES, MAX_LINES, ConceptLine, DisputedLine,
                               native_load,
                               MemorySnapshot, clip, index_cut, render_memory)

WIDE = ["a", "é", "漢字", "🧠", "e\u0301", "ß", "ﷺ", "\u200d", "𝔘", "—"]


def _text(seed: int, length: int) -> str:
    return "".join(WIDE[(seed * 7 + i) % len(WIDE)] if i % 3 else "word " for i in range(length))


def snapshot(n_concepts: int, n_disputed: int, gist_len: int, seed: int) -> MemorySnapshot:
    concepts = [ConceptLine(f"c-{i}", f"c_{i}.md", _text(seed + i, 10), _text(seed + i, gist_len),
                            "feedback" if i % 5 == 0 else "project", "2 confirmed" if i % 3 else "")
                for i in range(n_concepts)]
    concepts = [c for c in concepts if c.rule] + [c for c in concepts if not c.rule]
    disputed = [DisputedLine(f"c_{i % max(n_concepts, 1)}.md", _text(seed * 3 + i, gist_len), "CONTESTED",
                             "for: a.md 2026-03-01, ledger s1 2026-03-02 / against: b.md 2026-03-05")
                for i in range(n_disputed)]
    return MemorySnapshot("shop", "2026-11-29T00:00:00Z", {"concepts": n_concepts, "CONTESTED": n_disputed},
                          concepts, disputed)


def _check(text: str, snap: MemorySnapshot) -> None:
    assert len(text.encode()) <= MAX_BYTES
    assert len(text.splitlines()) <= MAX_LINES
    shown = [d for d in snap.disputed if f"{d.text[:40]}" in text]
    assert shown == snap.disputed[: len(shown)], "disputed claims appear in order, none skipped"
    if snap.disputed and len(shown) < len(snap.disputed):
        lines = [ln for ln in text.splitlines() if ln.startswith("- **")]
        used = sum(len(ln.encode()) + 1 for ln in lines)
        # The reserved part was filled: one more line would have crossed the share of lines or bytes.
        assert used + 450 > DISPUTED_SHARE * (MAX_BYTES - 1000) or len(lines) + 2 > DISPUTED_SHARE * (MAX_LINES - 6)
    assert text.splitlines()[-1].endswith(FOOTER_TAIL)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 3000), st.integers(0, 3000), st.integers(1, 2000), st.integers(0, 1000))
def test_memory_stays_within_budget_on_adversarial_graphs(n_concepts, n_disputed, gist_len, seed):
    snap = snapshot(n_concepts, n_disputed, gist_len, seed)
    _check(render_memory(snap), snap)


def test_ten_thousand_concepts_and_thousands_of_contested_with_huge_unicode_gists():
    snap = snapshot(10_000, 5_000, 5_000, 3)
    text = render_memory(snap)
    _check(text, snap)
    assert "## Disputed" in text and "## Rules" in text  # 2,000 rules leave no room for the rest


def test_contested_keep_their_place_when_concepts_crowd_in():
    snap = snapshot(10_000, 10, 50, 1)
    text = render_memory(snap)
    assert all(d.text[:40] in text for d in snap.disputed)


def test_same_snapshot_same_bytes():
    snap = snapshot(500, 50, 80, 9)
    assert render_memory(snap) == render_memory(snap)


def test_footer_says_what_was_left_out():
    text = render_memory(snapshot(5000, 0, 100, 2))
    hidden = int(text.splitlines()[-1].split()[2])
    assert hidden == 5000 - sum(1 for ln in text.splitlines() if ln.startswith("- ["))


def test_ranking_is_not_scattered_by_a_flat_column():
    flat = [ConceptStats(f"k{i}", grounding=float(i), degree=0, updated_at="2026-01-01T00:00:00Z") for i in range(5)]
    assert [c.key for c in rank(flat)] == ["k4", "k3", "k2", "k1", "k0"]


def test_connectivity_and_recency_lift_a_concept():
    base = ConceptStats("base", 2.0, 0, "2026-01-01T00:00:00Z")
    linked = ConceptStats("linked", 2.0, 5, "2026-01-01T00:00:00Z")
    fresh = ConceptStats("fresh", 1.5, 0, "2026-03-01T00:00:00Z")
    order = [c.key for c in rank([base, linked, fresh])]
    assert order.index("linked") < order.index("base") and order.index("fresh") < order.index("base")


def test_a_snapshot_cut_to_what_fits_renders_exactly_as_the_whole_graph(root):
    """The snapshot gathers at most MAX_LINES concepts and disputed claims (no MEMORY.md can show
    more); the bytes must be the same as from the uncut snapshot, footer counts included."""
    from conftest import memory
    from ontology.artifact import Channel
    from ontology.ingest import Ontology
    from projection.snapshot import memory_snapshot

    onto = Ontology(root, "shop", create=True)
    # 900 concepts; 299 shared "cache N" facts of which every third concept states another value,
    # so more concepts and more disputed claims than MAX_LINES.
    onto.ingest_many([(f"n{i}.md", memory(f"note-{i}", f"note {i} about worker {i}",
                                          f"- cache {i % 299}: {'redis' if i % 3 else 'memcached'}"), Channel.CLI)
                      for i in range(900)])
    with onto.reader() as conn:
        cut = memory_snapshot(conn, "shop")
        whole = memory_snapshot(conn, "shop", limit=10**9)
    onto.close()
    assert len(cut.concepts) == MAX_LINES < len(whole.concepts) == cut.n_concepts
    assert len(cut.disputed) == MAX_LINES < len(whole.disputed) == cut.n_disputed
    assert render_memory(cut) == render_memory(whole)
    assert render_memory(cut, max_size=10_000) == render_memory(whole, max_size=10_000)


def test_without_a_host_index_rules_come_first_and_single_source_claims_carry_no_label():
    snap = snapshot(300, 0, 40, 4)
    text = render_memory(snap)
    lines = [ln for ln in text.splitlines() if ln.startswith("- [")]
    numbers = [int(ln.split("(c_")[1].split(".md")[0]) for ln in lines]
    is_rule = [n % 5 == 0 for n in numbers]
    assert is_rule[:60] == [True] * 60 and not any(is_rule[60:]), "every rule before the first project note"
    assert "INSUFFICIENT_DATA" not in text and "bel " not in text
    assert any("⟨kg: 2 confirmed⟩" in ln for ln in lines) and any("⟨kg" not in ln for ln in lines)


def _host_index(n_feedback: int, n_project: int, hook: str) -> str:
    out = ["# Memory", "", "## Project"]
    out += [f"- [Project {i}](project_{i}.md) — {hook} {i}" for i in range(n_project)]
    out += ["", "## Feedback"]
    out += [f"- [Rule {i}](feedback_{i}.md) — never {hook} {i}" for i in range(n_feedback)]
    return "\n".join(out) + "\n"


def _indexed_snapshot(index: str, n_feedback: int, marks: str = "") -> MemorySnapshot:
    indexed = {f"feedback_{i}.md": ConceptLine(f"feedback-{i}", f"feedback_{i}.md", f"Rule {i}", "", "feedback", marks)
               for i in range(n_feedback)}
    extra = [ConceptLine(f"ledger-{i}", f"ledger-{i}.md", f"Ledger {i}", "from a session", "section") for i in range(50)]
    return MemorySnapshot("shop", "2026-11-29T00:00:00Z", {"concepts": 100}, extra, [], host_index=index,
                          indexed=indexed)


def test_a_host_index_that_fits_is_kept_verbatim_with_marks_and_additions_below():
    index = _host_index(5, 20, "keeps its hook")
    text = render_memory(_indexed_snapshot(index, 5, marks="1 disputed"))
    out = text.splitlines()
    for line in index.splitlines():
        assert line in out or f"{line} ⟨kg: 1 disputed⟩" in out, line
    assert out.index("## Project") < out.index("## Feedback"), "the author's order is kept"
    assert "- [Rule 0](feedback_0.md) — never keeps its hook 0 ⟨kg: 1 disputed⟩" in out
    additions = out.index("## Also in the knowledge graph (not in the index), ranked")
    assert additions > out.index("## Feedback") and "- [Ledger 0](ledger-0.md) — from a session" in out
    targets = [ln.split("](")[1].split(")")[0] for ln in out if ln.startswith("- [")]
    assert len(targets) == len(set(targets)), "no entry twice"


def test_an_index_over_budget_is_cut_by_priority_rules_first_never_by_name():
    index = _host_index(30, 400, "a long hook that takes room " * 3)
    snap = _indexed_snapshot(index, 30)
    text = render_memory(snap)
    assert len(text.encode()) <= MAX_BYTES and len(text.splitlines()) <= MAX_LINES
    assert all(f"](feedback_{i}.md)" in text for i in range(30)), "every rule survives the cut"
    assert "](project_0.md)" in text and "](project_399.md)" not in text, "the rest in the index's order"
    shown = sum(1 for i in range(400) if f"](project_{i}.md)" in text)
    assert text.splitlines()[-1].startswith(f"_Not shown: {400 - shown} index entries (your whole index: "
                                            f"MEMORY.full.md), 50 concepts")


def test_the_authors_own_top_lines_are_not_pushed_out_by_rules_below_them():
    """An index opening with lines of the author's own (linking no file) and then 300 feedback entries:
    the rules went first and filled the budget, so the opening lines, which a harness reading the file's
    first 200 lines shows, were cut (blind7). Unlinked lines a harness would show are kept with the rules;
    one far below that window is not put before the entries above it."""
    top = ["# Memory", "", "- ALWAYS run `make check` before saying a task is done.",
           "Priya reviews every PR on Tuesdays.", ""]
    rules = [f"- [Rule {i}](feedback_{i}.md) — never a long hook that takes room {i}" for i in range(300)]
    index = "\n".join([*top, *rules, "", "- Footnote far below the first 200 lines."]) + "\n"
    text = render_memory(_indexed_snapshot(index, 300))
    assert len(text.encode()) <= MAX_BYTES and len(text.splitlines()) <= MAX_LINES
    out = text.splitlines()
    assert out[1:5] == top[:4], out[:6]
    assert "- [Rule 0](feedback_0.md) — never a long hook that takes room 0" in out
    assert "- Footnote far below the first 200 lines." not in out


@pytest.mark.parametrize("n_lines, hook", [(199, "short"), (200, "short"), (117, "a long hook that takes room " * 6)])
def test_an_index_a_harness_shows_whole_is_shown_whole(n_lines, hook):
    """An index of 199 lines (or 117 long ones near 24,000 bytes) is what Claude Code shows whole from the
    folder itself; our header, blank lines and footer pushed its last entries into MEMORY.full.md (blind7).
    Every author line stays, in order; marks, header and footer only where room is left."""
    index = "\n".join(["# Memory", *(f"- [Rule {i}](feedback_{i}.md) — {hook} {i}" for i in range(n_lines - 1))])
    index += "\n"
    assert len(index.encode()) <= MAX_BYTES
    snap = _indexed_snapshot(index, n_lines - 1, marks="1 disputed")
    snap = MemorySnapshot(snap.ontology, snap.generated, snap.counts, snap.concepts,
                          [DisputedLine("feedback_0.md", "a claim", "CONTESTED", "for: a.md / against: b.md")],
                          host_index=index, indexed=snap.indexed)
    text = render_memory(snap)
    assert len(text.encode()) <= MAX_BYTES and len(text.splitlines()) <= MAX_LINES
    authored = [ln.split(" ⟨kg: ")[0] for ln in text.splitlines()
                if ln.startswith(("# Memory", "- [Rule "))]
    assert authored == index.splitlines(), "every line of the author's index, in its order"
    assert not index_cut(text), "nothing was left out, so no pointer to MEMORY.full.md"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 120), st.integers(0, 400), st.integers(1, 300), st.integers(0, 300), st.integers(0, 50))
def test_memory_with_a_host_index_stays_within_budget(n_feedback, n_project, hook_len, n_disputed, seed):
    index = _host_index(n_feedback, n_project, _text(seed, hook_len))
    snap = _indexed_snapshot(index, n_feedback, marks="2 confirmed")
    snap = MemorySnapshot(snap.ontology, snap.generated, snap.counts, snap.concepts,
                          [DisputedLine("x.md", _text(seed + i, hook_len), "CONTESTED", "for: a.md / against: b.md")
                           for i in range(n_disputed)], host_index=index, indexed=snap.indexed)
    text = render_memory(snap)
    loaded = native_load(index)
    if loaded == index.strip().split("\n") and len(index.strip().encode()) + 1 > MAX_BYTES:
        # Claude Code would load the author's own file whole, and it is over our budget: exactly that, nothing more.
        assert text == "\n".join(loaded) + "\n"
        return
    assert len(text.encode()) <= MAX_BYTES and len(text.splitlines()) <= MAX_LINES
    whole = len(index.splitlines()) <= MAX_LINES and len(index.encode()) <= MAX_BYTES
    if whole:  # a harness would show it all: so do we, our lines only where room is left
        shown = {ln.split(" ⟨kg: ")[0] for ln in text.splitlines()}
        assert all(ln in shown for ln in index.splitlines())
    else:
        assert text.splitlines()[-1].endswith(FOOTER_TAIL)
    if len(index.encode()) + 2000 < MAX_BYTES and len(index.splitlines()) + 20 < MAX_LINES:
        assert all(f"](feedback_{i}.md)" in text for i in range(n_feedback))


def test_sources_are_shown_as_their_files_are_named(root):
    """A mixed-case file name reaches the Disputed line and the evidence appendix as the author wrote it."""
    from conftest import memory
    from ontology.artifact import Channel
    from ontology.ingest import Ontology
    from projection.snapshot import memory_snapshot, memory_topic
    from projection.topic import render_memory_topic

    onto = Ontology(root, "shop", create=True)
    onto.ingest_many([("Project_Deploy.md", memory("deploy", "how we deploy", "- cache 1: redis"), Channel.CLI),
                      ("Ops_Notes.md", memory("ops", "operations notes", "- cache 1: memcached"), Channel.CLI)])
    with onto.reader() as conn:
        text = render_memory(memory_snapshot(conn, "shop"))
        topic = memory_topic(conn, "Project_Deploy.md")
    onto.close()
    disputed = text.split("## Disputed", 1)[1]
    assert "Project_Deploy.md" in disputed and "Ops_Notes.md" in disputed, disputed
    assert topic is not None
    appendix = render_memory_topic(topic).rsplit("---", 1)[-1]
    assert "Ops_Notes.md" in appendix and "ops_notes.md" not in appendix, appendix


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 20), st.integers(0, 40), st.integers(1, 80), st.integers(0, 12), st.integers(0, 50))
def test_what_the_projection_adds_to_an_index_comes_out_of_an_edit_of_it(n_feedback, n_project, hook_len,
                                                                         n_disputed, seed):
    """An agent that saves the MEMORY.md it read saves the author's index, not our lines around it."""
    from projection.indexedit import index_from_view

    index = _host_index(n_feedback, n_project, _text(seed, hook_len))
    snap = _indexed_snapshot(index, n_feedback, marks="1 disputed · 2 confirmed")
    snap = MemorySnapshot(snap.ontology, snap.generated, snap.counts, snap.concepts,
                          [DisputedLine("x.md", _text(seed + i, 30), "CONTESTED", "for: a.md / against: b.md")
                           for i in range(n_disputed)], host_index=index, indexed=snap.indexed)
    text = render_memory(snap)
    if "index entries" not in text.splitlines()[-1]:  # the whole index was shown
        assert index_from_view(text) == index
    assert index_from_view(render_memory(snapshot(30, n_disputed, hook_len, seed))) == "", "all of it ours"


@pytest.mark.parametrize(("text", "limit", "shown"), [
    ("सर्वर की सेटिंग " * 10, 30, "सर्वर की …"),  # never a conjunct cut after its virama
    ("เซิร์ฟเวอร์ทดสอบใช้พอร์ต" * 5, 25, "เซิร์ฟ…"),  # nor a Thai vowel written before its consonant
    ("🇩🇪🇫🇷🇯🇵🇧🇷" * 5, 15, "🇩🇪…"),  # nor a flag
    ("on call 👩‍💻 today, " * 5, 20, "on call …"),  # nor an emoji sequence
])
def test_a_clipped_line_ends_on_a_character_a_reader_sees(text, limit, shown):
    """blind10: a generated line (an index addition, a quoted claim) cut at a code point split Hindi and
    Thai words, emoji sequences and flags into pieces that read as other characters."""
    assert clip(text, limit) == shown


def test_a_clipped_line_closes_the_bidi_isolate_it_opens():
    """An RTL note marks an identifier with an isolate (U+2066 … U+2069); a cut inside it left it open, so
    our text after the quote took the identifier's direction."""
    text = "התור רץ על \u2066`queue_v2` עם עובדים רבים\u2069 " * 3
    clipped = clip(text, 40)
    assert clipped.count("\u2066") == clipped.count("\u2069") and len(clipped.encode()) <= 40


def _js_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _harness_loads(memory: str) -> list[str]:
    """The lines Claude Code loads of a MEMORY.md (measured on 2.1.2xx): the text trimmed, its first 200
    lines, then cut at the last newline within 25,000 UTF-16 code units (JavaScript's string length)."""
    lines = memory.strip().split("\n")[:200]
    text = "\n".join(lines)
    if _js_length(text) > 25_000:
        at = max(i for i in range(len(text)) if text[i] == "\n" and _js_length(text[:i]) <= 25_000)
        text = text[:at]
    return text.split("\n")


_SCRIPTS = {  # one entry's hook per script, in our own words
    "japanese": "ビルドは毎朝六時に走る。作業の前に必ずこのファイルを確認すること、番号",
    "chinese": "每天早上六点构建，每次任务前都要检查这一条规则，不要忘记，否则会出错，编号",
    "russian": "Сборка идёт каждое утро в шесть; проверять перед каждой задачей, номер",
    "greek": "Η κατασκευή τρέχει κάθε πρωί στις έξι· έλεγχος πριν από κάθε εργασία, αριθμός",
    "ascii": "The build runs every morning at six; check this file before every task of this kind, number",
}


@pytest.mark.parametrize("script", sorted(_SCRIPTS))
def test_an_index_claude_code_loads_whole_is_shown_whole_in_any_script(script):
    """harm13: Claude Code cuts MEMORY.md at 200 lines and 25,000 UTF-16 code units, and we counted our budget
    in UTF-8 bytes. A Japanese index of 190 entries (~36,000 bytes, ~14,000 units) that Claude Code loads whole
    from the folder lost its last ~70 entries to MEMORY.full.md through the mount; Cyrillic and Greek lose
    half as many bytes again, and an ASCII index between 24,000 and 25,000 units lost its last lines too. Every
    line Claude Code would load of the author's index is in our MEMORY.md, and Claude Code loads all of ours.
    Fails with the budget counted in bytes (`render.utf16_units` -> UTF-8 length)."""
    hook = _SCRIPTS[script]
    n = 0
    lines = ["# Memory", ""]
    while True:  # as many entries as fit 196 lines and 24,900 units: a harness loads it whole
        entry = f"- [Entry {n}](project_{n}.md) — {hook} {n}"
        if len(lines) >= 196 or _js_length("\n".join([*lines, entry])) > 24_900:
            break
        lines.append(entry)
        n += 1
    index = "\n".join(lines) + "\n"
    assert _harness_loads(index) == index.rstrip("\n").split("\n"), "the folder's own index is loaded whole"
    text = render_memory(_indexed_snapshot(index, 0))
    loaded = _harness_loads(text)
    assert loaded == text.rstrip("\n").split("\n"), "Claude Code loads the whole of what we serve"
    shown = [ln.split(" ⟨kg: ")[0] for ln in loaded]
    assert [ln for ln in shown if ln.startswith(("# Memory", "- [Entry"))] == [ln for ln in lines if ln], \
        "every author line, in order"
    assert not index_cut(text)


@pytest.mark.parametrize("script", sorted(_SCRIPTS))
def test_our_own_lines_never_take_memory_md_past_24000_bytes_in_any_script(script):
    """The product's contract (issues 5 and 12): MEMORY.md is at most 200 lines and 24,000 UTF-8 bytes. Only
    the author's own index, as Claude Code would load it, may be longer, served verbatim with nothing of ours
    (the test above). A short index in a multi-byte script beside hundreds of disputed claims and concepts in
    that script: our lines fill the budget, in bytes. Fails with the budget counted in UTF-16 code units (a
    Japanese MEMORY.md of ~50,000 bytes)."""
    hook = _SCRIPTS[script]
    index = "\n".join(["# Memory", "", *(f"- [Entry {n}](project_{n}.md) — {hook} {n}" for n in range(20))]) + "\n"
    snap = _indexed_snapshot(index, 0)
    concepts = [ConceptLine(f"c{i}", f"c{i}.md", f"{hook} {i}", f"{hook} {hook} {i}", "project") for i in range(400)]
    disputed = [DisputedLine(f"c{i}.md", f"{hook} {i}", "CONTESTED", "for: a.md / against: b.md") for i in range(60)]
    snap = MemorySnapshot(snap.ontology, snap.generated, {"concepts": 400, "CONTESTED": 60}, concepts, disputed,
                          host_index=index, indexed=snap.indexed)
    text = render_memory(snap)
    assert len(text.encode()) <= MAX_BYTES and len(text.splitlines()) <= MAX_LINES
    assert all(ln in text.splitlines() for ln in index.splitlines() if ln), "the author's index is all there"
    assert len(text.encode()) > MAX_BYTES - 2000, "and our lines filled the rest of the budget"


def test_a_line_without_a_description_shows_a_claim_its_file_still_states(root):
    """A memory file with no `description:` is listed with its strongest claim a source still states
    as the gist: not a claim its newer version dropped, and not nothing."""
    from ontology.artifact import Channel
    from ontology.ingest import Ontology
    from projection.snapshot import memory_snapshot

    head = "---\nname: deploy\ntype: project\n---\n"
    onto = Ontology(root, "shop", create=True)
    onto.ingest("deploy.md", (head + "- Deploys run from the release branch\n- Staging is called blue\n").encode(),
                Channel.CLI)
    onto.ingest("deploy.md", (head + "- Staging is called blue\n").encode(), Channel.CLI)
    with onto.reader() as conn:
        text = render_memory(memory_snapshot(conn, "shop"))
    onto.close()
    (line,) = [line for line in text.splitlines() if "(deploy.md)" in line]
    assert line.endswith("— Staging is called blue"), line
