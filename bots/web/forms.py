"""A form an MCP server asks for, in the web chat: the message (an HTML form built from
the form's fields, rendered by the server and escaped like every page: ``_form.html``;
a link with Done / Decline in URL mode) and its submission
(``POST /chat/<run>/form/<form>``) → ``core.runs.people.answer_form`` as the web chat's
person (the rule — who may answer — is the people room's). A refusal or the problems
come back as a line in the thread; once answered, the form says who answered."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from bots.chat.ports import Place
from bots.web.chat import WEB, WebChat
from bots.web.chat_routes import same_origin
from bots.web.guard import NEEDS_OPERATOR
from core.runs import people
from core.runs.forms import Action
from core.runs.outcomes import Done, FormInvalid, Refused
from core.types.forms import FormField, Typed

_MAX_FIELDS = 200
_ACTIONS: dict[str, Action] = {"accept": "accept", "decline": "decline"}


def typed_of(fields: tuple[FormField, ...], posted: dict[str, list[str]]) -> dict[str, Typed]:
    """What was typed, per field (a checkbox is there or not; several picks are a list)."""
    typed: dict[str, Typed] = {}
    for field in fields:
        values = posted.get(f"f:{field.name}", [])
        if field.kind == "boolean":
            typed[field.name] = "true" in values
        elif field.kind == "choices":
            typed[field.name] = values
        else:
            typed[field.name] = values[-1] if values else None
    return typed


async def answer(chat: WebChat, run_id: str, form_id: str, posted: dict[str, list[str]]) -> str:
    """The submission through the people room; the line to show in the thread."""
    action = _ACTIONS.get((posted.get("action") or [""])[-1])
    if action is None:
        return "Choose Send or Decline."
    typed: dict[str, Typed] = {}
    if action == "accept":
        opened = await people.open_form(chat.svc, run_id, form_id, WEB, who=chat.who)
        if isinstance(opened, Refused):
            return opened.reason
        typed = typed_of(opened.fields, posted)
    outcome = await people.answer_form(chat.svc, run_id, form_id, WEB, action, typed, who=chat.who)
    if isinstance(outcome, Refused):
        return outcome.reason
    if isinstance(outcome, FormInvalid):
        return "Not sent: " + " ".join(outcome.lines)
    await _show_answered(chat, run_id, form_id, outcome)
    return ""


async def _show_answered(chat: WebChat, run_id: str, form_id: str, done: Done) -> None:
    messages, _ = await chat.transport.messages(run_id)
    found = next(
        (m for m in messages if m.kind == "form" and m.payload.get("form") == form_id), None
    )
    if found is not None:
        payload = {**found.payload, "answered": done.line}
        await chat.transport.update(Place("web", run_id), found.id, found.text, payload)


def form_routes(chat: WebChat) -> list[tuple[str, Any, list[str]]]:
    """The form's route, for the app."""

    async def submit(request: Request) -> Response:
        run_id, form_id = request.path_params["run_id"], request.path_params["form_id"]
        if not chat.allowed(request):
            return PlainTextResponse(NEEDS_OPERATOR, status_code=403)
        if not same_origin(request):
            return PlainTextResponse("Forms are taken from this site only.", status_code=403)
        body = (await request.body()).decode("utf-8", "replace")
        said = await answer(chat, run_id, form_id, parse_qs(body, max_num_fields=_MAX_FIELDS))
        if said:
            await chat.tell(run_id, said)
        return RedirectResponse(chat.path(run_id, request), status_code=303)

    return [("/chat/{run_id}/form/{form_id}", submit, ["POST"])]
