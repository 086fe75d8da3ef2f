"""Do no harm in scripts and shapes the development corpus lacks: languages without negation rules,
scripts that write vowels as combining marks, hidden HTML comments, configuration in fences. Each
case is an invented memory folder ingested as `kgbridge mount` does and read as the agent reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontology import queries
from ontology.ingest import Ontology
from ontology.tokens import tokens
from projection.mount import ingest_host_files
from projection.view import ProjectionView

DISPUTED = ("CONTESTED", "CONTRADICTORY")


def note(name: str, body: str, kind: str = "project") -> str:
    return f"---\nname: {name}\ndescription: {name} notes\nmetadata:\n  type: {kind}\n---\n\n{body}"


def ingest(tmp_path: Path, files: dict[str, str]) -> tuple[Ontology, ProjectionView]:
    folder = tmp_path / "memory"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    onto = Ontology(tmp_path / "K", "notes", create=True)
    ingest_host_files(onto, folder)
    return onto, ProjectionView(onto)


def agreements(onto: Ontology) -> list[str]:
    with onto.reader() as conn:
        return [a.text for a in queries.assertions(conn) if a.n_for >= 2]


def disputed(onto: Ontology) -> list[str]:
    with onto.reader() as conn:
        return [a.text for a in queries.assertions(conn) if a.status in DISPUTED]


# (language, a statement, the same statement negated in a way no rule of ontology.language reads)
UNREAD_NEGATIONS = [
    ("vi", "Dùng Redis cho phiên đăng nhập của khách hàng.", "Không dùng Redis cho phiên đăng nhập của khách hàng."),
    ("it", "Il server usa Docker in produzione da gennaio.", "Il server non usa Docker in produzione da gennaio."),
    ("it-as-es", "Usare una VM con Docker per le prove.", "Non usare una VM con Docker per le prove."),
    ("hi", "कैश के लिए Redis का उपयोग करें और सत्र वहीं रखें।", "कैश के लिए Redis का उपयोग नहीं करें और सत्र वहीं रखें।"),
    ("th", "ใช้ Redis สำหรับเก็บเซสชันของผู้ใช้", "ห้ามใช้ Redis สำหรับเก็บเซสชันของผู้ใช้"),
    ("ru", "Деплой запускать по пятницам после обеда из ветки main.",
     "Деплой не запускать по пятницам после обеда из ветки main."),
    ("pl", "Używamy Ansible do konfiguracji serwerów testowych w biurze.",
     "Nie używamy Ansible do konfiguracji serwerów testowych w biurze."),
    ("tr", "Docker imajı üretim ortamında her gece kullanılıyor ve güncelleniyor.",
     "Docker imajı üretim ortamında her gece kullanılmıyor ve güncelleniyor."),
    ("he", "משתמשים ב-Redis לשמירת הסשנים של המשתמשים בשרת.", "לא משתמשים ב-Redis לשמירת הסשנים של המשתמשים בשרת."),
    # Corpus languages, negated in forms their rules leave unread (a bare 不/沒, 안 as a word)
    ("zh-hant", "排程系統使用 Airflow 排程工具", "排程系統不使用 Airflow 排程工具"),
    ("ko", "운영 서버에서는 Docker를 쓴다", "운영 서버에서는 Docker를 안 쓴다"),
]


@pytest.mark.parametrize("lang, plain, negated", UNREAD_NEGATIONS, ids=[c[0] for c in UNREAD_NEGATIONS])
def test_a_negation_no_rule_reads_never_makes_a_statement_agree_with_its_opposite(tmp_path, lang, plain, negated):
    """Without negation rules for a language, "Không dùng Redis …" and "Dùng Redis …" differ by one word and
    were merged as near-duplicates: the agent read that a second file confirms the opposite of what it says.
    Now they stay two claims, neither labelled (no dispute either: we cannot read the negation)."""
    a, b = note("a", f"- {plain}\n"), note("b", f"- {negated}\n")
    onto, view = ingest(tmp_path, {"a.md": a, "b.md": b})
    assert agreements(onto) == [] and disputed(onto) == []
    assert view.read("a.md") == a.encode() and view.read("b.md") == b.encode(), "shown exactly as written"


@pytest.mark.parametrize("lang, plain, negated", UNREAD_NEGATIONS[:5], ids=[c[0] for c in UNREAD_NEGATIONS[:5]])
def test_the_same_negated_statement_in_two_files_still_agrees(tmp_path, lang, plain, negated):
    onto, _ = ingest(tmp_path, {"a.md": note("a", f"- {negated}\n"), "b.md": note("b", f"Intro.\n\n- {negated}\n")})
    assert len(agreements(onto)) == 1


def test_words_of_scripts_with_vowel_signs_stay_whole():
    """Devanagari, Bengali and Tamil write vowels as combining marks, which `\\w` does not match: "उपयोग" fell
    apart into "उपय" and "ग", so matching keys and near-duplicate sets held consonant fragments."""
    assert tokens("कैश के लिए Redis का उपयोग नहीं करें।") == ["कैश", "के", "लिए", "redis", "का", "उपयोग", "नहीं", "करें"]
    assert tokens("উপযোগ করুন") == ["উপযোগ", "করুন"]
    assert tokens("பயன்படுத்த வேண்டாம்") == ["பயன்படுத்த", "வேண்டாம்"]
    assert tokens("✅️ 1️⃣ done q̇x") == ["1", "done", "q̇x"], "a variation selector or keycap starts no word"


def test_a_multi_line_html_comment_states_nothing(tmp_path):
    """A commented-out setting (`<!--` on one line, `-->` on a later one) is hidden from every reader of
    the file; it became a claim and disputed the other file's setting."""
    a = note("a", "The queue settings live in `config/queue.yaml`.\n\n<!--\nQueue: nats\nOld: we tried nats\n-->\n"
                  "- Queue owner: platform team\n")
    b = note("b", "- Queue: rabbitmq\n")
    onto, view = ingest(tmp_path, {"a.md": a, "b.md": b})
    assert disputed(onto) == []
    assert view.read("a.md") == a.encode() and view.read("b.md") == b.encode()
    with onto.reader() as conn:
        texts = [x.text for x in queries.assertions(conn)]
    assert "Queue owner: platform team" in texts and not any("nats" in t for t in texts)


