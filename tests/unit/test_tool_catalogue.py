"""What approvers and the planner are told about tools: purpose, category, risks; tools
switched off in config; `caramba tools`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bots.cli import app
from bots.slack.blocks import proposal_blocks
from core.agent.context import ToolContext
from core.errors import ConfigError
from core.prompts import PromptLibrary
from core.runs.approval import view
from core.tools.catalogue import agent_risks, catalogue, risk_of
from core.tools.defaults import default_registry
from core.tools.registry import tool
from core.types import AgentSpec
from core.types.run import RunState
from tests.conftest import make_settings


@tool(read_only=False, category="code", runs_code=True)
async def run_it(ctx: ToolContext, code: str) -> str:
    """Run code somewhere. It has a second sentence, e.g. this one.

    Args:
        code: The code.
    """
    return code


@tool(category="web", network=True)
async def look_up(query: str) -> str:
    """Look something up on the internet.

    Args:
        query: What to look for.
    """
    return query


def _registry(**tools_settings: object):  # type: ignore[no-untyped-def]
    settings = make_settings(tools=tools_settings)
    registry = default_registry(settings)
    for t in (run_it, look_up):
        registry.register(t)
    registry.disable(settings.tools.disabled)
    return registry


def test_purpose_and_risks_in_plain_words() -> None:
    assert run_it.purpose == "Run code somewhere."
    assert run_it.risks() == ["runs code (sandboxed)", "changes things"]
    assert look_up.risks() == ["uses the internet"]
    registry = _registry()
    assert risk_of(registry, "calculate") == []
    assert risk_of(registry, "github__create_issue") == ["MCP server github"]
    risky = agent_risks(registry, ["finish", "send_message", "run_it", "look_up", "calculate"])
    assert risky == ("run_it: runs code (sandboxed), changes things", "look_up: uses the internet")


def test_the_planner_sees_the_catalogue_by_category_with_flags() -> None:
    registry = _registry()
    entries = catalogue(registry)
    assert [e["category"] for e in entries] == sorted(e["category"] for e in entries)
    text = PromptLibrary().render(
        "planning/planner.j2",
        task="t",
        tool_docs=entries,
        patterns=["fan_out"],
        base_tools=["finish"],
        caps={
            k: 1
            for k in (
                "max_depth",
                "children_per_agent",
                "per_run",
                "tokens_per_run",
                "tokens_per_agent",
                "cost_per_run_usd",
            )
        },
        library_cohorts=[],
        library_agents=[],
        attached=[],
    )
    assert "\ncode:\n" in text
    assert "- `run_it` (runs code (sandboxed), changes things)" in text
    assert "- `calculate` (read-only)" in text


def test_tools_switched_off_by_name_or_category_say_why() -> None:
    registry = _registry(disabled=["code", "calculate"])
    assert "run_it" not in registry and "calculate" not in registry
    assert "look_up" in registry
    assert registry.unavailable["calculate"] == "switched off in config (tools.disabled)"
    with pytest.raises(ConfigError, match="switches off finish, roster, send_message"):
        default_registry(make_settings(tools={"disabled": ["finish", "team"]}))


def test_the_card_shows_each_agents_risky_tools() -> None:
    settings = make_settings()
    agent = AgentSpec(name="Analyst", role="orchestrator", tools=("run_it", "finish", "look_up"))
    run = RunState(id="run_1", task="analyse <!channel>", requested_by="U1", root=agent)
    card = view(settings, run, _registry())
    assert card.agents[0].risks == (
        "run_it: runs code (sandboxed), changes things",
        "look_up: uses the internet",
    )
    blocks = json.dumps([b.to_dict() for b in proposal_blocks(card)])
    assert ":warning: run_it: runs code (sandboxed), changes things" in blocks


def test_caramba_tools_lists_tools_and_why_one_is_unavailable(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CARAMBA_TOOLS__DISABLED", '["days_between"]')
    result = CliRunner().invoke(app, ["tools"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "read_file" in result.output and "files" in result.output
    assert "days_between" in result.output and "switched off in config" in result.output


@pytest.mark.integration
def test_caramba_tools_lists_an_mcp_servers_tools_and_a_server_that_is_down(
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    import sys
    from pathlib import Path

    fake = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")
    servers = {
        "fake": {"command": sys.executable, "args": [fake], "read_only": ["add"]},
        "gone": {"command": "/nonexistent/mcp-server"},
    }
    monkeypatch.setenv("CARAMBA_MCP__SERVERS", json.dumps(servers))
    result = CliRunner().invoke(app, ["tools"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "fake__add" in result.output and "MCP server fake" in result.output
    assert "gone__*" in result.output and "unavailable" in result.output
