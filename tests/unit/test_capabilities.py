"""The capability ladder and calls read out of text: what small and local models write."""

from __future__ import annotations

import json

import pytest

from core.llm.base import LLMRequest, LLMResponse
from core.llm.capabilities import Ladder, LadderLLM, Rung, Seen, offer, read
from core.llm.scripted import Reply, ScriptedModel, call
from core.llm.text_calls import calls_in_text, strip_reasoning
from core.prompts import PromptLibrary
from core.tools._coerce import NotAnObject, coerce, decode_arguments, lone_string, single_kinds
from core.tools.builtin import default_registry
from core.types.chat import ChatMessage, ToolCall

NAMES = {"finish", "calculate", "read_file"}
PROMPTS = PromptLibrary()


def _calls(text: str) -> list[tuple[str, dict[str, object]]]:
    return [(c.name, json.loads(c.arguments)) for c in calls_in_text(text, NAMES)]


@pytest.mark.parametrize(
    "text",
    [
        '{"tool": "finish", "arguments": {"result": "Paris"}}',
        'Sure!\n```json\n{"tool": "finish", "arguments": {"result": "Paris"}}\n```\nBye.',
        'I will finish: {"name": "finish", "arguments": {"result": "Paris"}} as asked.',
        '{"type": "function", "function": {"name": "finish", "arguments": "{\\"result\\": '
        '\\"Paris\\"}"}}',
        '<think>Should I use {"tool": "calculate"}? No.</think>\n'
        '{"tool": "finish", "arguments": {"result": "Paris"}}',
        '{"tool": "finish", "arguments": {"result": "Paris",},}',  # trailing commas
        "{'tool': 'finish', 'arguments': {'result': 'Paris'}}",  # Python quoting
        '{"tool": "finish", "result": "Paris"}',  # arguments inline
        '{"tool_calls": [{"function": {"name": "finish", "arguments": {"result": "Paris"}}}]}',
        'reasoning first</think>\n```\n{"tool": "finish", "args": {"result": "Paris"}}\n```',
        '[finish(result="Paris")]',  # Llama 3.2's pythonic calls
        "```python\nfinish(result='Paris')\n```",
    ],
)
def test_a_call_is_read_out_of_the_ways_models_write_it(text: str) -> None:
    calls = calls_in_text(text, NAMES)
    assert [c.name for c in calls] == ["finish"]
    assert decode_arguments(calls[0].arguments) == {"result": "Paris"}


def test_a_list_of_calls_and_calls_in_several_fences() -> None:
    listed = (
        '[{"tool": "calculate", "arguments": {"expression": "6*7"}}, '
        '{"tool": "finish", "arguments": {"result": "42"}}]'
    )
    assert [n for n, _ in _calls(listed)] == ["calculate", "finish"]
    fenced = (
        'First:\n```json\n{"tool": "calculate", "arguments": {"expression": "1+1"}}\n```\n'
        'then\n```json\n{"tool": "read_file", "arguments": {"path": "a.txt"}}\n```'
    )
    assert _calls(fenced) == [
        ("calculate", {"expression": "1+1"}),
        ("read_file", {"path": "a.txt"}),
    ]
    multiline = '{"tool": "finish", "arguments": {"result": "line one\nline two"}}'
    assert _calls(multiline) == [("finish", {"result": "line one\nline two"})]


@pytest.mark.parametrize(
    "text",
    [
        "The capital of France is Paris.",
        '{"name": "Paris", "population": 2100000}',  # JSON, but no offered tool
        '{"name": "launch_rockets", "arguments": {}}',  # a tool nobody offered, loosely
        '{"tool": "launch", "arguments": {}, "city": "Paris"}',  # more than a call
        '[{"tool": "finish", "arguments": {}}, {"city": "Paris"}]',  # part of it is no call
        '<think>I could write {"tool": "finish", "arguments": {}}</think>Paris.',
        "{unbalanced: 'brace'",
        'print("Paris")',  # Python, but no offered tool
        'finish("Paris")',  # positional: no guessing which argument
        "",
    ],
)
def test_no_call_is_invented(text: str) -> None:
    assert calls_in_text(text, NAMES) == ()