def test_configuration_in_fences_never_disputes_anything(tmp_path):
    """Two fenced configs (and a code block) set one key two ways: examples, not the author's claims."""
    a = note("a", "The real setting is in `config/prod.yaml`.\n\n```yaml\ndebug: true\nqueue: kafka\n```\n\n"
                  "~~~yaml\ndebug: false\nqueue: rabbitmq\n~~~\n\n```python\nUSE_CACHE = True\nUSE_CACHE = False\n```\n")
    b = note("b", "- debug: false\n- queue: sqs\n")
    onto, view = ingest(tmp_path, {"a.md": a, "b.md": b})
    assert disputed(onto) == []
    assert view.read("a.md") == a.encode()


# (a subject that names many things, two values from two unrelated notes)
GENERIC_SUBJECTS = [("ru", "Причина", "таймаут", "память"), ("uk", "Приклад", "curl", "httpie"),
                    ("it", "Motivo", "timeout", "memoria"), ("pt", "Exemplo", "curl", "httpie"),
                    ("pl", "Przykład", "curl", "httpie"), ("tr", "Sebep", "zaman aşımı", "bellek"),
                    ("vi", "Lý do", "hết thời gian", "bộ nhớ"), ("nl", "Reden", "timeout", "geheugen"),
                    ("he", "סיבה", "זמן", "זיכרון"), ("hi", "कारण", "टाइमआउट", "मेमोरी"), ("th", "สาเหตุ", "หมดเวลา", "หน่วยความจำ"),
                    ("nl-article", "De oorzaak", "geheugen", "timeout")]


