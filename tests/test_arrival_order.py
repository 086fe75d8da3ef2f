"""What the agent reads must not depend on the order the hooks delivered the files in (ADR 0009):
an undated rival that happened to arrive on a later day "disputes", it does not "supersede"."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontology.artifact import Channel, Kind
from ontology.ingest import Ontology
from ontology.layout import drop_name
from projection.topic import APPENDIX_MARKER
from projection.view import ProjectionView

# Our own fixture: a cleanup log that removed a job, and a runbook (no date in either) that still runs it.
FILES = {
    "project_cleanup.md": "---\nname: Cleanup log\ndescription: what the spring cleanup took out\ntype: project\n"
                          "---\n\n- `night_mirror` was removed.\n",
    "reference_runbook.md": "---\nname: Runbook\ndescription: the nightly routine\ntype: reference\n---\n\n"
                            "- Run `night_mirror` each evening to copy the orders to the spare disk.\n",
}


def _appendices(tmp_path: Path, order: list[str]) -> dict[str, str]:
    """Each file's appendix after the files arrive one day apart in `order`, delivery days blanked."""
    onto = Ontology(tmp_path / "-".join(order), "arrival", create=True)
    try:
        for day, name in enumerate(order, 1):
            data = FILES[name].encode()
            onto.ingest_many([(drop_name(Kind.MEMORY.value, data, name), data, Channel.CLI)], received_at=f"2026-05-0{day}T09:00:00.000000Z")
        view = ProjectionView(onto)
        out = {}
        for name in FILES:
            appendix = view.read(name).decode().partition(APPENDIX_MARKER)[2]
            out[name] = appendix.replace("2026-05-01", "DAY").replace("2026-05-02", "DAY")
        return out
    finally:
        onto.close()


@pytest.mark.parametrize("first", sorted(FILES))
def test_an_undated_removal_and_use_read_the_same_in_either_arrival_order(tmp_path: Path, first: str):
    order = [first] + [n for n in sorted(FILES) if n != first]
    seen = _appendices(tmp_path, order)
    assert seen == _appendices(tmp_path, list(reversed(order)))
    for name, appendix in seen.items():
        assert " disputes: " in appendix, (name, appendix)  # the rival is named, as a dispute
        assert " supersedes: " not in appendix, (name, appendix)  # arrival says nothing of which is newer