def test_an_unmistakable_call_of_a_tool_not_offered_is_read_to_be_refused() -> None:
    calls = calls_in_text('```json\n{"tool": "web_search", "arguments": {"q": "x"}}\n```', NAMES)
    assert [(c.name, c.arguments) for c in calls] == [("web_search", '{"q": "x"}')]


def test_reasoning_is_dropped_from_the_text() -> None:
    assert strip_reasoning("<think>a\nb</think>\n\nParis.") == "Paris."
    assert strip_reasoning("hidden thoughts</think>Paris.") == "Paris."
    assert strip_reasoning("Paris.<think>and then I was cut off") == "Paris."
    assert strip_reasoning(None) == ""


def test_the_ladder_goes_down_only_for_models_never_seen_calling() -> None:
    ladder = Ladder(patience=2)
    silent, native, written = Seen(False, False), Seen(True, False), Seen(False, True)
    assert ladder.rung("m") is Rung.NATIVE
    ladder.observe("m", silent)
    assert ladder.rung("m") is Rung.NATIVE
    ladder.observe("m", silent)
    assert ladder.rung("m") is Rung.JSON
    ladder.observe("m", silent)
    ladder.observe("m", silent)
    assert ladder.rung("m") is Rung.TEXT
    ladder.observe("m", written)  # it wrote a call after all: back to json
    assert ladder.rung("m") is Rung.JSON
    assert ladder.rung("other") is Rung.NATIVE  # per model

    ladder.observe("good", native)
    for _ in range(10):
        ladder.observe("good", silent)
    assert ladder.rung("good") is Rung.NATIVE  # once native, always native
    ladder.observe("prose", written)
    assert ladder.rung("prose") is Rung.JSON  # writes calls in text: describe the tools
    ladder.forget()
    assert ladder.rung("m") is Rung.NATIVE


def test_on_the_json_rung_tools_go_in_the_prompt_and_the_thread_is_text() -> None:
    tools = tuple(t.openai_schema() for t in default_registry().subset(["calculate", "finish"]))
    call_ = ToolCall(id="c1", name="calculate", arguments='{"expression": "6*7"}')
    request = LLMRequest(
        model="m",
        messages=(
            ChatMessage(role="system", content="You are Solo."),
            ChatMessage(role="user", content="6*7?"),
            ChatMessage(role="assistant", tool_calls=[call_]),
            ChatMessage(role="tool", tool_call_id="c1", name="calculate", content="6*7 = 42"),
            ChatMessage(role="user", content="[A message from Lead] Hurry."),
        ),
        tools=tools,
    )
    assert offer(request, Rung.NATIVE, PROMPTS) == request
    sent = offer(request, Rung.JSON, PROMPTS)
    assert sent.tools == ()
    system = sent.messages[0].content or ""
    assert system.startswith("You are Solo.") and '{"tool": "<tool name>"' in system
    assert "`calculate`" in system and '"expression"' in system
    assert [m.role for m in sent.messages] == ["system", "user", "assistant", "user"]
    assert not any(m.tool_calls for m in sent.messages)
    assert json.loads(sent.messages[2].content or "") == {
        "tool": "calculate",
        "arguments": {"expression": "6*7"},
    }
    assert sent.messages[3].content == (
        "Result of the tool calculate:\n6*7 = 42\n\n[A message from Lead] Hurry."
    )


def test_read_keeps_native_calls_and_finds_written_ones() -> None:
    native = LLMResponse(
        model="m",
        content="<think>hm</think>",
        tool_calls=(ToolCall(id="1", name="finish", arguments="{}"),),
    )
    kept, seen = read(native, NAMES)
    assert seen == Seen(True, False) and kept.tool_calls == native.tool_calls
    assert kept.content is None
    written = LLMResponse(model="m", content='ok {"tool": "finish", "arguments": {"result": 1}}')
    found, seen = read(written, NAMES)
    assert seen == Seen(False, True) and [c.name for c in found.tool_calls] == ["finish"]
    prose, seen = read(LLMResponse(model="m", content="<think>x</think>Paris."), NAMES)
    assert seen == Seen(False, False) and prose.content == "Paris." and not prose.tool_calls


