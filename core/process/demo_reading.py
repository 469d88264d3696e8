"""Reading a request the way the demos' scripted "brains" do: what was delivered, which
tools were called, what they returned. Shared by the offline demos (core/process/demo_*)."""

from __future__ import annotations

import re

from core.llm.base import LLMRequest

# A member as a team playbook lists it (core/prompts/patterns/*.md.j2).
_MEMBER = re.compile(r"^(?:- |\d+\. )(.+?) \(id (\S+)\): ", re.MULTILINE)


def delivered(request: LLMRequest, prefix: str) -> list[str]:
    """Bus deliveries (user messages) that start with ``prefix``, oldest first."""
    return [
        m.content or ""
        for m in request.messages
        if m.role == "user" and (m.content or "").startswith(prefix)
    ]


def body(delivery: str) -> str:
    """A delivery without its "[Result from …]" / "[Message from …]" header line."""
    return delivery.split("\n", 1)[1] if "\n" in delivery else ""


def called(request: LLMRequest, tool: str) -> int:
    """How many times this agent has called ``tool`` so far."""
    return sum(
        c.name == tool for m in request.messages if m.role == "assistant" for c in m.tool_calls
    )


def tool_results(request: LLMRequest, tool: str | None = None) -> list[str]:
    """What the agent's tool calls returned (of ``tool`` only, if given), oldest first."""
    return [
        m.content or ""
        for m in request.messages
        if m.role == "tool" and (tool is None or m.name == tool)
    ]


def system_text(request: LLMRequest) -> str:
    return next((m.content or "" for m in request.messages if m.role == "system"), "")


def playbook_members(request: LLMRequest) -> list[str]:
    """The names of the members the agent's team playbook lists, in its order."""
    text = system_text(request)
    start = text.find("## Playbook:")
    return [] if start < 0 else [m.group(1) for m in _MEMBER.finditer(text, start)]
