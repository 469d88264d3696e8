"""The web chat's own routes: a new chat (``/chat``), a chat's page (``/chat/<run>``), its
buttons and answer box (``/chat/<run>/act``) and its changes as server-sent events
(``/chat/<run>/feed``), each a thin translation around one :class:`~bots.web.chat.WebChat`
call. Its forms are taken from this site only (:func:`same_origin`), and their body is read
by :func:`form`; the routes of its schedules, spend, forms and agent edits
(``bots.web.chat_schedules``, …) build on these."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import (
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)

from bots.web.access import run_path
from bots.web.chat import WebChat
from bots.web.chat_place import web_schedules
from bots.web.chat_view import HELPERS, thread_view
from bots.web.guard import NEEDS_OPERATOR, same_site
from bots.web.mentions import mentioned, named
from core.errors import CarambaError, RunError
from core.runs import people


def same_origin(request: Request) -> bool:
    """A form posted from this site (:func:`bots.web.guard.same_site`; the app's guard
    refuses the others before they get here, this keeps the routes safe on their own)."""
    return same_site(request.headers)


async def form(request: Request) -> dict[str, str]:
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[-1] for k, v in parse_qs(body, max_num_fields=20).items()}


def forbidden() -> Response:
    """Refused: the page needs an operator's link."""
    return PlainTextResponse(NEEDS_OPERATOR, status_code=403)


def foreign_form() -> Response:
    """Refused: a form posted from another site."""
    return PlainTextResponse("Forms are taken from this site only.", status_code=403)


def chat_routes(chat: WebChat, page: Any) -> list[tuple[str, Any, list[str]]]:
    """The chat's routes, for the app: ``page(name, **context)`` renders a template."""
    pages = _ChatPages(chat, page)
    return [
        ("/chat", pages.start, ["GET", "POST"]),
        ("/chat/{run_id}", pages.thread, ["GET"]),
        ("/chat/{run_id}/act", pages.act, ["POST"]),
        ("/chat/{run_id}/feed", pages.feed, ["GET"]),
    ]


class _ChatPages:
    """The chat's endpoints, each a thin translation around one ``chat`` call."""

    def __init__(self, chat: WebChat, page: Any) -> None:
        self.chat = chat
        self.page = page

    async def start(self, request: Request) -> Response:
        """A new chat: its page (GET), or the request it starts with (POST)."""
        chat = self.chat
        if not chat.allowed(request):
            return forbidden()
        if request.method == "GET":
            t = request.query_params.get("t", "")
            past = await chat.past(fresh=True)
            schedules = await web_schedules(chat.svc)
            return self.page("chat_new.html", t=t, past=past, schedules=schedules, **HELPERS)
        if not same_origin(request):
            return foreign_form()
        task = (await form(request)).get("task", "").strip()
        if not task:
            return RedirectResponse(request.url.path + "?" + request.url.query, status_code=303)
        run_id = await chat.ask(task)
        return RedirectResponse(chat.path(run_id, request), status_code=303)

    async def thread(self, request: Request) -> Response:
        """A chat's page: its messages (people's names for their mentions) and cards."""
        chat, run_id = self.chat, request.path_params["run_id"]
        if not chat.allowed(request):
            return forbidden()
        try:
            run = await chat.svc.store.get_run(run_id)
        except RunError:
            return PlainTextResponse(f"There is no run {run_id}.", status_code=404)
        messages, last = await chat.transport.messages(run_id)
        ttl = chat.svc.settings.web_ui.link_ttl_s
        known = await people.names(chat.svc, mentioned(m.text for m in messages))
        messages = [replace(m, text=named(m.text, known)) for m in messages]
        view = thread_view(
            run, messages, await chat.svc.workspace.files(run_id), await chat.asker(run)
        )
        return self.page(
            "chat.html",
            run=run,
            thread=view,
            last=last,
            t=request.query_params.get("t", ""),
            inspector=run_path(chat.signer, run_id, ttl),
            names=await chat.names(run),  # who decided, when the card does not say
            file_token=chat.signer.token(f"run:{run_id}", ttl),
            past=await chat.past(),
            schedules=await web_schedules(chat.svc),
            **HELPERS,
        )

    async def act(self, request: Request) -> Response:
        """A button or the answer box of a chat; what came of it is said in the thread."""
        chat, run_id = self.chat, request.path_params["run_id"]
        if not chat.allowed(request):
            return forbidden()
        if not same_origin(request):
            return foreign_form()
        fields = await form(request)
        try:
            said = await chat.act(run_id, fields.get("action", ""), fields.get("text", ""))
        except CarambaError as exc:
            said = str(exc)
        if said:
            await chat.tell(run_id, said)
        return RedirectResponse(chat.path(run_id, request), status_code=303)

    async def feed(self, request: Request) -> Response:
        """A chat's changes as server-sent events."""
        chat, run_id = self.chat, request.path_params["run_id"]
        if not chat.allowed(request):
            return forbidden()
        after = request.headers.get("last-event-id") or request.query_params.get("after", "0-0")
        return StreamingResponse(chat.changes(run_id, after), media_type="text/event-stream")