@pytest.mark.parametrize("lang, subject, one, other", GENERIC_SUBJECTS, ids=[c[0] for c in GENERIC_SUBJECTS])
def test_a_subject_we_cannot_tell_is_specific_is_no_slot(tmp_path, lang, subject, other, one):
    """"Reason: timeout" in one note and "Reason: memory" in another are about two incidents. English and
    the corpus languages list such generic subjects; in other languages they made false disputes. A
    subject in a script we have no word lists for is never a slot (precision first)."""
    a, b = note("a", f"- {subject}: {one}\n"), note("b", f"- {subject}: {other}\n")
    onto, view = ingest(tmp_path, {"a.md": a, "b.md": b})
    assert disputed(onto) == []
    if lang == "nl-article":  # Dutch says "X is Y" as English does
        onto, _ = ingest(tmp_path / "prose", {"a.md": note("a", f"- {subject} is {one}\n"),
                                              "b.md": note("b", f"- {subject} is {other}\n")})
        assert disputed(onto) == []
    assert view.read("a.md") == a.encode() and view.read("b.md") == b.encode()


def test_a_specific_latin_subject_still_has_rival_values(tmp_path):
    # A key naming its subject (a name beside an acronym): a bare "Cache" in a topic file is that file's own,
    # and so is "API cache", a kind of thing each project has (ADR 0009, blind7).
    onto, _ = ingest(tmp_path, {"a.md": note("a", "- Search API cache: Redis\n"),
                                "b.md": note("b", "- Search API cache: Memcached\n")})
    assert sorted(disputed(onto)) == ["Search API cache: Memcached", "Search API cache: Redis"]


SEARCHED = [  # (what a note says, what an agent types, found?)
    ("Run `ｍａｋｅ ｓｈｉｐ` from the repo root.", "make ship", True),  # full-width, typed in ASCII
    ("Xin chào Vi\u0065\u0323\u0302t Nam, hệ thống chạy ổn.", "Việt", True),  # decomposed (NFD) text, composed query
    ("Máy chủ Việt Nam chạy hệ thống ổn định.", "viet nam", True),  # two diacritics on one letter
    ("Máy chủ Việt Nam chạy hệ thống ổn định.", "he thong", True),
    ("कैश के लिए Redis का उपयोग नहीं करें।", "उपयोग", True),
    ("कैश के लिए Redis का उपयोग नहीं करें।", "करें", True),
    ("कैश के लिए Redis का उपयोग नहीं करें।", "क", False),  # a consonant cut out of कैश/का is no word
    ("ระบบร้านค้าติดตั้งบนเซิร์ฟเวอร์ที่กรุงเทพ", "กรุงเทพ", True),
    ("يتم النشر عبر السكربت \u200e`scripts/deploy.sh`\u200e فقط.", "deploy.sh", True),
    ("\u200fלענות בעברית ובקצרה.", "בעברית", True),
    # Simplified and Traditional Chinese name one thing (session 7, OpenCC): either form finds the other
    ("排程系統使用 Airflow，資料庫備份每晚執行。", "数据库备份", True),  # Traditional text, Simplified query
    ("排程系統使用 Airflow，資料庫備份每晚執行。", "资料库", True),
    ("部署脚本在周一运行，数据库迁移随后进行。", "數據庫遷移", True),  # Simplified text, Traditional query
    ("部署脚本在周一运行，数据库迁移随后进行。", "週一", True),
    ("部署脚本在周一运行，数据库迁移随后进行。", "週末", False),
]


@pytest.mark.parametrize("text, query, found", SEARCHED, ids=[q for _, q, _ in SEARCHED])
def test_search_finds_words_in_every_script_and_form(tmp_path, text, query, found):
    from ontology.search import search
    onto, _ = ingest(tmp_path, {"a.md": note("a", f"- {text}\n")})
    with onto.reader() as conn:
        hits = [h.text for h in search(conn, query)]
    assert bool(hits) is found, hits


SIGNED = [("❌ Squash merges on release branches", "✅ Squash merges on release branches"),
          ("🚫 Deploy on Fridays after lunch", "Deploy on Fridays after lunch"),
          ("✗ Run the migrations by hand", "✓ Run the migrations by hand"),
          ("~~Use Redis for the session store~~", "Use Redis for the session store"),
          ("❌ Redis のセッション保存", "✅ Redis のセッション保存")]


