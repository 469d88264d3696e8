"""The capability ladder: how much structure a model can take, tried and remembered.

Models differ. Each model sits on one rung, per process:

1. ``native``: tools are offered the OpenAI way and calls come back as ``tool_calls``
   (a call written in the text instead is read out of it all the same);
2. ``json``: the model was seen answering a tool-calling request without calling, twice in
   a row and never natively (or wrote its calls in the text): tools are described in the
   prompt (``bus/tools_in_text.j2``), the thread is sent as plain text (calls as the
   JSON the model wrote, results as messages) and calls are read out of its answers;
3. ``text``: it did not write a call that way either: it answers in prose, and the agent
   turn takes its text as its answer without nudging it first (``core.agent.text_reply``).

A model that calls a tool natively once is ``native`` for good; one that writes a readable
call climbs back from ``text`` to ``json``. A :class:`Ladder` lives as long as its process's
services (``Services.ladder``): what was learnt about a model serves every later call.
:class:`LadderLLM` puts the ladder around any :class:`~core.llm.base.LLM`; the agent turn
uses :func:`offer` and :func:`read` around its own call path (saved answers, the keeper).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from core.llm.base import LLM, LLMRequest, LLMResponse
from core.llm.text_calls import calls_in_text, strip_reasoning
from core.prompts import PromptLibrary
from core.types.chat import ChatMessage

TEMPLATE = "bus/tools_in_text.j2"


class Rung(StrEnum):
    NATIVE = "native"
    JSON = "json"
    TEXT = "text"


class Seen(NamedTuple):
    """What one answer to a request that offered tools had."""

    native: bool  # tool calls the provider's way
    in_text: bool  # calls read out of its text


@dataclass
class _Record:
    native: bool = False
    in_text: bool = False
    # Answers in a row that called nothing (neither way).
    silent: int = 0


class Ladder:
    """The rung of each model, from what its answers had (thread-safe; process memory).

    ``patience``: answers in a row without any call before a model goes one rung down.
    """

    def __init__(self, patience: int = 2) -> None:
        self.patience = patience
        self._models: dict[str, _Record] = {}
        self._lock = threading.Lock()

    def rung(self, model: str) -> Rung:
        with self._lock:
            record = self._models.get(model)
        if record is None or record.native:
            return Rung.NATIVE
        if record.silent >= 2 * self.patience:
            return Rung.TEXT
        if record.in_text or record.silent >= self.patience:
            return Rung.JSON
        return Rung.NATIVE

    def observe(self, model: str, seen: Seen) -> bool:
        """Learn from one answer; True when the model's rung changed."""
        before = self.rung(model)
        with self._lock:
            record = self._models.get(model)
            if record is None:
                record = self._models[model] = _Record()
            record.native = record.native or seen.native
            record.in_text = record.in_text or seen.in_text
            record.silent = 0 if seen.native or seen.in_text else record.silent + 1
        return self.rung(model) is not before

    def known(self, model: str) -> bool:
        with self._lock:
            return model in self._models

    def seed(self, model: str, rung: Rung | None) -> None:
        """Start ``model`` on ``rung`` (what another process learnt; None: from scratch)."""
        record = _Record(
            native=rung is Rung.NATIVE,
            in_text=rung is Rung.JSON,
            silent=2 * self.patience if rung is Rung.TEXT else 0,
        )
        with self._lock:
            self._models.setdefault(model, record)

    def forget(self, model: str | None = None) -> None:
        """Start over for ``model`` (all models when None)."""
        with self._lock:
            if model is None:
                self._models.clear()
            else:
                self._models.pop(model, None)


def _tool_lines(tools: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    out = []
    for t in tools:
        fn = t.get("function", t)
        out.append(
            {
                "name": str(fn.get("name", "")),
                "description": str(fn.get("description", "")),
                "parameters": json.dumps(fn.get("parameters") or {}, separators=(",", ":")),
            }
        )
    return out


def _as_text(message: ChatMessage) -> ChatMessage:
    """A message of the thread as a model without tool calling reads it."""
    if message.role == "tool":
        return ChatMessage(
            role="user", content=f"Result of the tool {message.name}:\n{message.content or ''}"
        )
    if message.role == "assistant" and message.tool_calls:
        text = message.content or "\n".join(
            json.dumps({"tool": c.name, "arguments": _args(c.arguments)}, ensure_ascii=False)
            for c in message.tool_calls
        )
        return ChatMessage(role="assistant", content=text)
    return message


def _args(raw: str) -> Any:
    try:
        return json.loads(raw or "{}")
    except ValueError:
        return raw


def offer(request: LLMRequest, rung: Rung, prompts: PromptLibrary) -> LLMRequest:
    """``request`` as sent to a model on ``rung``: unchanged on ``native`` (or without
    tools); else its tools described in the system prompt and its thread in plain text,
    roles alternating."""
    if rung is Rung.NATIVE or not request.tools:
        return request
    guide = prompts.render(TEMPLATE, offered=_tool_lines(request.tools))
    messages: list[ChatMessage] = []
    for message in map(_as_text, request.messages):
        if messages and message.role == "user" and messages[-1].role == "user":
            # One turn of the person's side: strict chat templates want roles alternating.
            joined = f"{messages[-1].content or ''}\n\n{message.content or ''}"
            messages[-1] = ChatMessage(role="user", content=joined)
        else:
            messages.append(message)
    if messages and messages[0].role == "system":
        messages[0] = ChatMessage(role="system", content=f"{messages[0].content or ''}\n\n{guide}")
    else:
        messages.insert(0, ChatMessage(role="system", content=guide))
    return request.model_copy(update={"messages": tuple(messages), "tools": ()})


def tool_names(tools: Sequence[dict[str, Any]]) -> set[str]:
    return {str(t.get("function", t).get("name", "")) for t in tools}


def read(response: LLMResponse, names: Sequence[str] | set[str]) -> tuple[LLMResponse, Seen]:
    """The answer with its reasoning dropped from the text and, when it has no tool call,
    the calls of offered tools (``names``) read out of its text; and what it had."""
    content = strip_reasoning(response.content) or None
    if response.tool_calls:
        if content == response.content:  # nothing to drop (a frozen answer: kept as is)
            return response, Seen(True, False)
        return response.model_copy(update={"content": content}), Seen(True, False)
    calls = calls_in_text(response.content, names)
    return (
        response.model_copy(update={"content": content, "tool_calls": calls}),
        Seen(False, bool(calls)),
    )


class LadderLLM:
    """An :class:`~core.llm.base.LLM` with the ladder around it: a request offering tools
    goes to the model as its rung allows, and calls written in the text come back as
    tool calls. Requests without tools pass through untouched."""

    def __init__(self, inner: LLM, prompts: PromptLibrary, ladder: Ladder | None = None) -> None:
        self.inner, self.prompts = inner, prompts
        self.ladder = ladder if ladder is not None else Ladder()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if not request.tools:
            return await self.inner.complete(request)
        rung = self.ladder.rung(request.model)
        response = await self.inner.complete(offer(request, rung, self.prompts))
        response, seen = read(response, tool_names(request.tools))
        self.ladder.observe(request.model, seen)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
