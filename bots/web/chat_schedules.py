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
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, assert_never
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from bots.chat.schedule_command import answer
from bots.web.chat import WebChat
from bots.web.chat_past import PastChat
from bots.web.chat_place import WEB_PLACE, web_schedules
from bots.web.chat_routes import chat_routes, form, same_origin
from bots.web.chat_view import HELPERS
from bots.web.guard import NEEDS_OPERATOR
from core.runs import schedules as plans
from core.runs.outcomes import Refused
from core.runs.schedules import ScheduleOutcome
from core.state.client import StateError
from core.types.schedules import Changed, NotUnderstood, Schedule, Scheduled

ACTIONS = ("pause", "resume", "edit", "delete")
# "schedule <when>: <task>" (or "<when> | <task>"), a budget at its end: "$2", "up to $2".
_TYPED = re.compile(r"^\s*schedule\b[:\s]*(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)
_SPLIT = re.compile(r":\s+|\s+\|\s+|\s+[—–]\s+")
_BUDGET = re.compile(
    r"[\s,;(]*(?:up\s+to|budget|max(?:imum)?)?\s*\$\s*(?P<usd>\d+(?:\.\d+)?)\s*\)?\s*$",
    re.IGNORECASE,
)
NO_STORE = "The schedules could not be read or changed just now (Redis did not answer); try again."
HOW = (
    "Type it as “schedule every weekday at 9:00: summarise the open tickets, $2” — "
    "when, a colon, the task, and a budget per firing if you like."
)


log = logging.getLogger(__name__)
# The verbs of the command every platform takes (bots.chat.schedule_command).
VERBS = frozenset({"add", "list", "pause", "resume", "delete", "edit"})


def _verb(text: str) -> str:
    words = text.split(maxsplit=2)
    return words[1].lower() if len(words) > 1 else ""


@dataclass(frozen=True)
class Typed:
    """A schedule as typed: ``when``, ``task``, ``budget_usd`` (None: the default)."""

    when: str
    task: str
    budget_usd: float | None = None


def typed(text: str) -> Typed | str | None:
    """``text`` read as "schedule …": the schedule, what is missing from it (words to
    say), or None when it does not start with "schedule" (a request)."""
    m = _TYPED.match(text)
    if m is None:
        return None
    rest = m["rest"].strip()
    budget: float | None = None
    if (b := _BUDGET.search(rest)) is not None:
        budget = float(b["usd"])
        rest = rest[: b.start()].strip()
    parts = _SPLIT.split(rest, maxsplit=1)
    if len(parts) < 2 or not parts[0].strip() or not parts[1].strip():
        return HOW
    return Typed(parts[0].strip(), parts[1].strip(), budget)


def said(outcome: ScheduleOutcome) -> tuple[str, bool]:
    """What became of an action, in plain words (the page escapes them), and whether
    it was done."""
    match outcome:
        case Scheduled(line=line) | Changed(line=line):
            return line, True
        case NotUnderstood(words=words, hint=hint):
            return f"I could not read “{words}” as a schedule. {hint}", False
        case Refused(reason=reason):
            return reason, False
        case _:
            assert_never(outcome)


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


def _money(text: str) -> float | str | None:
    text = text.strip().removeprefix("$").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return f"“{text}” is not an amount in US dollars; write one such as 2.50."
    return value if value > 0 else "Write a budget per firing above $0, such as 2.50."


async def _past(chat: WebChat) -> list[PastChat]:
    """The past chats beside the page, none if Redis does not answer."""
    try:
        return await chat.past()
    except StateError:
        return []


def schedule_routes(chat: WebChat, page: Any) -> list[tuple[str, Any, list[str]]]:
    """The schedules' routes, before the chat's (``/chat/schedules`` is not a run; a
    request typed in the chat is read here first, for "schedule …")."""
    schedules = WebSchedules(chat)

    async def shown(
        request: Request, said_: str = "", ok: bool = True, status: int = 200, **form_: str
    ) -> Response:
        t = request.query_params.get("t", "")
        default_tz, default_budget = schedules._defaults
        values = {"tz": default_tz, "budget": f"{default_budget:g}"} | form_
        return page(
            "chat_schedules.html",
            status,
            t=t,
            tq=f"?t={quote(t, safe='')}" if t else "",
            schedules=await schedules.listed(),
            said=said_,
            ok=ok,
            form=values,
            past=await _past(chat),
            **HELPERS,
        )

    def refused(request: Request) -> Response | None:
        if not chat.allowed(request):
            return PlainTextResponse(NEEDS_OPERATOR, status_code=403)
        if request.method == "POST" and not same_origin(request):
            return PlainTextResponse("Forms are taken from this site only.", status_code=403)
        return None

    async def listing(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        if request.method == "GET":
            run = request.query_params.get("run", "")
            return await shown(request, run=run)
        fields = await form(request)
        when, task, run = (fields.get(k, "").strip() for k in ("when", "task", "run"))
        keep = {"when": when, "task": task, "run": run, "tz": fields.get("tz", "")}
        budget = _money(fields.get("budget", ""))
        if isinstance(budget, str):
            return await shown(request, budget, False, 400, **keep)
        if not when or not (task or run):
            return await shown(request, "Say when, and what to run.", False, 400, **keep)
        outcome = await schedules.add(
            when,
            task=task or None,
            from_run=run or None,
            tz=fields.get("tz", "").strip(),
            budget_usd=budget,
        )
        words, ok = said(outcome)
        return await shown(request, words, ok, 200 if ok else 400, **({} if ok else keep))

    async def act(request: Request) -> Response:
        if (no := refused(request)) is not None:
            return no
        fields = await form(request)
        action, schedule_id = fields.get("action", ""), request.path_params["schedule_id"]
        if action == "edit":
            budget = _money(fields.get("budget", ""))
            if isinstance(budget, str):
                return await shown(request, budget, False, 400)
            when, tz = fields.get("when", ""), fields.get("tz", "")
            outcome = await schedules.edit(schedule_id, when, tz, budget)
        else:
            outcome = await schedules.change(schedule_id, action)
        words, ok = said(outcome)
        return await shown(request, words, ok, 200 if ok else 400)

    start = next(e for path, e, methods in chat_routes(chat, page) if path == "/chat")

    async def ask(request: Request) -> Response:
        """A request typed in the chat: "schedule …" makes a schedule (the schedules
        page says what became of it); any other goes on as a request."""
        body = await request.body()
        if (no := refused(request)) is not None:
            return no
        text = (await form(request)).get("task", "")
        read = typed(text)
        if read is None:

            async def again() -> dict[str, Any]:
                return {"type": "http.request", "body": body, "more_body": False}

            response: Response = await start(Request(request.scope, again))
            return response
        if _verb(text) in VERBS:  # the shared words: "schedule add … | …", "schedule list"
            return await shown(request, await answer(chat.svc, chat.person, WEB_PLACE, text))
        if isinstance(read, str):
            return await shown(request, read, False, 400)
        outcome = await schedules.add(read.when, task=read.task, budget_usd=read.budget_usd)
        words, ok = said(outcome)
        keep = {} if ok else {"when": read.when, "task": read.task}
        return await shown(request, words, ok, 200 if ok else 400, **keep)

    def store_answers(
        endpoint: Callable[[Request], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        """``endpoint``, saying so in plain words when Redis does not answer."""

        async def guarded(request: Request) -> Response:
            try:
                return await endpoint(request)
            except StateError:
                log.warning("a schedule's page could not reach Redis", exc_info=True)
                return await shown(request, NO_STORE, False, 503)

        return guarded

    return [
        ("/chat", store_answers(ask), ["POST"]),
        ("/chat/schedules", store_answers(listing), ["GET", "POST"]),
        ("/chat/schedules/{schedule_id}", store_answers(act), ["POST"]),
    ]
