"""ToolRegistry, the @tool decorator and the built-in tools."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import Any

import pytest

from core.agent.context import ToolContext
from core.errors import ToolRetry
from core.prompts import PromptLibrary
from core.tools import Tool, ToolRegistry, ToolResult, tool
from core.tools.builtin import BUILTIN_TOOLS, calculate, default_registry
from core.types import AgentSpec, AgentState, ToolCall

PROMPTS = PromptLibrary()


# --- tools used by the tests ---------------------------------------------------------------


@tool
async def greet(ctx: ToolContext, name: str, times: int = 1) -> str:
    """Greet someone by name.

    Args:
        name: Who to greet.
        times: How many times to say hello,
            at least once.
    """
    return f"[{ctx.run_id}] " + " ".join(f"Hello, {name}!" for _ in range(times))


@tool
async def boom() -> str:
    """Always fails with a bug."""
    raise RuntimeError("kaboom")


@tool
async def picky() -> str:
    """Always asks the model to try again."""
    raise ToolRetry("use a smaller number, please")


@tool
async def long_text(n: int) -> str:
    """Return n times the letter x.

    Args:
        n: How many letters.
    """
    return "x" * n


@tool(name="lookup", read_only=False)
async def lookup_fn(key: str) -> dict[str, Any]:
    """Look a key up.

    Args:
        key: The key.
    """
    return {"key": key, "values": [1, 2]}


TEST_TOOLS = (greet, boom, picky, long_text, lookup_fn)


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry((*BUILTIN_TOOLS, *TEST_TOOLS))


@pytest.fixture
def ctx() -> ToolContext:
    state = AgentState(spec=AgentSpec(name="t"), run_id="r")
    return ToolContext(services=SimpleNamespace(), state=state)  # type: ignore[arg-type]


async def run(
    registry: ToolRegistry,
    ctx: ToolContext,
    name: str,
    args: dict[str, Any] | str = "{}",
    *,
    allowed: list[str] | None = None,
    max_chars: int = 8000,
) -> ToolResult:
    arguments = args if isinstance(args, str) else json.dumps(args)
    call = ToolCall(id="call_1", name=name, arguments=arguments)
    allowed = registry.names() if allowed is None else allowed
    result = await registry.execute(ctx, call, allowed, PROMPTS, max_chars)
    assert result.call is call
    return result


# --- @tool and schemas ---------------------------------------------------------------------


def test_schema_from_hints_and_docstring() -> None:
    schema = greet.openai_schema()
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == "greet"
    assert fn["description"] == "Greet someone by name."
    params = fn["parameters"]
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert params["required"] == ["name"]
    assert set(params["properties"]) == {"name", "times"}  # ctx is not an argument
    assert params["properties"]["name"] == {"type": "string", "description": "Who to greet."}
    times = params["properties"]["times"]
    assert times["type"] == "integer"
    assert times["default"] == 1
    assert times["description"] == "How many times to say hello, at least once."
    assert '"title"' not in json.dumps(params)
    assert json.loads(greet.parameters_json()) == params
    assert greet.takes_context is True
    assert greet.read_only is True


def test_schema_of_tool_without_arguments() -> None:
    params = boom.openai_schema()["function"]["parameters"]
    assert params["properties"] == {}
    assert "required" not in params
    assert boom.takes_context is False


def test_custom_name_and_read_only() -> None:
    assert isinstance(lookup_fn, Tool)
    assert lookup_fn.name == "lookup"
    assert lookup_fn.read_only is False
    assert lookup_fn.openai_schema()["function"]["name"] == "lookup"


def test_argument_named_title_is_kept() -> None:
    @tool
    async def make_note(title: str, body: str = "") -> str:
        """Make a note.

        Args:
            title: The note's title.
            body: The text.
        """
        return title

    params = make_note.openai_schema()["function"]["parameters"]
    assert set(params["properties"]) == {"title", "body"}
    assert params["properties"]["title"]["description"] == "The note's title."


def test_sync_function_is_rejected() -> None:
    def not_async(x: int) -> int:
        """Not async."""
        return x

    with pytest.raises(TypeError, match="not_async must be an async function"):
        tool(not_async)  # type: ignore[arg-type]


def test_tool_without_docstring_is_rejected() -> None:
    async def silent(x: int) -> int:
        return x

    with pytest.raises(TypeError, match="silent needs a docstring"):
        tool(silent)


def test_duplicate_name_is_rejected() -> None:
    registry = ToolRegistry([greet])
    with pytest.raises(ValueError, match="'greet' is registered twice"):
        registry.register(greet)
    with pytest.raises(ValueError, match="registered twice"):
        ToolRegistry([calculate, calculate])


def test_registry_lookup_helpers(registry: ToolRegistry) -> None:
    assert registry.names() == sorted(registry.names())
    assert "greet" in registry and "fly" not in registry
    assert registry.get("lookup") is lookup_fn
    assert registry.get("fly") is None
    assert registry.unknown(["greet", "fly", "swim"]) == ["fly", "swim"]
    assert registry.subset(["boom", "fly", "greet"]) == [boom, greet]
    assert default_registry().names() == ["calculate", "current_time", "days_between", "finish"]


# --- execute -------------------------------------------------------------------------------


async def test_valid_call_returns_ok(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "greet", {"name": "Ana", "times": 2})
    assert result.ok is True
    assert result.content == "[r] Hello, Ana! Hello, Ana!"


async def test_empty_arguments_mean_no_arguments(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "boom", "")
    assert result.ok is False  # reached the tool (which fails), not an argument error
    assert "kaboom" in result.content


async def test_non_string_result_is_json(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "lookup", {"key": "k"})
    assert result.ok is True
    assert json.loads(result.content) == {"key": "k", "values": [1, 2]}


async def test_malformed_json(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "greet", '{"name": ')
    assert result.ok is False
    assert 'arguments for "greet" are invalid' in result.content
    assert "not valid JSON" in result.content
    assert greet.parameters_json() in result.content  # shows the expected schema


async def test_non_object_arguments(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "greet", '["Ana"]')
    assert result.ok is False
    assert "arguments must be a JSON object" in result.content


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"name": "Ana", "times": "many"}, "times: Input should be a valid integer"),
        ({}, "name: Field required"),
        ({"name": "Ana", "colour": "red"}, "colour: Extra inputs are not permitted"),
    ],
)
async def test_validation_error(
    registry: ToolRegistry, ctx: ToolContext, args: dict[str, Any], fragment: str
) -> None:
    result = await run(registry, ctx, "greet", args)
    assert result.ok is False
    assert 'arguments for "greet" are invalid' in result.content
    assert fragment in result.content


async def test_unknown_tool_lists_available(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "fly", allowed=["calculate", "finish"])
    assert result.ok is False
    assert 'no tool named "fly"' in result.content
    assert "Available tools: calculate, finish." in result.content


async def test_tool_not_in_allowed_list(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "greet", {"name": "Ana"}, allowed=["calculate"])
    assert result.ok is False
    assert 'no tool named "greet"' in result.content
    assert "Available tools: calculate." in result.content


async def test_raising_tool_becomes_result(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "boom", allowed=["boom", "finish"])
    assert result.ok is False
    assert 'the tool "boom" failed: RuntimeError: kaboom' in result.content
    assert "Available tools: boom, finish." in result.content


async def test_tool_retry_message_passed_through(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "picky")
    assert result == ToolResult(result.call, False, "use a smaller number, please")


async def test_long_result_is_truncated(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "long_text", {"n": 1000}, max_chars=200)
    assert result.ok is True
    assert result.content == "x" * 200 + "\n[… truncated 800 characters]"


async def test_result_at_limit_is_not_truncated(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "long_text", {"n": 200}, max_chars=200)
    assert result.content == "x" * 200


# --- built-ins -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("366*24*3600", "366*24*3600 = 31622400"),
        ("sqrt(2)*100", "sqrt(2)*100 = 141.4213562373095"),
        ("7/2", "7/2 = 3.5"),
        ("8/2", "8/2 = 4"),
        ("7//2", "7//2 = 3"),
        ("-3 % 5", "-3 % 5 = 2"),
        ("2**10", "2**10 = 1024"),
        ("max(1, 5, 3) + abs(-2)", "max(1, 5, 3) + abs(-2) = 7"),
        ("round(pi, 2)", "round(pi, 2) = 3.14"),
        ("  (1 + 2) * 3  ", "(1 + 2) * 3 = 9"),
    ],
)
async def test_calculate_values(
    registry: ToolRegistry, ctx: ToolContext, expression: str, expected: str
) -> None:
    result = await run(registry, ctx, "calculate", {"expression": expression})
    assert result.ok is True
    assert result.content == expected


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("__import__('os').system('echo hi')", "unsupported expression element"),
        ("__import__('os')", "unsupported expression element"),
        ("(1).__class__", "unsupported expression element: Attribute"),
        ("math.pi", "unsupported expression element: Attribute"),
        ("open('x')", "unsupported expression element"),
        ("x + 1", "unsupported expression element: Name"),
        ("'a' * 3", "unsupported expression element"),
        ("True + 1", "unsupported expression element"),
        ("1 +", "not an arithmetic expression"),
        ("1/0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("2**100000", "exponent 100000 is too large"),
        ("9**9**9", "too large"),
        ("sqrt(-1)", "cannot compute"),
        ("1" * 501, "longer than 500 characters"),
    ],
)
async def test_calculate_rejects(
    registry: ToolRegistry, ctx: ToolContext, expression: str, fragment: str
) -> None:
    result = await run(registry, ctx, "calculate", {"expression": expression})
    assert result.ok is False
    assert fragment in result.content


async def test_calculate_huge_integer_result_is_a_clean_retry(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    result = await run(registry, ctx, "calculate", {"expression": "10**5000"})
    assert result.ok is False
    assert "ValueError" not in result.content


async def test_current_time_valid_zone(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "current_time", {"timezone": "Asia/Tokyo"})
    assert result.ok is True
    assert re.fullmatch(
        r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} JST \([A-Z][a-z]+day\) in Asia/Tokyo",
        result.content,
    )


async def test_current_time_defaults_to_utc(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "current_time")
    assert result.ok is True
    assert result.content.endswith(" in UTC")
    assert " UTC (" in result.content


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "../etc/passwd", "/etc/localtime", ""])
async def test_current_time_invalid_zone(
    registry: ToolRegistry, ctx: ToolContext, zone: str
) -> None:
    result = await run(registry, ctx, "current_time", {"timezone": zone})
    assert result.ok is False
    assert f"unknown time zone {zone!r}" in result.content


async def test_current_time_zone_directory_is_unknown(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    result = await run(registry, ctx, "current_time", {"timezone": "Europe"})
    assert result.ok is False
    assert "unknown time zone 'Europe'" in result.content


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        ("2024-01-01", "2024-01-08", "7 days (5 weekdays) from 2024-01-01 to 2024-01-08"),
        ("2024-01-06", "2024-01-08", "2 days (0 weekdays) from 2024-01-06 to 2024-01-08"),
        ("2024-02-01", "2024-03-01", "29 days (21 weekdays) from 2024-02-01 to 2024-03-01"),
        ("2024-01-08", "2024-01-01", "-7 days (-5 weekdays) from 2024-01-08 to 2024-01-01"),
        ("2024-05-05", "2024-05-05", "0 days (0 weekdays) from 2024-05-05 to 2024-05-05"),
    ],
)
async def test_days_between(
    registry: ToolRegistry, ctx: ToolContext, start: str, end: str, expected: str
) -> None:
    result = await run(registry, ctx, "days_between", {"start": start, "end": end})
    assert result.ok is True
    assert result.content == expected


async def test_days_between_invalid_date(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "days_between", {"start": "2024-02-30", "end": "2024-03-01"})
    assert result.ok is False
    assert 'arguments for "days_between" are invalid' in result.content
    assert "start:" in result.content


async def test_finish_records_result(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "finish", {"result": "The answer is 42."})
    assert result.ok is True
    assert result.content == "Result recorded. You are done."
    assert ctx.finish_result == "The answer is 42."


@pytest.mark.parametrize("text", ["", "   \n"])
async def test_finish_rejects_empty_result(
    registry: ToolRegistry, ctx: ToolContext, text: str
) -> None:
    result = await run(registry, ctx, "finish", {"result": text})
    assert result.ok is False
    assert "non-empty result" in result.content
    assert ctx.finish_result is None


async def test_calculate_refuses_nested_huge_powers_quickly(ctx: ToolContext) -> None:
    result = await run(default_registry(), ctx, "calculate", {"expression": "(10**1000)**10000"})
    assert not result.ok and "too large" in result.content


async def test_calculate_complex_and_bad_calls_are_clean_retries(ctx: ToolContext) -> None:
    for expression in ("(-8)**(1/3)", "min()", "round(1.5, 1e9)"):
        result = await run(default_registry(), ctx, "calculate", {"expression": expression})
        assert not result.ok and "tool failed" not in result.content, expression
