"""Schedules from the web chat: "schedule every weekday at 9:00: summarise the open
tickets, $2" typed where a request goes (or the words every platform takes, "schedule
add every weekday at 9:00 | summarise the open tickets | $2", "schedule list", …:
``bots.chat.schedule_command``), "Run this every…" under a finished run's result
(a small form: when, time zone, budget per firing), and the list of the web chat's
schedules beside every chat with Pause / Resume / Delete and an Edit form (when, time
zone, budget: only what differs is changed) (``/chat/schedules``). Each is
one call of the schedules room (``core.runs.schedules``: the rule — only the owner or an
approver may change one — is there); what became of it is said on the page, escaped.

The web chat's schedules live in one place, ``web:web:chat`` ("the web chat"): each
firing is a new chat in the past chats (``bots.chat``'s delivery of firings, as a
new thread)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from bots.chat.schedule_command import answer, typed_budget
from bots.web.chat import WebChat
from bots.web.chat_past import PastChat
from bots.web.chat_place import WEB_PLACE, web_schedules
from bots.web.chat_routes import chat_routes, forbidden, foreign_form, form, same_origin
from bots.web.chat_schedule_words import HOW, VERBS, Typed, said, typed, verb
from bots.web.chat_view import HELPERS
from core.runs import schedules as plans
from core.runs.outcomes import Refused
from core.runs.schedules import ScheduleOutcome
from core.state.client import StateError
from core.types.schedules import Schedule

# HOW, Typed and typed are read here too (bots.web.chat_schedule_words has them).
__all__ = ["HOW", "NO_STORE", "Typed", "WebSchedules", "said", "schedule_routes", "typed"]

ACTIONS = ("pause", "resume", "edit", "delete")
NO_STORE = "The schedules could not be read or changed just now (Redis did not answer); try again."
Endpoint = Callable[[Request], Awaitable[Response]]

log = logging.getLogger(__name__)


class WebSchedules:
    """The web chat's schedules, made and changed by its person."""

    def __init__(self, chat: WebChat) -> None:
        self.chat = chat

    @property
    def _defaults(self) -> tuple[str, float]:
        s = self.chat.svc.settings.schedules
        return s.default_tz, s.default_budget_usd

    async def listed(self) -> tuple[Schedule, ...] | None:
        return await web_schedules(self.chat.svc)

    async def add(
        self,
        when: str,
        *,
        task: str | None = None,
        from_run: str | None = None,
        tz: str = "",
        budget_usd: float | None = None,
    ) -> ScheduleOutcome:
        return await plans.schedule(
            self.chat.svc,
            self.chat.person,
            WEB_PLACE,
            task=task,
            from_run=from_run,
            when=when,
            tz=tz or None,
            budget_usd=budget_usd,
        )

    async def change(self, schedule_id: str, action: str) -> ScheduleOutcome:
        svc, who = self.chat.svc, self.chat.person
        match action:
            case "pause":
                return await plans.pause(svc, schedule_id, who)
            case "resume":
                return await plans.resume(svc, schedule_id, who)
            case "delete":
                return await plans.delete(svc, schedule_id, who)
        return Refused(
            f"“{action}” is not something a schedule does: pause, resume, edit or delete."
        )

    async def edit(
        self, schedule_id: str, when: str, tz: str, budget_usd: float | None
    ) -> ScheduleOutcome:
        """The edit form sent: what differs from the schedule is changed."""
        return await plans.edit_form(
            self.chat.svc, schedule_id, self.chat.person, when=when, tz=tz, budget_usd=budget_usd
        )


async def _past(chat: WebChat) -> list[PastChat]:
    """The past chats beside the page, none if Redis does not answer."""
    try:
        return await chat.past()
    except StateError:
        return []


def schedule_routes(chat: WebChat, page: Any) -> list[tuple[str, Any, list[str]]]:
    """The schedules' routes, before the chat's (``/chat/schedules`` is not a run; a
    request typed in the chat is read here first, for "schedule …")."""
    pages = _SchedulePages(chat, page)
    return [
        ("/chat", pages.store_answers(pages.ask), ["POST"]),
        ("/chat/schedules", pages.store_answers(pages.listing), ["GET", "POST"]),
        ("/chat/schedules/{schedule_id}", pages.store_answers(pages.act), ["POST"]),
    ]


