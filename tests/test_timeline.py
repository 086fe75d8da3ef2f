"""Time-varying facts and which side is newer (ontology.timeline): dates, statuses, versions, counts,
metrics and file markers in several languages, precision first (ADR 0009, supersession across sources)."""

from __future__ import annotations

import pytest

from ontology import timeline as T
from ontology.timeline import Fact, FactKind, Marker, Said, Status


@pytest.mark.parametrize("text, date", [
    ("Mail relay swap COMPLETE as of 2026-02-14; no loose ends", "2026-02-14"),
    ("E4.2 sigue pendiente al 2026-04-17", "2026-04-17"),
    ("2026-07-19 关掉周报邮件(cron 删掉)", "2026-07-19"),
    ("2026年6月3日にバッチを止めた", "2026-06-03"),
    ("Snapshots fine; archive disks arrive ~2026-06-20", None),  # a plan date says nothing about when it held
    ("keep it until 2026-09-01", None),
    ("2026-09-01までに移行する", None),
    ("Night run 9 (Mar 11 2026, late)", "2026-03-11"),
    ("Stand vom 9. März 2026", "2026-03-09"),
    ("no date here", None),
])
def test_a_statement_date_is_its_as_of_date_never_a_deadline(text, date):
    assert T.statement_date(text) == date


def test_a_file_date_is_modified_else_the_latest_of_name_file_name_and_date_fields():
    assert T.file_date("x.md", {"metadata": {"modified": "2026-08-19T08:12:05.120Z"}, "name": "as of 2026-09-01"}) \
        == "2026-08-19"
    assert T.file_date("project_scores_20260407.md", {"name": "scoreboard check, 2026-04-09 night"}) == "2026-04-09"
    assert T.file_date("handoff_2026-04-16_midway.md", {}) == "2026-04-16"
    assert T.file_date("notes.md", {"date": "2026-01-02"}) == "2026-01-02"
    assert T.file_date("notes.md", {"name": "Notes"}) is None


@pytest.mark.parametrize("text, status", [
    ("Laptop swap in-flight — switchover deferred until the backup is verified", Status.PENDING),
    ("COMPLETE as of 2026-02-14; no loose ends", Status.DONE),
    ("la versión 1 va a medias, parcial y pendiente de limpiar", Status.PENDING),
    ("✅ Terminada (limpieza v2)", Status.DONE),
    ("Nettoyage des imports en cours", Status.PENDING),
    ("Refactoring erledigt", Status.DONE),
    ("결제 화면 정리 (진행 중)", Status.PENDING),
    ("배포 자동화 완료", Status.DONE),
    ("リリース作業は完了", Status.DONE),
    ("该功能仍未完成", Status.PENDING),  # 未完成 holds 完成: pending, not done
    ("已完成迁移", Status.DONE),
    ("La guía de marca manda en TODO lo visual", None),  # Spanish "todo" = all
    ("instalar paso a paso, no todo de golpe", None),
    ("E3.1 completa, E3.2 pendiente", None),  # both: the text as a whole states neither
])
def test_status_words_in_every_language_and_mixed_texts_state_nothing(text, status):
    assert T.status_of(text) is status


def _facts(text: str, date: str | None = None) -> set[tuple[str, str, str, bool]]:
    return {(f.subject, f.kind.value, f.value, f.upgrade) for f in T.facts(text, date)}


