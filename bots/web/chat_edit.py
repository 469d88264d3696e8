"""Edit on the web chat's proposal card, as Slack and Discord have it: choose an agent
(``/chat/<run>/edit``), then its form (``/chat/<run>/edit/<agent>``) with its
instructions, tools, model and budgets. Who may open them is the people room's rule
(``core.runs.people.editable``: who may approve, while it is a proposal); a submission →
``people.decide`` with an ``Edit`` (core validates it) → the card in the thread shows the
edited proposal, which is what runs once approved; or the form again with each problem
beside its field."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, quote

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from bots.chat.ports import Card, Place
from bots.web.chat import WEB, WebChat
from bots.web.chat_render import WebRenderer
from bots.web.chat_routes import forbidden, foreign_form, same_origin
from bots.web.edit_form import AgentForm, changed_words, edit_from_form
from core.errors import RunError
from core.llm.models import configured_models
from core.runs import approval, people
from core.runs.edits import Edit
from core.runs.outcomes import Refused
from core.types.agent import AgentSpec
from core.types.run import RunState

_MAX_FIELDS = 400


async def _editable(chat: WebChat, run: RunState) -> list[AgentSpec] | str:
    """The proposal's agents if the person may edit it now, else why not."""
    opened = await people.editable(chat.svc, run.id, WEB, who=chat.who)
    return opened.reason if isinstance(opened, Refused) else list(opened.agents)


async def show_edited(chat: WebChat, run: RunState, note: str) -> None:
    """The thread's card, redrawn from the edited proposal, saying who edited it."""
    messages, _ = await chat.transport.messages(run.id)
    card = next((m for m in reversed(messages) if m.kind == "card"), None)
    if card is None:
        return
    view = approval.view(chat.svc.settings, run, chat.svc.tools)
    (rendered,) = WebRenderer().render(Card(view))
    payload = dict(rendered.payload) if isinstance(rendered.payload, dict) else {}
    payload["edited"] = note
    await chat.transport.update(Place("web", run.id), card.id, rendered.text, payload)


def edit_routes(chat: WebChat, page: Any) -> list[tuple[str, Any, list[str]]]:
    """The Edit pages' routes, for the app: ``page(name, status, **context)`` renders."""
    pages = _EditPages(chat, page)
    return [
        ("/chat/{run_id}/edit", pages.pick, ["GET"]),
        ("/chat/{run_id}/edit/{agent_id}", pages.agent_form, ["GET", "POST"]),
    ]


class _EditPages:
    """The Edit pages' endpoints over the web chat's person."""

    def __init__(self, chat: WebChat, page: Any) -> None:
        self.chat = chat
        self.page = page
        self.svc = chat.svc
        self.base_tools = chat.svc.settings.agents.base_tools

    async def told(self, request: Request, run_id: str, text: str) -> Response:
        """Back to the thread, saying ``text`` there."""
        await self.chat.tell(run_id, text)
        return RedirectResponse(self.chat.path(run_id, request), status_code=303)

    async def pick(self, request: Request) -> Response:
        """Which agent to edit; straight to its form when there is one."""
        run_id = request.path_params["run_id"]
        if not self.chat.allowed(request):
            return forbidden()
        try:
            run = await self.svc.store.get_run(run_id)
        except RunError:
            return PlainTextResponse(f"There is no run {run_id}.", status_code=404)
        agents = await _editable(self.chat, run)
        if isinstance(agents, str):
            return await self.told(request, run_id, agents)
        t = request.query_params.get("t")
        query = f"?t={quote(t, safe='')}" if t else ""
        if len(agents) == 1:
            where = f"/chat/{quote(run_id, safe='')}/edit/{quote(agents[0].id, safe='')}"
            return RedirectResponse(where + query, status_code=303)
        return self.page(
            "chat_pick.html",
            run=run,
            agents=agents,
            names={a.id: a.name for a in agents},
            query=query,
            back=self.chat.path(run_id, request),
            model_for=self.svc.settings.llm.model_for,
        )

    async def agent_form(self, request: Request) -> Response:
        """An agent's form (GET), or what it changed (POST)."""
        run_id, agent_id = request.path_params["run_id"], request.path_params["agent_id"]
        if not self.chat.allowed(request):
            return forbidden()
        try:
            run = await self.svc.store.get_run(run_id)
        except RunError:
            return PlainTextResponse(f"There is no run {run_id}.", status_code=404)
        if request.method == "POST" and not same_origin(request):
            return foreign_form()
        agents = await _editable(self.chat, run)
        if isinstance(agents, str):
            return await self.told(request, run_id, agents)
        agent = next((a for a in agents if a.id == agent_id), None)
        if agent is None:
            return await self.told(request, run_id, "That agent is no longer in the proposal.")
        if request.method == "GET":
            return self.form_page(request, run, AgentForm.of(agent, self.base_tools))
        return await self.submitted(request, run_id, run, agent)

    async def submitted(
        self, request: Request, run_id: str, run: RunState, agent: AgentSpec
    ) -> Response:
        """The form sent: the edit through the people room, or the form again with each
        problem beside its field."""
        body = (await request.body()).decode("utf-8", "replace")
        form = AgentForm.submitted(agent, parse_qs(body, max_num_fields=_MAX_FIELDS))
        change = edit_from_form(form, self.base_tools)
        if change is None:
            return self.form_page(request, run, form, 422)
        words = changed_words(change)
        if not words:
            return await self.told(request, run_id, f"Nothing changed for {agent.name}.")
        edit = Edit(agents=(change,))
        outcome = await people.decide(self.svc, run_id, WEB, edit, who=self.chat.who)
        if isinstance(outcome, Refused) and outcome.problems:
            return self.form_page(request, run, form.show(outcome.problems), 422)
        if isinstance(outcome, Refused):
            return await self.told(request, run_id, outcome.reason)
        note = f"{agent.name}'s {', '.join(words)} edited by {WEB.name}"
        await show_edited(self.chat, outcome.run, note)
        await self.chat.tell(run_id, f"Saved: {note}. Approve to start.", while_proposed=True)
        return RedirectResponse(self.chat.path(run_id, request), status_code=303)

    def form_page(
        self, request: Request, run: RunState, form: AgentForm, status: int = 200
    ) -> Response:
        """The agent's form, ``form``'s values and problems in it."""
        svc, base_tools = self.svc, self.base_tools
        tools = [
            (tool.name, tool.purpose, ", ".join(tool.risks()))
            for tool in svc.tools.tools()
            if tool.name not in base_tools
        ]
        return self.page(
            "chat_edit.html",
            status,
            run=run,
            form=form,
            tools=tools,
            unlisted=[n for n in form.tools if n not in {name for name, _, _ in tools}],
            base_tools=[n for n in base_tools if n in svc.tools],
            models=configured_models(svc.settings),
            default_model=svc.settings.llm.model_for(form.agent.role),
            back=self.chat.path(run.id, request),
            t=request.query_params.get("t", ""),
        )
