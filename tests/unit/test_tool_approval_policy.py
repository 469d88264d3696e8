"""Which calls need a person (``[tools.approval]``), what MCP annotations mean for it,
how a waiting call's arguments are shown (secrets masked), what the card says, and the
direct path's tools: read-only, closed-world, asking nobody."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from mcp_types import Tool as McpTool
from mcp_types import ToolAnnotations

from core.config_tools import McpServer, ToolApprovalSettings
from core.planning.router import direct_tool_names
from core.tools.approval import direct_safe, needs_approval
from core.tools.catalogue import agent_risks
from core.tools.defaults import default_registry
from core.tools.mcp.tools import hints, mcp_tool
from core.tools.registry import Tool, ToolRegistry
from core.types.approvals import ApprovalDecision, shown_arguments
from tests.conftest import make_settings

SERVER = McpServer(command="srv")


def remote(name: str, **notes: Any) -> McpTool:
    annotations = ToolAnnotations(**notes) if notes else None
    schema = {"type": "object", "properties": {}}
    return McpTool(name=name, description=f"{name}.", input_schema=schema, annotations=annotations)


def mcp(name: str, server: str = "srv", **notes: Any) -> Tool:
    conn = SimpleNamespace(name=server, server=SERVER)
    return mcp_tool(conn, remote(name, **notes))  # type: ignore[arg-type]


def policy(**rules: Any) -> ToolApprovalSettings:
    return ToolApprovalSettings(**rules)


def test_mcp_hints_left_out_count_as_the_specs_defaults() -> None:
    assert hints(SERVER, remote("plain")) == (True, True)
    assert hints(SERVER, remote("look", read_only_hint=True)) == (False, True)
    assert hints(SERVER, remote("add", destructive_hint=False)) == (False, True)
    closed = remote("calc", read_only_hint=True, open_world_hint=False)
    assert hints(SERVER, closed) == (False, False)
    trusted = McpServer(command="srv", read_only=("*",))
    assert hints(trusted, remote("plain")) == (False, True)


def test_by_default_only_destructive_mcp_tools_ask() -> None:
    rules = policy()
    assert needs_approval(rules, mcp("delete_file"))
    assert not needs_approval(rules, mcp("add_note", destructive_hint=False))
    assert not needs_approval(rules, mcp("fetch", read_only_hint=True))  # open-world: no
    builtin = default_registry(make_settings())
    assert not any(needs_approval(rules, t) for t in builtin.tools())


def test_rules_by_name_category_server_and_annotations_and_never_wins() -> None:
    registry = default_registry(make_settings())
    write, search = registry.get("write_file"), registry.get("web_search")
    assert write is not None and search is not None
    assert needs_approval(policy(tools=("write_file",)), write)
    assert needs_approval(policy(categories=("files",)), write)
    assert not needs_approval(policy(categories=("files",)), search)
    assert needs_approval(policy(servers=("tickets",)), mcp("list", "tickets", read_only_hint=True))
    assert not needs_approval(policy(servers=("tickets",)), mcp("list", read_only_hint=True))
    assert needs_approval(policy(open_world=True), mcp("fetch", read_only_hint=True))
    assert needs_approval(policy(open_world=True), search)  # built-in, on the internet
    assert needs_approval(policy(not_read_only=True), write)
    assert not needs_approval(policy(not_read_only=True), search)
    assert not needs_approval(policy(tools=("write_file",), never=("write_file",)), write)
    assert not needs_approval(policy(destructive=False), mcp("delete_file"))


def test_risks_say_internet_and_destruction_and_the_card_which_tools_ask() -> None:
    fetch = mcp("fetch", "fetch", read_only_hint=True)
    assert fetch.risks() == ["uses the internet", "MCP server fetch"]
    assert mcp("delete_file").risks() == [
        "uses the internet",
        "MCP server srv",
        "may delete or overwrite things",
    ]
    registry = default_registry(make_settings())
    registry.register(mcp("delete_file"))
    lines = agent_risks(registry, ["srv__delete_file", "write_file"], policy())
    assert lines == (
        "srv__delete_file: uses the internet, MCP server srv, may delete or overwrite things, "
        "asks a person before each call",
        "write_file: changes things",
    )
    assert agent_risks(registry, ["write_file"], policy(tools=("write_file",))) == (
        "write_file: changes things, asks a person before each call",
    )


def test_arguments_shown_with_secrets_masked_and_cut() -> None:
    raw = (
        '{"url": "https://api.example.com/v1?q=cats&api_key=S3CRET&author=bob",'
        ' "password": "hunter2", "author": "Ann", "design": "blue",'
        ' "headers": {"X-Auth-Token": "abc", "Authorization": "Bearer eyJabc.def"},'
        ' "note": "use sk-abcdefghijklmnop or https://u:pw@db.example.com/x",'
        ' "pins": [1, 2]}'
    )
    shown = shown_arguments(raw, 2000)
    for secret in ("S3CRET", "hunter2", "abc", "eyJabc", "sk-abcdefghijklmnop", ":pw@"):
        assert secret not in shown, secret
    for kept in ("q=cats", "author=bob", '"Ann"', '"blue"', "db.example.com", "1"):
        assert kept in shown, kept
    assert shown.count("••••") == 6
    assert shown_arguments('{"text": "' + "x" * 500 + '"}', 100).endswith("…")
    assert len(shown_arguments('{"text": "' + "x" * 500 + '"}', 100)) == 100
    assert shown_arguments("not json, token=abc123", 100) == "not json, token=abc123"


def test_decisions_in_plain_words() -> None:
    assert ApprovalDecision(choice="deny", name="Alice", note="too wide").said() == (
        "Denied by Alice: too wide"
    )
    assert ApprovalDecision(choice="once", name="Bob").said() == "Approved once by Bob"
    assert ApprovalDecision(choice="run", name="Bob").said() == "Approved for this run by Bob"
    assert ApprovalDecision.expired().said() == "Nobody decided in time"


def test_the_direct_path_offers_only_read_only_closed_world_tools() -> None:
    settings = make_settings()
    registry = default_registry(settings)
    for t in (
        mcp("fetch", "fetch", read_only_hint=True),  # open-world: the internet
        mcp("get-env", "everything", read_only_hint=True, open_world_hint=True),
        mcp("read", "files"),  # says nothing: may write, reaches anywhere
        mcp("write", "files", read_only_hint=False, open_world_hint=False),
        mcp("sum", "calc", read_only_hint=True, open_world_hint=False),  # safe
    ):
        registry.register(t)
    names = direct_tool_names(settings, registry)
    assert "calc__sum" in names and "finish" in names and "calculate" in names
    for unsafe in ("fetch__fetch", "everything__get-env", "files__read", "files__write"):
        assert unsafe not in names, unsafe
    assert not {"web_search", "fetch_url", "download", "write_file", "run_code"} & set(names)
    for name in names:
        t = registry.get(name)
        assert t is not None and t.read_only and not t.network and not t.open_world, name
        assert direct_safe(settings.tools.approval, t)
    # A read-only, closed-world tool that asks is not offered either (nobody approved).
    asking = make_settings(tools={"approval": {"servers": ["calc"]}})
    assert "calc__sum" not in direct_tool_names(asking, registry)


def test_the_registry_answers_the_turn_which_calls_ask() -> None:
    registry = ToolRegistry([mcp("delete_file")])
    assert registry.asks("srv__delete_file", policy())
    assert not registry.asks("srv__delete_file", policy(never=("srv__delete_file",)))
    assert not registry.asks("no_such_tool", policy())