@pytest.mark.parametrize("text, expected", [
    ("Cliente: Nimbus SDK 12 + Router + Zustand", {("nimbus sdk", "version", "12", False)}),
    ("Nimbus SDK 12 congelado. No subir de versión sin una razón fuerte", {("nimbus sdk", "version", "12", False)}),
    ("Hoy dejamos la app actualizada a Nimbus SDK 14", {("nimbus sdk", "version", "14", True)}),
    ("We upgraded the app to React Native 0.81.2", {("react native", "version", "0.81.2", True)}),
    ("Die App wurde aktualisiert auf Nimbus SDK 15", {("nimbus sdk", "version", "15", True)}),
    ("已将构建工具升级到Pollen SDK 9", {("pollen sdk", "version", "9", True)}),
    ("2026-03-03 に Kumo CLI 2.4にアップデートした", {("kumo cli", "version", "2.4", True)}),
    ("Se eligió Nimbus SDK 13 (no 12)", {("nimbus sdk", "version", "13", False)}),
    ("We will upgrade to Nimbus SDK 16 next week", set()),  # a plan is not a value
    ("trial k3 (spread 0.041) scored 0.7712", set()),  # a measurement, not a version
    ("Plan 12 replaces plan 11", set()),  # a sequence number, not a product version
    ("Aujourd'hui BotFleet 5 agents sur le VPS", {("botfleet agents", "count", "5@vps", False)}),  # its scope kept
    ("Best score: 0.69 on the private split", {("best score", "metric", "0.69@private", False)}),
    ("Public best: `0.9088` from `sub.csv`", {("public best", "metric", "0.9088", False)}),
    ("our public best remains 0.9120 (run7)", {("public best", "metric", "0.9120", False)}),
    ("avance por entrega (E2.3 pendiente al 2026-01-10)", {("2.3", "status", "pending", False)}),
    ("MATMUL: 12.48μs (rank 97) — unchanged", {("matmul rank", "rank", "97", False)}),
    ("TopK board PASSED: `k.py` ranked 31.7μs", set()),  # "ranked" a time, not a standing
])
def test_facts_name_a_specific_subject_and_an_atomic_value(text, expected):
    assert _facts(text) == expected


def test_a_statement_takes_its_section_date_when_it_states_none():
    (fact,) = T.facts("Hoy dejamos la app actualizada a Nimbus SDK 14", "2026-02-10")
    assert fact.date == "2026-02-10"
    (fact,) = T.facts("Nimbus SDK 14 as of 2026-02-12 (upgraded to it)", "2026-02-10")
    assert fact.date == "2026-02-12"


def test_a_status_row_is_keyed_by_its_first_cell():
    assert T.row_fact(["4.1", "✅ Terminada", "feat(e4.1): unida"], "2026-04-04") == \
        Fact("4.1", FactKind.STATUS, "done", "2026-04-04")
    assert T.row_fact(["4.2", "⏳ Pendiente", "avisos"], None) == Fact("4.2", FactKind.STATUS, "pending", None)
    assert T.row_fact(["Entrega", "Situación", "Rama"], None) is None
    assert T.row_fact(["`Guia.md`", "Documento principal"], None) is None
    assert T.item_key("E4.1") == T.item_key("4.1") == "4.1"
    header = ["Kernel", "Board", "Best time", "Rank"]
    assert T.row_fact(["SORT", "sort-v2", "8.1ms", "~40th"], "2026-04-02", header) == \
        Fact("sort rank", FactKind.RANK, "40", "2026-04-02")
    assert T.row_fact(["Status", "x", "1ms", "3rd"], None, header) is None  # a generic first cell


@pytest.mark.parametrize("text, marker", [
    ("HISTORICAL — the hand-pump stub gave way to the Heron controller", (Marker.HISTORICAL, None)),
    ("plan 7; fixed watering times — SUPERSEDED by plan 8 (soil sensors)", (Marker.SUPERSEDED, "plan 8")),
    ("Veraltet: alte Deploy-Anleitung", (Marker.SUPERSEDED, None)),
    ("【廃止】旧デプロイ手順", (Marker.SUPERSEDED, None)),
    ("已废弃：旧的部署流程", (Marker.SUPERSEDED, None)),
    ("Obsolète — ancienne procédure", (Marker.SUPERSEDED, None)),
    ("orders 테이블 폐기 Phase 3 완료 — 조회/저장 모두 이전", None),  # about deprecating something else
    ("Stripe廃止の段取りと新プラン", None),
    ("Notes on the deprecated v1 API and its replacement", None),
])
def test_a_file_marker_opens_the_text_or_is_loud(text, marker):
    assert T.marker_of(text) == marker


