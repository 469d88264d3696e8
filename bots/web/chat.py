"""The web chat: the chat layer's third adapter. A person types a request and gets what
Slack and Discord show — the proposal card with Approve / Reject, progress, agents'
questions to answer, Cancel, the result and its files, 👍/👎 — in a page of its own
(``/chat/<run>``), relayed by the shared chat layer (``bots.chat``) into a thread kept in
Redis (:mod:`bots.web.chat_transport`).

The person is ``web`` (the requester of the runs made here). Like the runs list, the chat
needs an operator's token unless the server listens on 127.0.0.1 and the request comes
straight from this machine naming it (:mod:`bots.web.guard`); a form posted from
another site is refused (its Origin)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote

from starlette.requests import Request
from starlette.responses import (
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)

from bots.chat.ports import Adapter, Limits, Place
from bots.chat.relays import Relays
from bots.chat.threads import Shown, Threads
from bots.web.access import Signer, run_path
from bots.web.budget import decide_budget
from bots.web.chat_render import MESSAGE_CHARS, WebRenderer
from bots.web.chat_transport import WebTransport
from bots.web.guard import NEEDS_OPERATOR, is_local, same_site
from core.agent.questions import answer_question, follow_up, open_questions
from core.errors import CarambaError, RunError
from core.runs import learning
from core.runs.approval import Approve, Reject, decide
from core.runs.control import cancel_run
from core.runs.requests import new_run_id, request_run
from core.services import Services

WEB_USER = "web"
POLL_S = 0.3
KEEPALIVE_S = 15.0


@dataclass
class WebChat:
    svc: Services
    signer: Signer
    # May be open without an operator's token (the server listens on loopback): for
    # direct loopback requests naming a loopback host only.
    open: bool = False
    transport: WebTransport = field(init=False)
    threads: Threads = field(init=False)
    relays: Relays = field(init=False)

    def __post_init__(self) -> None:
        prefix = self.svc.settings.redis.key_prefix
        self.transport = WebTransport(self.svc.redis, prefix)
        limits = Limits(message_chars=MESSAGE_CHARS, status_interval_s=0.5, relay_lease_s=5.0)
        adapter = Adapter("web", "the web chat", WebRenderer(), self.transport, limits)
        self.threads = Threads(self.svc.redis, prefix, adapter.platform)
        self.relays = Relays(self.svc, adapter, self.threads)

    async def start(self) -> int:
        """Take up the web threads earlier processes left."""
        return await self.relays.start()

    async def aclose(self) -> None:
        await self.relays.aclose()

    def allowed(self, request: Request) -> bool:
        open_here = self.open and is_local(request.scope)
        return open_here or self.signer.is_operator(request.query_params.get("t"))

    def path(self, run_id: str, request: Request) -> str:
        t = request.query_params.get("t")
        return f"/chat/{quote(run_id, safe='')}" + (f"?t={quote(t, safe='')}" if t else "")

    async def ask(self, task: str) -> str:
        """Record ``task`` as a request (a worker plans it) and relay it into its thread."""
        run_id = new_run_id()
        await request_run(self.svc, task, requested_by=WEB_USER, run_id=run_id)
        shown = Shown(run_id=run_id, channel="web", thread=run_id)
        await self.threads.link(shown)
        await self.relays.follow(shown)
        return run_id

    async def act(self, run_id: str, action: str, text: str) -> str | None:
        """Carry out a button or the answer box; what to tell the person, if anything."""
        svc = self.svc
        if action in ("approve", "reject"):
            decision = Approve() if action == "approve" else Reject()
            outcome = await decide(svc, run_id, WEB_USER, decision)
            return None if outcome.ok else outcome.message
        if action == "cancel":
            step = await cancel_run(svc, run_id, WEB_USER)
            return None if step.ok else step.reason
        if action in ("extend", "stop"):
            return await decide_budget(svc, run_id, WEB_USER, extend=action == "extend")
        if action in ("up", "down"):
            run = await svc.store.get_run(run_id)
            await learning.rate(svc, run, thumbs_up=action == "up")
            return "Thanks for rating the result."
        if action == "say" and text.strip():
            if await open_questions(svc, run_id):
                step = await answer_question(svc, run_id, text, WEB_USER)
            else:
                step = await follow_up(svc, run_id, text, WEB_USER)
            return None if step.ok else step.reason
        return None

    async def tell(self, run_id: str, text: str) -> None:
        await self.transport.post(Place("web", run_id), text, {"kind": "note", "level": "info"})

    async def changes(self, run_id: str, after: str) -> AsyncIterator[str]:
        """Server-sent events: ``change`` whenever the thread changes (polled: no
        blocking read, so open pages hold no Redis connection)."""
        yield "retry: 2000\n\n"
        quiet = 0.0
        while True:
            last = await self.transport.changed(run_id, after)
            if last is not None:
                after, quiet = last, 0.0
                yield f"id: {last}\nevent: change\ndata: {{}}\n\n"
            elif quiet >= KEEPALIVE_S:
                quiet = 0.0
                yield ": keep-alive\n\n"
            await asyncio.sleep(POLL_S)
            quiet += POLL_S


def same_origin(request: Request) -> bool:
    """A form posted from this site (:func:`bots.web.guard.same_site`; the app's guard
    refuses the others before they get here, this keeps the routes safe on their own)."""
    return same_site(request.headers)


async def form(request: Request) -> dict[str, str]:
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[-1] for k, v in parse_qs(body, max_num_fields=20).items()}


def chat_routes(chat: WebChat, page: Any) -> list[tuple[str, Any, list[str]]]:
    """The chat's routes, for the app: ``page(name, **context)`` renders a template."""

    def forbidden() -> Response:
        return PlainTextResponse(NEEDS_OPERATOR, status_code=403)

    async def start(request: Request) -> Response:
        if not chat.allowed(request):
            return forbidden()
        if request.method == "GET":
            return page("chat_new.html", t=request.query_params.get("t", ""))
        if not same_origin(request):
            return PlainTextResponse("Forms are taken from this site only.", status_code=403)
        task = (await form(request)).get("task", "").strip()
        if not task:
            return RedirectResponse(request.url.path + "?" + request.url.query, status_code=303)
        run_id = await chat.ask(task)
        return RedirectResponse(chat.path(run_id, request), status_code=303)

    async def thread(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if not chat.allowed(request):
            return forbidden()
        try:
            run = await chat.svc.store.get_run(run_id)
        except RunError:
            return PlainTextResponse(f"There is no run {run_id}.", status_code=404)
        messages, last = await chat.transport.messages(run_id)
        ttl = chat.svc.settings.web_ui.link_ttl_s
        return page(
            "chat.html",
            run=run,
            messages=messages,
            last=last,
            t=request.query_params.get("t", ""),
            inspector=run_path(chat.signer, run_id, ttl),
            file_token=chat.signer.token(f"run:{run_id}", ttl),
        )

    async def act(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if not chat.allowed(request):
            return forbidden()
        if not same_origin(request):
            return PlainTextResponse("Forms are taken from this site only.", status_code=403)
        fields = await form(request)
        try:
            said = await chat.act(run_id, fields.get("action", ""), fields.get("text", ""))
        except CarambaError as exc:
            said = str(exc)
        if said:
            await chat.tell(run_id, said)
        return RedirectResponse(chat.path(run_id, request), status_code=303)

    async def feed(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if not chat.allowed(request):
            return forbidden()
        after = request.headers.get("last-event-id") or request.query_params.get("after", "0-0")
        return StreamingResponse(chat.changes(run_id, after), media_type="text/event-stream")

    return [
        ("/chat", start, ["GET", "POST"]),
        ("/chat/{run_id}", thread, ["GET"]),
        ("/chat/{run_id}/act", act, ["POST"]),
        ("/chat/{run_id}/feed", feed, ["GET"]),
    ]
