"""Structured output: ask for a JSON object (as text or one tool call), validate, repair.

A reply is accepted when it parses into the pydantic ``schema`` and the optional ``check``
finds no problems. Otherwise the exact errors go back to the model (``planning/repair.j2``)
and it tries again, ``attempts`` times in all; then :class:`PlanningError` names the last
errors. A tool call is answered with a tool message so the thread stays valid on the wire.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from core import telemetry
from core.llm.base import LLM, LLMRequest, LLMResponse
from core.planning.errors import PlanningError
from core.prompts import PromptLibrary
from core.types.chat import ChatMessage, Usage

T = TypeVar("T", bound=BaseModel)
Check = Callable[[Any], list[str]]

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@dataclass
class Meter:
    """Usage of the planning calls, summed."""

    usage: Usage = field(default_factory=Usage)
    calls: int = 0

    def add(self, response: LLMResponse) -> None:
        self.usage = self.usage + response.usage
        self.calls += 1


def submit_tool(name: str, schema: type[BaseModel]) -> dict[str, Any]:
    """The one tool a structured reply may come through: its parameters are the schema."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"Submit your answer as {schema.__name__}.",
            "parameters": schema.model_json_schema(),
        },
    }


def extract_json(text: str) -> Any:
    """The JSON object in ``text``: bare, in a ```json fence, or between the outer braces."""
    start, end = text.find("{"), text.rfind("}")
    if not 0 <= start < end:
        raise ValueError("no JSON object found in the reply: send one JSON object")
    candidates = [text.strip(), *(m.strip() for m in _FENCE.findall(text)), text[start : end + 1]]
    error = ""
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError as exc:
            error = f"not valid JSON ({exc.msg} at char {exc.pos})"
    raise ValueError(error)


def _raw(response: LLMResponse, tool_name: str) -> Any:
    if response.tool_calls:
        called = response.tool_calls[0].name
        if called != tool_name:
            raise ValueError(f"you called the tool {called!r}; answer through {tool_name!r}")
        try:
            return json.loads(response.tool_calls[0].arguments or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"tool arguments are not valid JSON ({exc.msg})") from None
    return extract_json(response.content or "")


def validation_errors(exc: ValidationError) -> list[str]:
    return [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()]


async def ask_structured(
    llm: LLM,
    prompts: PromptLibrary,
    request: LLMRequest,
    schema: type[T],
    *,
    stage: str,
    attempts: int,
    meter: Meter,
    check: Check | None = None,
) -> T:
    """One validated ``schema`` object from the model (see the module docstring)."""
    tool_name = f"submit_{stage}"
    messages = list(request.messages)
    tools = (*request.tools, submit_tool(tool_name, schema))
    errors: list[str] = []
    for _ in range(attempts):
        sent = request.model_copy(update={"messages": tuple(messages), "tools": tools})
        called_at = telemetry.clock()
        response = await llm.complete(sent)
        telemetry.model_called(sent, response, called_at)
        meter.add(response)
        try:
            value = schema.model_validate(_raw(response, tool_name))
            errors = check(value) if check is not None else []
        except ValueError as exc:  # ValidationError is a ValueError too
            errors = validation_errors(exc) if isinstance(exc, ValidationError) else [str(exc)]
        if not errors:
            return value
        feedback = prompts.render("planning/repair.j2", errors=errors, tool=tool_name)
        messages.append(response.as_message())
        if response.tool_calls:
            messages.extend(
                ChatMessage(role="tool", tool_call_id=c.id, name=c.name, content=feedback)
                for c in response.tool_calls
            )
        else:
            messages.append(ChatMessage(role="user", content=feedback))
    raise PlanningError(stage, attempts, errors)