def _said(kind: str, value: str, *, date: str | None = None, upgrade: bool = False, source: int = 1,
          assertion: int | None = 1, owner: str | None = "a", hook: bool = False) -> Said:
    return Said(kind, value, date, upgrade, source, assertion, owner, f"{kind} {value}", hook)


def test_a_version_supersedes_only_when_a_statement_says_it_moved_there():
    old = _said("version", "12", assertion=1, source=1)
    mentioned = _said("version", "14", assertion=2, source=2)
    upgraded = _said("version", "14", assertion=3, source=2, upgrade=True)
    assert T.value_updates([old, mentioned]) == []  # "v4 store" beside "the v2.3 migration": history
    assert T.value_updates([old, upgraded]) == [(upgraded, old, T.Rule.VALUE)]
    back = _said("version", "11", assertion=4, source=3, upgrade=True)
    assert T.value_updates([old, back]) == []  # a move to a lower version is no later value


def test_a_count_or_status_supersedes_by_a_later_day_and_a_status_also_by_progress():
    early = _said("count", "6", date="2026-01-01", assertion=1, source=1)
    same_day = _said("count", "5", date="2026-01-01", assertion=2, source=2)
    later = _said("count", "5", date="2026-01-05", assertion=3, source=3)
    undated = _said("count", "4", assertion=4, source=4)
    assert T.value_updates([early, same_day]) == []
    assert T.value_updates([early, later, undated]) == [(later, early, T.Rule.VALUE)]
    pending = _said("status", "pending", assertion=5, source=5)
    done = _said("status", "done", assertion=6, source=6)
    reopened = _said("status", "pending", date="2026-02-01", assertion=7, source=7)
    closed = _said("status", "done", date="2026-01-01", assertion=8, source=8)
    assert T.value_updates([pending, done]) == [(done, pending, T.Rule.VALUE)]
    assert T.value_updates([closed, reopened]) == [(reopened, closed, T.Rule.VALUE)]


def test_an_index_line_is_stale_beside_its_own_file_unless_it_is_later():
    hook = _said("count", "10", assertion=None, hook=True, owner="bots", source=9)
    own = _said("count", "9", owner="bots", assertion=1)
    elsewhere = _said("count", "8", owner="other", assertion=2, source=2)
    assert T.value_updates([hook, own, elsewhere]) == [(own, hook, T.Rule.INDEX)]
    later_hook = _said("count", "10", assertion=None, hook=True, owner="bots", source=9, date="2026-05-02")
    assert T.value_updates([later_hook, _said("count", "9", owner="bots", date="2026-05-01")]) == []
    version_hook = _said("version", "3", assertion=None, hook=True, owner="bots", source=9)
    assert T.value_updates([version_hook, _said("version", "4", owner="bots")]) == []  # "Quarto v4 requires …"


def test_a_dated_removal_after_every_dated_use_is_a_supersession_not_a_dispute():
    assert T.identifier_facts((("nightly_digest", -1),), "2026-05-09 停掉推送(nightly_digest cron 移除)") == \
        (Fact("ident:nightly_digest", FactKind.IDENTIFIER, "removed", "2026-05-09"),)
    assert T.identifier_facts((("nightly_digest", 1),), "`nightly_digest` pushes the list") == ()  # undated
    # under a dated heading ("### Changes (2026-04-09)"), an undated line takes its section's day (harm14)
    assert T.identifier_facts((("nightly_digest", 1),), "`nightly_digest` pushes the list", "2026-04-09") == \
        (Fact("ident:nightly_digest", FactKind.IDENTIFIER, "in_use", "2026-04-09"),)
    removed = ["2026-05-09"]  # each statement's day, as `identifier_facts` reads it
    assert T.removal_is_later(removed, ["2026-05-01"])
    assert not T.removal_is_later(removed, [None])  # an undated use: dispute
    assert not T.removal_is_later(removed, ["2026-05-12"])  # used after
    use = _said("identifier", "in_use", date="2026-05-01", assertion=1, source=1)
    removal = _said("identifier", "removed", date="2026-05-09", assertion=2, source=2)
    assert T.value_updates([use, removal]) == [(removal, use, T.Rule.VALUE)]