@pytest.mark.parametrize("crossed, plain", SIGNED, ids=[c[:2] for c, _ in SIGNED])
def test_a_crossed_or_struck_statement_never_agrees_with_the_same_words_unmarked(tmp_path, crossed, plain):
    """In a do/don't list "❌ X" means do not X, and ~~X~~ is retracted: emoji and `~` are no tokens, so
    each agreed with a plain "X" in another file. They stay apart (unlabelled: ❌ may also mean failed)."""
    onto, view = ingest(tmp_path, {"a.md": note("a", f"- {crossed}\n"), "b.md": note("b", f"- {plain}\n")})
    assert agreements(onto) == [] and disputed(onto) == []


def test_a_crossed_negation_still_agrees_with_the_same_negation(tmp_path):
    onto, _ = ingest(tmp_path, {"a.md": note("alpha", "- ❌ Never force-push the main branch\n"),
                                "b.md": note("beta", "- Never force-push the main branch\n"),
                                "c.md": note("gamma", "- ❌ Squash merges on release branches\n"),
                                "d.md": note("delta", "Notes.\n\n- ❌ Squash merges on release branches\n")})
    assert sorted(agreements(onto)) == ["❌ Never force-push the main branch", "❌ Squash merges on release branches"]


INVISIBLY_DIFFERENT = [  # the same statement, as two notes may hold it
    ("Servis İstanbul bölgesindeki kümede çalışıyor.", "Servis Istanbul bölgesindeki kümede çalışıyor."),
    ("הסקריפט רץ כל לילה בשָׁעָה שָׁלוֹשׁ.", "הסקריפט רץ כל לילה בשעה שלוש."),  # vowel points
    ("The nightly data\u200bbase dump runs at three.", "The nightly database dump runs at three."),  # ZWSP
    ("\u200fלענות בעברית ובקצרה תמיד.", "לענות בעברית ובקצרה תמיד."),  # a bidi mark
]


@pytest.mark.parametrize("one, other", INVISIBLY_DIFFERENT, ids=["tr-dotted-I", "he-points", "zwsp", "rlm"])
def test_a_statement_restated_with_invisible_differences_agrees(tmp_path, one, other):
    onto, view = ingest(tmp_path, {"a.md": note("alpha", f"- {one}\n"), "b.md": note("beta", f"- {other}\n")})
    assert len(agreements(onto)) == 1
    assert view.read("a.md").decode().startswith(note("alpha", f"- {one}\n")), "the author's bytes"


def test_a_fence_holding_fences_stays_code_to_its_own_close(tmp_path):
    """A note that keeps a markdown template opens with four backticks and holds ``` lines; a bare ```
    or a ```python line inside closed it, and the template's example settings became claims."""
    a = note("alpha", "PR template:\n\n````md\n## Config\n```yaml\nqueue: kafka\n```\n- Queue: kafka\n````\n\n"
                      "```bash\ncat <<'EOF' > x.md\n```python\n- Queue: sqs\n```\nEOF\n```\n")
    onto, view = ingest(tmp_path, {"a.md": a, "b.md": note("beta", "- Queue: rabbitmq\n")})
    assert disputed(onto) == []
    with onto.reader() as conn:
        assert not [x.text for x in queries.assertions(conn) if "Queue" in x.text and "rabbitmq" not in x.text]


SEE_ALSO = ["Vedi anche", "Note correlate", "Zobacz też", "Xem thêm", "İlgili notlar", "Zie ook", "Veja também",
            "**Powiązane notatki:**"]


@pytest.mark.parametrize("lead", SEE_ALSO)
def test_a_see_also_line_in_any_language_is_a_link_list_not_a_slot(tmp_path, lead):
    """"See also: [[deploy]]" in one note and "See also: [[db]]" in another were rival values of the slot
    "See also" wherever we did not know the lead word: false disputes in Italian, Polish, Vietnamese …"""
    label = lead if lead.endswith(":**") else f"{lead}:"
    a = note("alpha", f"Alpha.\n\n{label} [[deploy]]\n\n- {label} [Schema](db_schema.md) · [[backups]]\n")
    b = note("beta", f"Beta.\n\n{label} [[db]]\n")
    onto, view = ingest(tmp_path, {"a.md": a, "b.md": b, "c.md": note("gamma", "- Database: [postgres](https://postgres.org)\n")})
    assert disputed(onto) == []
    with onto.reader() as conn:
        texts = [x.text for x in queries.assertions(conn)]
    assert not [t for t in texts if "deploy" in t or "db" in t.split()], texts
    assert "Database: postgres" in texts, "a link to elsewhere after a label still states something"