async def test_ladder_llm_learns_a_text_only_model_and_offers_tools_in_text() -> None:
    model = ScriptedModel(responder=lambda _r: Reply(content="Paris."))
    llm = LadderLLM(model, PROMPTS)
    tools = (default_registry().get("finish").openai_schema(),)  # type: ignore[union-attr]
    request = LLMRequest(
        model="small", messages=(ChatMessage(role="user", content="Capital?"),), tools=tools
    )
    for _ in range(3):
        await llm.complete(request)
    assert [bool(r.tools) for r in model.requests] == [True, True, False]
    assert "Calling tools" in (model.requests[2].messages[0].content or "")
    model.script(
        "*", Reply(content='```json\n{"tool": "finish", "arguments": {"result": "P"}}\n```')
    )
    answer = await llm.complete(request)
    assert [c.name for c in answer.tool_calls] == ["finish"]
    plain = LLMRequest(model="small", messages=(ChatMessage(role="user", content="hi"),))
    await llm.complete(plain)
    assert model.requests[-1] == plain  # no tools: untouched
    scripted = ScriptedModel().script("*", Reply(calls=(call("finish", {"result": "x"}),)))
    assert (await LadderLLM(scripted, PROMPTS).complete(request)).tool_calls[0].name == "finish"


def test_arguments_are_decoded_twice_and_coerced_by_the_schema() -> None:
    assert decode_arguments('"{\\"result\\": \\"Paris\\"}"') == {"result": "Paris"}
    assert decode_arguments("") == {} and decode_arguments("null") == {}
    with pytest.raises(NotAnObject):
        decode_arguments("[1, 2]")
    with pytest.raises(NotAnObject):
        decode_arguments('"just a sentence"')
    # A tool whose only parameter is a string takes a bare text as that parameter.
    lone = lone_string(default_registry().get("finish")._schema)  # type: ignore[union-attr]
    assert lone == "result"
    assert decode_arguments("Paris", lone) == {"result": "Paris"}
    assert decode_arguments('"Paris"', lone) == {"result": "Paris"}
    with pytest.raises(json.JSONDecodeError):
        decode_arguments('{"result": "Par', lone)
    schema = {
        "properties": {
            "page": {"type": "integer"},
            "after": {"type": "number"},
            "flag": {"type": "boolean"},
            "text": {"type": "string"},
            "data": {"type": "object"},
            "items": {"anyOf": [{"type": "array"}, {"type": "null"}]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        }
    }
    got = coerce(
        {
            "page": "3",
            "after": "2.5",
            "flag": "true",
            "text": 42,
            "data": '{"a": 1}',
            "items": "[1, 2]",
            "either": "7",
            "unknown": "5",
        },
        schema,
    )
    assert got == {
        "page": 3,
        "after": 2.5,
        "flag": True,
        "text": "42",
        "data": {"a": 1},
        "items": [1, 2],
        "either": "7",  # two types: no guess
        "unknown": "5",
    }
    # What cannot be set right is left for validation to refuse.
    assert coerce({"page": "three", "data": "not json"}, schema) == {
        "page": "three",
        "data": "not json",
    }
    # The types found once (a registered tool keeps them) set the same things right.
    kinds = single_kinds(schema)
    assert kinds is not None and "either" not in kinds and kinds["items"] == "array"
    wrong = {"page": "3", "text": 42, "either": "7", "unknown": "5"}
    assert coerce(wrong, schema, kinds) == coerce(wrong, schema)
    assert single_kinds({"type": "object"}) is None
    assert coerce({"a": "1"}, {"type": "object"}) == {"a": "1"}
    finish = default_registry().get("finish")
    assert finish is not None and finish._lone == "result" and finish._kinds == {"result": "string"}


def test_an_answer_with_calls_and_nothing_to_drop_is_kept_as_it_is() -> None:
    calls = (ToolCall(id="c", name="finish", arguments="{}"),)
    plain = LLMResponse(model="m", content="done", tool_calls=calls)
    got, seen = read(plain, ["finish"])
    assert got is plain and seen == Seen(True, False)
    thinking = LLMResponse(model="m", content="<think>hm</think> done", tool_calls=calls)
    got, _ = read(thinking, ["finish"])
    assert got.content == "done" and got.tool_calls == calls and thinking.content != "done"
    empty = LLMResponse(model="m", content="", tool_calls=calls)
    assert read(empty, ["finish"])[0].content is None
