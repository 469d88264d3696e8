"""MCP elicitation: a server asks a person for input in the middle of a tool call.

The MCP client calls :func:`elicit` when a server sends ``elicitation/create``; the
answer (accept with content, decline, or cancel) goes back to the server. The request
becomes a form in the run's thread (a :class:`~core.types.events.FormAsked` the chat
relays render as a Slack or Discord modal, a web form or console prompts; in URL mode a
link with Done / Decline). The call is live, so it waits here, in the worker, for the
answer a bot process writes (``core.runs.people.answer_form`` →
``core.state.forms``), reading it about once a second, at most
``[mcp] elicitation_timeout_s``: then, or when the run ends, the server reads cancel.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from core.state import forms
from core.state.forms import FormReply, OpenForm
from core.types._base import new_id
from core.types.events import FormAsked, FormClosed
from core.types.forms import fields_of

if TYPE_CHECKING:
    from core.agent.context import ToolContext
    from core.state.store import Store

log = logging.getLogger(__name__)

# How often the waiting call looks for the answer, and checks every this many looks
# whether the run ended meanwhile.
POLL_S = 1.0
_RUN_CHECK_EVERY = 5


@dataclass(frozen=True)
class ElicitRequest:
    """What an MCP server asks of a person, in core's own words."""

    server: str  # the MCP server's configured name
    message: str  # what the server asks
    schema: dict[str, Any] | None  # form mode: the requestedSchema (flat object)
    url: str | None  # URL mode: the link the person opens
    elicitation_id: str | None = None


@dataclass(frozen=True)
class ElicitAnswer:
    """The person's answer, as the server receives it."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


async def elicit(ctx: ToolContext, request: ElicitRequest) -> ElicitAnswer:
    """Ask the run's people through a form in its thread and wait for their answer
    (cancel after ``[mcp] elicitation_timeout_s``, or if the run ends first)."""
    timeout_s = ctx.settings.mcp.elicitation_timeout_s
    now = time.time()
    form = OpenForm(
        id=new_id("form"),
        run_id=ctx.run_id,
        agent_id=ctx.agent_id,
        server=request.server,
        message=request.message,
        requested=None if request.url else (request.schema or {}),
        url=request.url,
        asked_at=now,
        deadline=now + timeout_s,
    )
    await forms.open_form(ctx.store, form)
    await ctx.store.emit(asked_event(form, timeout_s))
    log.info("run %s: MCP server %s asks for a form (%s)", form.run_id, form.server, form.id)
    try:
        reply = await wait_for_answer(ctx.store, form)
    except asyncio.CancelledError:
        # The call was abandoned: nobody should fill in a form nobody reads.
        with contextlib.suppress(Exception):
            await asyncio.shield(_give_up(ctx.store, form, timed_out=False))
        raise
    content = reply.content if reply.action == "accept" and form.url is None else None
    return ElicitAnswer(action=reply.action, content=content)


def asked_event(form: OpenForm, timeout_s: float) -> FormAsked:
    return FormAsked(
        run_id=form.run_id,
        agent_id=form.agent_id,
        form_id=form.id,
        server=form.server,
        message=form.message,
        fields=fields_of(form.requested),
        url=form.url,
        timeout_s=timeout_s,
    )


async def wait_for_answer(store: Store, form: OpenForm, poll_s: float | None = None) -> FormReply:
    """The answer to ``form`` once a person gave it; cancel at its deadline or when the
    run has ended (the form closed then, so a late click is told it is too late)."""
    looks, poll_s = 0, POLL_S if poll_s is None else poll_s
    while True:
        found = await forms.reply_of(store, form.run_id, form.id)
        if found is not None:
            await forms.forget(store, form.run_id, form.id)
            return found
        looks += 1
        ended = looks % _RUN_CHECK_EVERY == 0 and (await store.get_run(form.run_id)).status.terminal
        if ended or time.time() >= form.deadline:
            given_up = await _give_up(store, form, timed_out=not ended)
            if given_up is not None:
                return given_up
            continue  # answered just now: read it on the next look
        await asyncio.sleep(min(poll_s, max(0.0, form.deadline - time.time())))


async def _give_up(store: Store, form: OpenForm, *, timed_out: bool) -> FormReply | None:
    """Close the form as cancelled, unless a person answered it first (then None)."""
    reply = FormReply(action="cancel")
    if not await forms.answer(store, form.run_id, form.id, reply):
        return None
    await forms.forget(store, form.run_id, form.id)
    await store.emit(
        FormClosed(
            run_id=form.run_id,
            agent_id=form.agent_id,
            form_id=form.id,
            action="cancel",
            timed_out=timed_out,
        )
    )
    log.info(
        "run %s: form %s from %s cancelled (nobody answered)", form.run_id, form.id, form.server
    )
    return reply