def test_index_lines_find_their_files_by_names_in_any_script(tmp_path):
    """The index matched link targets to files on an ASCII-only form of the name: every Cyrillic or CJK
    name became "", so each such line found one arbitrary file (a "disputed" mark landed on the wrong
    line) and the others were re-added as "not in the index"; a `%20` or an NFD name (macOS) missed too."""
    import unicodedata
    from projection.render import ADDITIONS_HEADING
    nfd = unicodedata.normalize("NFD", "café_notes.md")
    index = ("- [Кэш](кэш_сессий.md) — где живут сессии\n- [Деплой](деплой.md) — как выкатываем\n"
             "- [部署](部署说明.md) — 流程\n- [Café](café_notes.md) — menu\n- [Spaces](my%20notes.md) — spaced\n")
    files = {"MEMORY.md": index, "кэш_сессий.md": note("kesh", "- Shop API session cache: Redis\n"),
             "деплой.md": note("deploi", "- Выкатываем через make release.\n"),
             "部署说明.md": note("bushu", "- 每周二发布。\n"), nfd: note("cafe", "- Menu service on port 8080.\n"),
             "my notes.md": note("spaced", "- Spaces in the name.\n"),
             "ops.md": note("ops", "- Shop API session cache: Memcached\n")}
    onto, view = ingest(tmp_path, files)
    memory = view.read("MEMORY.md").decode()
    added = memory.split(ADDITIONS_HEADING, 1)[1] if ADDITIONS_HEADING in memory else ""
    for name in ("кэш_сессий.md", "деплой.md", "部署说明.md", "café_notes.md", "my notes.md"):
        assert f"]({name})" not in added and f"]({unicodedata.normalize('NFD', name)})" not in added, name
    lines = memory.splitlines()
    assert "- [Кэш](кэш_сессий.md) — где живут сессии ⟨kg: 1 disputed⟩" in lines
    assert "- [Деплой](деплой.md) — как выкатываем" in lines, "the mark belongs to the other line"


def test_files_named_only_with_emoji_stay_separate_concepts(tmp_path):
    """"🚀.md" and "🔥.md" slug to nothing; both were keyed "untitled", one concept, so each file's appendix
    listed the other file's notes as what "other sources" add about it."""
    a, b = note("rocket", "- Releases go out on Tuesday.\n"), note("fire", "- Hotfixes skip the release train.\n")
    onto, view = ingest(tmp_path, {"🚀.md": a, "🔥.md": b})
    assert view.read("🚀.md") == a.encode() and view.read("🔥.md") == b.encode()


@pytest.mark.parametrize(("first", "second"), [
    ("部署.md", "布署.md"),  # "deploy" and a homophone: both "bu-shu" in pinyin
    ("石.md", "時.md"),  # "stone" and "time": both "shi"
    ("Мир.md", "mir.md"),  # Cyrillic and Latin: both "mir"
    ("Орёл.md", "Орел.md"),  # ё and е: both "orel"
    ("café.md", "cafe.md"),  # Latin names differing only by diacritics: both "cafe"
    ("Müller.md", "Muller.md"),
    ("résumé_notes.md", "resume_notes.md"),
])
def test_names_in_other_scripts_that_transliterate_alike_stay_separate_concepts(tmp_path, first, second):
    """Concept keys were transliterations, so two names that read alike in Latin letters shared one
    concept, and each file's appendix listed the other file's notes as what "other sources" add."""
    a, b = note("one", "- Releases go out on Tuesday after the smoke tests.\n"), \
        note("two", "- Hotfixes skip the release train and go out at once.\n")
    onto, view = ingest(tmp_path, {first: a, second: b})
    assert view.read(first) == a.encode() and view.read(second) == b.encode()


