"""The direct client's request body, its messages' JSON kept from one request to the
next: byte for byte the JSON of the whole payload, however the thread changes."""

from __future__ import annotations

import random
from typing import Any

from pydantic_core import to_json

from core.config import LLMSettings
from core.llm.base import LLMRequest
from core.llm.openai_compat import OpenAICompatClient
from core.types.chat import ChatMessage, ToolCall

_TOOLS = ({"type": "function", "function": {"name": "f", "parameters": {}}},)
_OTHER = {"type": "function", "function": {"name": "g", "parameters": {"type": "object"}}}
# Tool sets: none, shared, the same functions in other outer dicts (a request's validation
# copies them), another, a tool of another shape, and the first again with the same name.
_TOOL_SETS: tuple[tuple[dict[str, Any], ...], ...] = (
    (),
    _TOOLS,
    ({"type": "function", "function": _TOOLS[0]["function"]},),
    (_OTHER, *_TOOLS),
    ({"function": _TOOLS[0]["function"], "type": "function", "strict": True},),
    ({"type": "function", "function": {"name": "f", "parameters": {"x": 1}}},),
)
_FORMATS = (None, None, {"type": "json_object"}, {"type": "json_schema", "json_schema": {}})


def _message(rng: random.Random, step: int) -> ChatMessage:
    role = rng.choice(["system", "user", "assistant", "tool"])
    calls = [ToolCall(id=f"c{step}", name="f", arguments='{"a": 1}')] if role == "assistant" else []
    return ChatMessage(
        role=role,  # type: ignore[arg-type]
        content=rng.choice([None, f'x"é\u0000\n{step}', ""]),
        tool_calls=calls if rng.random() < 0.5 else [],
        tool_call_id=f"c{step}" if role == "tool" else None,
        name="f" if rng.random() < 0.5 else None,
    )


def test_the_body_is_the_payloads_json_as_the_thread_grows_and_changes() -> None:
    client = OpenAICompatClient(LLMSettings())
    rng = random.Random(25)
    # The second sees images; the third's name has a '"' (escaped in the JSON).
    for model in ("hosted_vllm/blind-model", "openai/gpt-4o", 'openai/o"quoted'):
        thread: list[ChatMessage] = []
        for step in range(400):
            r = rng.random()
            if r < 0.5 or not thread:
                thread.append(_message(rng, step))
            elif r < 0.6:  # a tool returned images (the last message, in place)
                thread[-1].images = ("data:image/png;base64,AAAA",)
            elif r < 0.7:  # a message replaced
                i = rng.randrange(len(thread))
                thread[i] = thread[i].model_copy(update={"content": f"new {step}"})
            elif r < 0.75:  # shortened
                thread = thread[: rng.randrange(len(thread))]
            elif r < 0.8:  # another list of the same messages
                thread = list(thread)
            note = (ChatMessage(role="user", content="a note"),) if rng.random() < 0.3 else ()
            request = LLMRequest(
                model=model,
                messages=(*thread, *note),
                tools=rng.choice(_TOOL_SETS),
                response_format=rng.choice(_FORMATS),
                stream=rng.random() < 0.2,
                max_tokens=rng.choice([None, 7]),
            )
            assert client._body(request) == to_json(client._payload(request)), step
