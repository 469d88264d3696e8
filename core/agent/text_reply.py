"""A turn's model call on the model's rung of the capability ladder, and what becomes of
a reply that calls no tool.

Before the call, the request is shaped for the model's rung (``core.llm.capabilities``);
after it, calls written in the text are read out of it and the ladder learns from the
answer. A rung that changes is saved in Redis (``Keys.llm_rungs``): a process meeting a
model for the first time starts where the others got to. A reply that still calls no tool:

- empty: the agent is asked again once; empty twice in a row ends it as failed, saying
  which setting picks another model;
- text while agents it created still work: it waits for their messages;
- text: the agent is reminded to call ``finish`` or a tool (``feedback/text_reply.j2``),
  ``agents.text_nudges`` times; then, with ``agents.text_reply = "finish"``, the text is
  its result (at once for a model on the ``text`` rung: it was never seen calling);
  with ``"nudge"`` it is reminded again. The same text twice in a row is a stall.

Replies without a call are counted in the agent's ``recent_calls`` (the stall detector's
list) as ``text:<digest>``; messages that arrive clear it, so the count is "in a row".
"""

from __future__ import annotations

import hashlib

from core.agent.context import ToolContext
from core.llm import capabilities
from core.llm.base import LLMRequest, LLMResponse
from core.llm.capabilities import Rung
from core.services import Services
from core.state import rungs
from core.types.agent import AgentState, EndReason
from core.types.chat import ChatMessage

MARK = "text:"
# What a model was seen able to do is forgotten a day after it last changed (the model
# behind a name may be replaced).
RUNGS_TTL_S = 24 * 3600
EMPTY_PLACEHOLDER = "(empty reply)"


async def offer(svc: Services, request: LLMRequest) -> tuple[LLMRequest, Rung]:
    """The request as the model's rung takes it, and that rung (a model new to this
    process starts on the rung other processes saved for it)."""
    ladder = svc.ladder
    if request.tools and not ladder.known(request.model):
        saved = await rungs.saved_rung(svc.store, request.model)
        ladder.seed(request.model, Rung(saved) if saved in tuple(Rung) else None)
    rung = ladder.rung(request.model)
    return capabilities.offer(request, rung, svc.prompts), rung


async def read(svc: Services, model: str, response: LLMResponse, allowed: list[str]) -> LLMResponse:
    """The answer with calls written in its text read out of it; the ladder learns, and
    saves a model's new rung for the other processes."""
    response, seen = capabilities.read(response, allowed)
    if allowed and svc.ladder.observe(model, seen):
        await rungs.save_rung(svc.store, model, svc.ladder.rung(model).value, RUNGS_TTL_S)
    return response


def _signature(text: str) -> str:
    normal = " ".join(text.split()).casefold()
    return MARK + hashlib.blake2b(normal.encode(), digest_size=8).hexdigest()


EMPTY = _signature("")


def _in_a_row(recent: list[str]) -> list[str]:
    """The replies without a call at the end of ``recent`` (oldest first)."""
    out: list[str] = []
    for sig in reversed(recent):
        if not sig.startswith(MARK):
            break
        out.append(sig)
    return out[::-1]


async def on_text(
    svc: Services, ctx: ToolContext, model: str, allowed: list[str], rung: Rung
) -> tuple[EndReason, str] | None:
    """Handle a reply (the thread's last message) that called no tool: nudge the agent,
    or have it wait while its team works (None: it goes on), or end it (how and why; a
    text taken as the result is set as the agent's result)."""
    state = ctx.state
    settings = svc.settings.agents
    last = state.thread[-1]
    text = (last.content or "").strip()
    sig = _signature(text)
    before = _in_a_row(state.recent_calls)
    keep = max(svc.settings.limits.stall_repeats, settings.text_nudges + 2)
    state.recent_calls = [*state.recent_calls, sig][-keep:]
    if not text:
        return _on_empty(svc, state, model, allowed, before)
    if "wait_for_messages" in allowed and await _team_at_work(svc, state):
        # Said in words while its agents still work: wait for their results, as a model
        # that calls tools would.
        ctx.wait = True
        return None
    finish = settings.text_reply == "finish"
    if finish and (len(before) >= settings.text_nudges or rung is Rung.TEXT):
        state.result = text
        return EndReason.FINISHED, ""
    if before and before[-1] == sig:
        return (
            EndReason.STALLED,
            f"replied with the same text twice in a row without calling a tool: {text[:200]}",
        )
    last_chance = finish and len(before) + 1 >= settings.text_nudges
    _nudge(svc, state, "feedback/text_reply.j2", allowed, last_chance=last_chance)
    return None


def _on_empty(
    svc: Services, state: AgentState, model: str, allowed: list[str], before: list[str]
) -> tuple[EndReason, str] | None:
    """An empty reply: asked again once; empty twice in a row ends the agent."""
    # A provider refuses an assistant message with neither text nor calls.
    state.thread[-1] = ChatMessage(role="assistant", content=EMPTY_PLACEHOLDER)
    if before and before[-1] == EMPTY:
        role = state.spec.role
        return (
            EndReason.LLM_ERROR,
            f"the model {model} replied with nothing twice in a row; choose another "
            f"model for {role} agents ([llm] model, or [llm.models] {role} in config.toml)",
        )
    _nudge(svc, state, "feedback/empty_answer.j2", allowed)
    return None


async def _team_at_work(svc: Services, state: AgentState) -> bool:
    for child in state.children:
        found = await svc.store.load_spec(state.run_id, child)
        if found is not None and not found[1].terminal:
            return True
    return False


def _nudge(
    svc: Services, state: AgentState, template: str, allowed: list[str], **extra: bool
) -> None:
    text = svc.prompts.render(template, tools=allowed, **extra)
    state.thread.append(ChatMessage(role="user", content=text))
