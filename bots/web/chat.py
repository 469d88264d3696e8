"""The web chat: the chat layer's third adapter. A person types a request and gets what
Slack and Discord show — the proposal card with Approve / Reject, progress, agents'
questions to answer, Cancel, the result and its files, 👍/👎 — in a page of its own
(``/chat/<run>``), relayed by the shared chat layer (``bots.chat``) into a thread kept in
Redis (:mod:`bots.web.chat_transport`).

The person is ``web`` (the requester of the runs made here), named "the web chat"; what
they do goes to the people room (``core.runs.people``), which holds the rules — a run
someone else asked for from Slack is theirs and its approvers' to decide or cancel, not
the web chat's. Like the runs list, the chat
needs an operator's token unless the server listens on 127.0.0.1 and the request comes
straight from this machine naming it (:mod:`bots.web.guard`); a form posted from
another site is refused (its Origin). Its routes: :mod:`bots.web.chat_routes`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import quote

from starlette.requests import Request

from bots.chat.intake import NotOpened, take_request
from bots.chat.ports import Adapter, Limits, Place
from bots.chat.relays import Relays
from bots.chat.store import ChatStore
from bots.chat.threads import Threads
from bots.web import chat_approvals, chat_spend
from bots.web.access import Signer
from bots.web.chat_firings import WebFirings
from bots.web.chat_past import PastChat, PastChats
from bots.web.chat_render import MESSAGE_CHARS, WebRenderer
from bots.web.chat_transport import WebTransport
from bots.web.chat_view import YOU
from bots.web.guard import is_local
from core.errors import RunError
from core.runs import people
from core.runs.approval import Approve, Reject
from core.runs.outcomes import Delivered, Done, Refused
from core.runs.requests import new_run_id
from core.services import Services
from core.types.people import Person
from core.types.run import RunState

WEB_USER = "web"
# The person of the web chat, as the people room takes them and lines name them.
WEB = Person(WEB_USER, "the web chat")


@dataclass(frozen=True)
class WebNames:
    """The web chat's who port: itself by its name; others by the name the people room
    last saw them under (it has no platform's directory), else nobody's name ("")."""

    svc: Services

    async def name(self, user_id: str) -> str:
        if user_id == WEB_USER:
            return WEB.name
        return (await people.names(self.svc, [user_id])).get(user_id, "")


POLL_S = 0.3
# How many past chats the list beside a chat shows.
PAST_SHOWN = 20
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
    who: WebNames = field(init=False)
    _past: PastChats = field(init=False)
    firings: WebFirings = field(init=False)
    # Who acts from this chat (the people room's person).
    person: Person = WEB

    def __post_init__(self) -> None:
        self.who = WebNames(self.svc)
        store = ChatStore.of(self.svc, "web")
        self.transport = WebTransport(store)
        limits = Limits.of(self.svc.settings.web_chat, message_chars=MESSAGE_CHARS)
        adapter = Adapter("web", "the web chat", WebRenderer(), self.transport, limits)
        self.threads = Threads(store)
        self.relays = Relays(self.svc, adapter, self.threads)
        self._past = PastChats(self.svc.store, WEB_USER, PAST_SHOWN)
        # Each firing of the web chat's schedules, as a new chat (bots.web.chat_firings).
        self.firings = WebFirings(self.relays)

    async def start(self) -> int:
        """Take up the web threads earlier processes left; post schedules' firings."""
        taken = await self.relays.start()
        self.firings.start()
        return taken

    async def aclose(self) -> None:
        await self.firings.aclose()
        await self.relays.aclose()

    def allowed(self, request: Request) -> bool:
        open_here = self.open and is_local(request.scope)
        return open_here or self.signer.is_operator(request.query_params.get("t"))

    def path(self, run_id: str, request: Request) -> str:
        t = request.query_params.get("t")
        return f"/chat/{quote(run_id, safe='')}" + (f"?t={quote(t, safe='')}" if t else "")

    async def ask(self, task: str) -> str:
        """Record ``task`` as a request (a worker plans it) and relay it into its thread
        (``bots.chat.intake``; the thread is named by the run's id)."""
        run_id = new_run_id()
        opened = await take_request(
            self.relays,
            task,
            WEB,
            Place("web", run_id),
            run_id=run_id,
            where=chat_spend.where(run_id),
        )
        if isinstance(opened, NotOpened):
            raise RunError(opened.reason)
        self._past.forget()
        return opened.run_id

    async def act(self, run_id: str, action: str, text: str) -> str | None:
        """Carry out a button or the answer box through the people room; what to tell
        the person, if anything (a refusal, a budget's new state, thanks for a vote)."""
        svc = self.svc
        if action in ("approve", "reject"):
            decision = Approve() if action == "approve" else Reject()
            decided = await people.decide(svc, run_id, WEB, decision, who=self.who)
            if isinstance(decided, Done):
                await self.show_decided(run_id, decided.line)
            return _refusal(decided)
        if action == "cancel":
            return _refusal(await people.cancel(svc, run_id, WEB, who=self.who))
        if action in ("extend", "stop"):
            act = people.extend if action == "extend" else people.stop
            done = await act(svc, run_id, WEB, who=self.who)
            return done.reason if isinstance(done, Refused) else done.line
        if action in ("up", "down"):
            return (await people.rate(svc, run_id, WEB, up=action == "up")).line
        if action.startswith(chat_approvals.PREFIX):
            return await chat_approvals.act(self, run_id, action, text)
        if action.startswith(chat_spend.PREFIX):
            return await chat_spend.act(self, run_id, action)
        if action == "say" and text.strip():
            said = await people.reply(svc, run_id, text, WEB)
            if not isinstance(said, Delivered):
                return said.hint
            # Your words, echoed in the thread (after the question they answer).
            await self.transport.post(Place("web", run_id), text.strip(), {"kind": "you"})
        return None

    async def show_decided(self, run_id: str, line: str) -> None:
        """The thread's card, without its buttons, saying who decided by name (the
        people room's line: "Approved by the web chat.")."""
        messages, _ = await self.transport.messages(run_id)
        card = next((m for m in reversed(messages) if m.kind == "card"), None)
        if card is not None:
            payload = {**card.payload, "decided": line}
            await self.transport.update(Place("web", run_id), card.id, card.text, payload)

    async def names(self, run: RunState) -> dict[str, str]:
        """The names of the people who asked for and decided ``run`` (those known)."""
        known = await people.names(self.svc, [t.by for t in run.history])
        return {**known, WEB_USER: WEB.name}

    async def tell(self, run_id: str, text: str, *, while_proposed: bool = False) -> None:
        """A line from Caramba in the thread; ``while_proposed``: it holds only until the
        proposal is decided (the page leaves it out then)."""
        payload = {"kind": "note", "level": "info"}
        if while_proposed:
            payload["while"] = "proposed"
        await self.transport.post(Place("web", run_id), text, payload)

    async def asker(self, run: RunState) -> str:
        """Who asked for ``run``, as its thread names them: "You" when the web chat did."""
        if run.requested_by == WEB_USER:
            return YOU
        return (await self.who.name(run.requested_by)) or "Someone"

    async def past(self, *, fresh: bool = False) -> list[PastChat]:
        if fresh:
            self._past.forget()
        return await self._past.get()

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


def _refusal(outcome: Done | Refused) -> str | None:
    """What to tell the person about a decision: only a refusal (the card shows the rest)."""
    return outcome.reason if isinstance(outcome, Refused) else None
