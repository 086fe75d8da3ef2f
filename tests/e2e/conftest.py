"""Fixtures for the end-to-end tests: a sandbox per test with the real agent binary, the fake model
and, where a test needs one, a real `kgbridge serve` on the sandbox's knowledge root."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.server_proc import ServerProcess
from support.agents import AgentSandbox, FakeModel, agent_bin


def _sandbox(tmp_path: Path, api: str) -> Iterator[AgentSandbox]:
    binaries = agent_bin()
    model = FakeModel(api, tmp_path)
    try:
        yield AgentSandbox(tmp_path, bin=binaries, model=model).setup()
    finally:
        model.stop()


@pytest.fixture
def claude_box(tmp_path: Path) -> Iterator[AgentSandbox]:
    yield from _sandbox(tmp_path, "anthropic")


@pytest.fixture
def codex_box(tmp_path: Path) -> Iterator[AgentSandbox]:
    yield from _sandbox(tmp_path, "responses")


@pytest.fixture
def serve() -> Iterator[object]:
    """Call with a sandbox to start `kgbridge serve` on its root; stopped at teardown, once what the
    sandbox's hooks started in the background has ended (while the server is still there to take it:
    a worker facing a stopped server would back off for minutes, then be stopped by the sweep)."""
    started: list[ServerProcess] = []
    boxes: list[AgentSandbox] = []

    def start(box: AgentSandbox) -> ServerProcess:
        box.root.mkdir(exist_ok=True)
        started.append(ServerProcess(box.root).start())
        box.server_url = started[-1].url
        boxes.append(box)
        return started[-1]

    yield start
    try:
        for box in boxes:
            box.settled()
    finally:
        for server in started:
            server.stop()
