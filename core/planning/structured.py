"""Structured output: ask for a JSON object (one tool call, or text), validate, repair.

A reply is accepted when it holds a value (:mod:`core.planning.replies`) that parses into
the pydantic ``schema`` and the optional ``check`` finds no problems. Otherwise the exact
errors go back to the model (``planning/repair.j2``) and it tries again, ``attempts`` times
in all; then :class:`PlanningError` names the last errors. A tool call is answered with a
tool message so the thread stays valid on the wire.

Models differ, so the way of asking steps down a small ladder when a reply holds no JSON
at all (a model that ignores tools and answers in prose, or answers nothing):

1. ``tools``: the submit tool is offered (its JSON is also read from the text);
2. ``json_schema``: no tools; structured output with the schema (``response_format``);
3. ``json_object``: JSON mode, for servers that refuse a schema;
4. ``plain``: no tools, no ``response_format``: the JSON is read from the text.

A server that refuses a ``response_format`` (HTTP 400) is asked again one rung lower in the
same attempt. The rung a model answered on is kept in the :class:`Meter` of the planning,
so the planner starts where the router succeeded. After ``patience`` replies in a row
without JSON the model is taken not to write JSON, and the stage gives up early.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from core import telemetry
from core.errors import LLMError, LLMSetupError
from core.llm.base import LLM, LLMRequest, LLMResponse
from core.llm.text_calls import strip_reasoning
from core.planning.errors import PlanningError
from core.planning.replies import NoJSON, errors_of, extract_json, parse
from core.prompts import PromptLibrary
from core.types.chat import ChatMessage, Usage

T = TypeVar("T", bound=BaseModel)
Check = Callable[[Any], list[str]]

MODES = ("tools", "json_schema", "json_object", "plain")

__all__ = ["MODES", "Meter", "ask_structured", "extract_json", "submit_tool"]


@dataclass
class Meter:
    """Usage of the planning calls, summed; and the rung each model answered JSON on."""

    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    modes: dict[str, str] = field(default_factory=dict)

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


def _format(mode: str, schema: type[BaseModel]) -> dict[str, Any] | None:
    if mode == "json_schema":
        body = {"name": schema.__name__, "schema": schema.model_json_schema()}
        return {"type": "json_schema", "json_schema": body}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


@dataclass
class _Asking:
    """One structured question in progress: the thread, the rung, what came back."""

    request: LLMRequest
    schema: type[BaseModel]
    tool: str
    mode: str
    messages: list[ChatMessage]
    texts: list[str] = field(default_factory=list)
    silent: int = 0  # replies in a row without JSON

    def sent(self) -> LLMRequest:
        tools = (*self.request.tools, submit_tool(self.tool, self.schema))
        return self.request.model_copy(
            update={
                "messages": tuple(self.messages),
                "tools": tools if self.mode == "tools" else (),
                "response_format": _format(self.mode, self.schema),
            }
        )

    def lower(self) -> bool:
        """One rung down; False at the bottom."""
        i = MODES.index(self.mode)
        if i + 1 >= len(MODES):
            return False
        self.mode = MODES[i + 1]
        return True


async def _call(llm: LLM, asking: _Asking, meter: Meter) -> LLMResponse:
    """One reply; a refused ``response_format`` is asked again without it (a rung lower)."""
    while True:
        sent = asking.sent()
        called_at = telemetry.clock()
        try:
            response = await llm.complete(sent)
        except LLMError as exc:
            # A server that does not take the parameter answers 400 or 422 (some 500).
            refused = not isinstance(exc, LLMSetupError) and (
                not exc.retryable or exc.status in (500, 501)
            )
            if sent.response_format is None or not refused or not asking.lower():
                raise
            continue
        telemetry.model_called(sent, response, called_at)
        meter.add(response)
        return response


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
    from_text: Callable[[str], T | None] | None = None,
    patience: int = 2,
) -> T:
    """One validated ``schema`` object from the model (see the module docstring).

    ``from_text`` may read an answer out of a reply that holds no JSON (None: it cannot).
    """
    asking = _Asking(
        request=request,
        schema=schema,
        tool=f"submit_{stage}",
        mode=meter.modes.get(request.model, MODES[0]),
        messages=list(request.messages),
    )
    errors: list[str] = []
    answered_json = False
    for _ in range(attempts):
        response = await _call(llm, asking, meter)
        text = strip_reasoning(response.content)
        asking.texts.append(text)
        no_json = False
        try:
            value = parse(response, schema, asking.tool)
            answered_json = True
            errors = check(value) if check is not None else []
        except NoJSON as exc:
            no_json, errors = True, [str(exc)]
            read = from_text(text) if from_text is not None and text else None
            if read is not None:
                return read
        except ValueError as exc:  # ValidationError is a ValueError too
            answered_json = True
            errors = errors_of(exc) if isinstance(exc, ValidationError) else [str(exc)]
        if not errors:
            meter.modes[request.model] = asking.mode
            return value
        asking.silent = asking.silent + 1 if no_json else 0
        if asking.silent >= patience:
            break
        _answer(prompts, asking, response, errors, lower=no_json)
    raise PlanningError(
        stage,
        len(asking.texts),
        errors,
        model=request.model,
        answered_json=answered_json,
        replies=asking.texts,
    )


def _answer(
    prompts: PromptLibrary,
    asking: _Asking,
    response: LLMResponse,
    errors: list[str],
    *,
    lower: bool,
) -> None:
    """The thread for the next attempt: the reply and the errors (a rung lower, when the
    reply held no JSON: the thread restarts from the question, tools left out)."""
    if lower and asking.lower():
        feedback = prompts.render("planning/repair.j2", errors=errors, tool="", json_only=True)
        asking.messages = [*asking.request.messages, ChatMessage(role="user", content=feedback)]
        return
    tool = asking.tool if asking.mode == "tools" else ""
    feedback = prompts.render("planning/repair.j2", errors=errors, tool=tool, json_only=False)
    asking.messages.append(response.as_message())
    if response.tool_calls:
        asking.messages.extend(
            ChatMessage(role="tool", tool_call_id=c.id, name=c.name, content=feedback)
            for c in response.tool_calls
        )
    else:
        asking.messages.append(ChatMessage(role="user", content=feedback))