class _SchedulePages:
    """The schedules' endpoints: each says what became of it on the schedules page."""

    def __init__(self, chat: WebChat, page: Any) -> None:
        self.chat = chat
        self.page = page
        self.schedules = WebSchedules(chat)
        # A request typed in the chat that is not "schedule …" goes on to the chat's own.
        self.start = next(e for path, e, methods in chat_routes(chat, page) if path == "/chat")

    async def shown(
        self, request: Request, said_: str = "", ok: bool = True, status: int = 200, **form_: str
    ) -> Response:
        """The schedules page, saying ``said_``; ``form_``: the add form's values."""
        t = request.query_params.get("t", "")
        default_tz, default_budget = self.schedules._defaults
        values = {"tz": default_tz, "budget": f"{default_budget:g}"} | form_
        return self.page(
            "chat_schedules.html",
            status,
            t=t,
            tq=f"?t={quote(t, safe='')}" if t else "",
            schedules=await self.schedules.listed(),
            said=said_,
            ok=ok,
            form=values,
            past=await _past(self.chat),
            **HELPERS,
        )

    async def outcome_shown(
        self, request: Request, outcome: ScheduleOutcome, **keep: str
    ) -> Response:
        """What became of an action; ``keep``: the form's values, kept if not done."""
        words, ok = said(outcome)
        return await self.shown(request, words, ok, 200 if ok else 400, **({} if ok else keep))

    def refused(self, request: Request) -> Response | None:
        if not self.chat.allowed(request):
            return forbidden()
        if request.method == "POST" and not same_origin(request):
            return foreign_form()
        return None

    async def listing(self, request: Request) -> Response:
        """The schedules page (GET), or its add form sent (POST)."""
        if (no := self.refused(request)) is not None:
            return no
        if request.method == "GET":
            run = request.query_params.get("run", "")
            return await self.shown(request, run=run)
        fields = await form(request)
        when, task, run = (fields.get(k, "").strip() for k in ("when", "task", "run"))
        keep = {"when": when, "task": task, "run": run, "tz": fields.get("tz", "")}
        budget = typed_budget(fields.get("budget", ""))
        if isinstance(budget, str):
            return await self.shown(request, budget, False, 400, **keep)
        if not when or not (task or run):
            return await self.shown(request, "Say when, and what to run.", False, 400, **keep)
        outcome = await self.schedules.add(
            when,
            task=task or None,
            from_run=run or None,
            tz=fields.get("tz", "").strip(),
            budget_usd=budget,
        )
        return await self.outcome_shown(request, outcome, **keep)

    async def act(self, request: Request) -> Response:
        """Pause, Resume, Delete or the Edit form of one schedule."""
        if (no := self.refused(request)) is not None:
            return no
        fields = await form(request)
        action, schedule_id = fields.get("action", ""), request.path_params["schedule_id"]
        if action == "edit":
            budget = typed_budget(fields.get("budget", ""))
            if isinstance(budget, str):
                return await self.shown(request, budget, False, 400)
            when, tz = fields.get("when", ""), fields.get("tz", "")
            outcome = await self.schedules.edit(schedule_id, when, tz, budget)
        else:
            outcome = await self.schedules.change(schedule_id, action)
        return await self.outcome_shown(request, outcome)

    async def ask(self, request: Request) -> Response:
        """A request typed in the chat: "schedule …" makes a schedule (the schedules
        page says what became of it); any other goes on as a request."""
        body = await request.body()
        if (no := self.refused(request)) is not None:
            return no
        text = (await form(request)).get("task", "")
        read = typed(text)
        if read is None:
            return await self.as_request(request, body)
        if verb(text) in VERBS:  # the shared words: "schedule add … | …", "schedule list"
            chat = self.chat
            return await self.shown(request, await answer(chat.svc, chat.person, WEB_PLACE, text))
        if isinstance(read, str):
            return await self.shown(request, read, False, 400)
        outcome = await self.schedules.add(read.when, task=read.task, budget_usd=read.budget_usd)
        return await self.outcome_shown(request, outcome, when=read.when, task=read.task)

    async def as_request(self, request: Request, body: bytes) -> Response:
        """The chat's own ``/chat``, given the body already read."""

        async def again() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        response: Response = await self.start(Request(request.scope, again))
        return response

    def store_answers(self, endpoint: Endpoint) -> Endpoint:
        """``endpoint``, saying so in plain words when Redis does not answer."""

        async def guarded(request: Request) -> Response:
            try:
                return await endpoint(request)
            except StateError:
                log.warning("a schedule's page could not reach Redis", exc_info=True)
                return await self.shown(request, NO_STORE, False, 503)

        return guarded
