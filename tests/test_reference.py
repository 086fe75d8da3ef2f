"""docs/reference.md documents every CLI command, HTTP route and MCP tool the code has, and the
repository points nowhere outside itself for its reference."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer.main

from kgbridge.cli import app
from ontology.backend import Backend
from ontology.http import routes
from ontology.mcp_tools import build_mcp

REPO = Path(__file__).resolve().parent.parent
REFERENCE = (REPO / "docs" / "reference.md").read_text(encoding="utf-8")


def test_every_cli_command_is_in_the_reference():
    commands = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    assert len(commands) >= 10
    missing = [name for name in commands if f"`kgbridge {name}" not in REFERENCE]
    assert not missing, f"add to docs/reference.md §6: {missing}"


def test_every_http_route_is_in_the_reference(tmp_path):
    table = routes(Backend(tmp_path), dict, memory=str)
    missing = []
    for route in table:
        for method in sorted(route.methods - {"HEAD"}):  # type: ignore[operator]
            if f"`{method} {route.path}" not in REFERENCE:
                missing.append(f"{method} {route.path}")
    assert len(table) >= 9
    assert not missing, f"add to docs/reference.md §7: {missing}"
    assert "`/mcp`" in REFERENCE


def test_every_mcp_tool_is_in_the_reference(tmp_path):
    mcp = build_mcp(Backend(tmp_path), dict, memory=str, project_slug=str)
    tools = [tool.name for tool in asyncio.run(mcp.list_tools())]
    assert "kg_memory" in tools and len(tools) >= 6
    missing = [name for name in tools if f"`{name}" not in REFERENCE]
    assert not missing, f"add to docs/reference.md §7.1: {missing}"


def test_nothing_points_outside_the_repository():
    offenders = []
    for base in ("README.md", "docs", "kgbridge", "ontology", "projection", "bench", "scripts"):
        for path in [REPO / base] if (REPO / base).is_file() else (REPO / base).rglob("*"):
            if path.is_file() and path.suffix in {".md", ".py", ".sh", ".toml"}:
                text = path.read_text(encoding="utf-8", errors="replace")
                if "shared/" in text or "CONTRACT" in text:
                    offenders.append(str(path.relative_to(REPO)))
    assert not offenders, offenders