def test_a_fact_that_is_no_slot_never_agrees_with_another_value(tmp_path):
    """A Thai key is no slot subject (we cannot tell it is specific), and Thai is compared by bigrams: the
    key alone made "ฐานข้อมูล: MySQL" and "ฐานข้อมูล: PostgreSQL" 80 % alike, so they agreed."""
    onto, view = ingest(tmp_path, {"a.md": note("alpha", "- ฐานข้อมูลหลักของระบบร้านค้า: MySQL\n"),
                                   "b.md": note("beta", "- ฐานข้อมูลหลักของระบบร้านค้า: PostgreSQL\n"),
                                   "c.md": note("gamma", "Intro.\n\n- ฐานข้อมูลหลักของระบบร้านค้า: PostgreSQL\n")})
    assert agreements(onto) == ["ฐานข้อมูลหลักของระบบร้านค้า: PostgreSQL"] and disputed(onto) == []


def test_a_long_paragraph_ending_sentences_with_a_danda_still_states_its_sentences(tmp_path):
    """Hindi ends a sentence with । (danda), which the splitter did not know: a paragraph over the statement
    limit was one unit and yielded nothing."""
    sentences = ["सर्वर मुंबई क्षेत्र में चलता है और हर रात बैकअप लेता है।",
                 "डेटाबेस का बैकअप तीन दिन तक रखा जाता है और फिर हटा दिया जाता है।",
                 "परिनियोजन केवल मंगलवार को होता है ताकि सप्ताहांत में कोई समस्या न हो।",
                 "कैश के लिए Redis का उपयोग किया जाता है और सत्र वहीं रखे जाते हैं।",
                 "लॉग फ़ाइलें सात दिन के बाद अपने आप संग्रह में चली जाती हैं।",
                 "निगरानी के लिए Grafana डैशबोर्ड हर टीम के लिए अलग बनाया गया है।",
                 "नए कर्मचारियों को पहले सप्ताह में स्टेजिंग सर्वर तक ही पहुँच दी जाती है।"]
    paragraph = " ".join(sentences)
    assert len(paragraph) > 400
    onto, _ = ingest(tmp_path, {"a.md": note("alpha", paragraph + "\n")})
    with onto.reader() as conn:
        texts = [a.text for a in queries.assertions(conn)]
    assert sum(any(s.rstrip("।") in t for t in texts) for s in sentences) == len(sentences), texts


@pytest.mark.parametrize("one, other", [("Postgres", "PostgreSQL"), ("MongoDB", "mongo"), ("k8s", "Kubernetes")])
def test_two_names_of_one_product_are_one_value_not_rivals(tmp_path, one, other):
    """ "Banco: Postgres" in one note and "Banco: PostgreSQL" in another were a dispute."""
    onto, _ = ingest(tmp_path, {"a.md": note("alpha", f"- Banco: {one}\n"), "b.md": note("beta", f"- Banco: {other}\n")})
    assert disputed(onto) == [] and agreements(onto) == [f"Banco: {one}"]


@pytest.mark.parametrize("said, marked", [
    ("PollenFleet 5 agents, если бюджет утвердят.", False),  # "if the budget is approved" (Russian)
    ("PollenFleet 5 agents if the budget passes.", False),
    ("Best score: 0.7344 — цель на следующий квартал.", False),  # "the goal for next quarter"
    ("Best score: 0.7344 is the target for May.", False),
    ("PollenFleet 5 agents since the April rebalance.", True),
    ("Kernel 16.2μs per call, PollenFleet 5 agents.", True),  # a unit's μ is no word of another language
], ids=["ru-condition", "en-condition", "ru-goal", "en-target", "plain", "unit"])
def test_a_plan_or_condition_in_any_language_never_marks_the_index_line_stale(tmp_path, said, marked):
    """The index says "3 agents"; the file says "5 agents, if the budget is approved" in Russian, whose
    condition words no rule knows: MEMORY.md, which the agent reads first, said the file "now says" 5."""
    index = "- [Fleet](fleet.md) — PollenFleet 3 agents\n- [Scores](scores.md) — Best score: 0.7120\n"
    name = "fleet.md" if "Fleet" in said else "scores.md"
    files = {"MEMORY.md": index, "fleet.md": note("fleet", "- The fleet runs nightly.\n"),
             "scores.md": note("scores", "- Scores come from the public board.\n")}
    files[name] = note(name[:-3], f"- {said}\n")
    _, view = ingest(tmp_path, files)
    memory = view.read("MEMORY.md").decode()
    assert (f"{name} now says" in memory) is marked, memory
