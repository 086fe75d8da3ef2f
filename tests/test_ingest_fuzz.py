"""Whatever arrives, ingest answers new, duplicate or rejected-with-a-reason, never an exception and
never a merge failure, and a rebuild from the archive gives the same graph: generated artifacts mix frontmatter shapes, odd YAML values, markdown
structures, negations, `key: value` facts, wikilinks and Unicode, and are ingested into one graph."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import graph_snapshot
from ontology.artifact import Channel
from ontology.ingest import Ontology, Status

_words = st.sampled_from(["database", "postgres", "mysql", "tests", "mock", "deploy", "Friday", "uv",
                          "pip", "cache", "never", "not", "avoid", "no longer", "is", "uses", "the",
                          "`code`", "**bold**", "_em_", "[[ci-setup]]", "[link](other.md)", "é", "中文",
                          "🙂", "a:b", "#", "-", "*", "1.", ">", "|", "---", "\t", "\\", "\"", "'"])
_line = st.lists(_words, min_size=0, max_size=12).map(" ".join)
_yaml_value = st.one_of(_line, st.integers(), st.floats(allow_nan=True), st.booleans(), st.none(),
                        st.lists(_line, max_size=3), st.just("[unclosed"), st.just("{a: 1"),
                        st.just("2026-13-45T99:99:99Z"), st.just("&a [*a]"), st.just("!!python/object:os.system"))


@st.composite
def artifacts(draw) -> tuple[str, bytes]:
    keys = draw(st.lists(st.sampled_from(["name", "description", "type", "metadata", "session", "epoch",
                                          "timestamp", "modified", "phase", "title", "tags", "originSessionId"]),
                         max_size=7, unique=True))
    front = "\n".join(f"{k}: {draw(_yaml_value)}" for k in keys)
    if draw(st.booleans()) and keys:
        front += "\nmetadata:\n  type: " + draw(st.sampled_from(["user", "feedback", "project", "reference", "??"]))
    body_lines = draw(st.lists(st.one_of(
        _line, _line.map(lambda s: f"- {s}"), _line.map(lambda s: f"## {s}"), _line.map(lambda s: f"{s}: {s}"),
        st.just("```"), st.just(""), st.just("Key decisions:")), max_size=15))
    fence = draw(st.sampled_from(["---\n{front}\n---\n", "---\n{front}\n", "{front}\n---\n", "\ufeff---\r\n{front}\r\n---\r\n", ""]))
    text = fence.format(front=front) + "\n".join(body_lines)
    name = draw(st.sampled_from(["note.md", "MEMORY.md", "2026-04-05T1445Z_e001.md", "doc.txt",
                                 "memory.abcdef012345.note.md", "ledger.abcdef012345.2026-04-05T1445Z_e002.md"]))
    return name, text.encode("utf-8", "surrogatepass")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(artifacts(), min_size=1, max_size=8))
def test_any_batch_of_generated_artifacts_is_answered_item_by_item(root, batch):
    onto = Ontology(root, "fuzz", create=True)
    try:
        results = onto.ingest_many([(name, data, Channel.CLI) for name, data in batch])
        assert len(results) == len(batch)
        for result in results:
            assert result.status in (Status.NEW, Status.DUPLICATE, Status.REJECTED)
            if result.status is Status.REJECTED:
                assert result.reason and "could not be merged" not in result.reason, result.reason
        onto.close()
        before = graph_snapshot(onto.paths.database)
        onto.rebuild()
        assert graph_snapshot(onto.paths.database) == before  # the graph is a function of its archive
    finally:
        onto.close()
