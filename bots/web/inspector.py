"""The inspector's own pages: the runs list (``/``), a run's page (``/runs/<run>``), its
live events (``/runs/<run>/events``, :mod:`bots.web.run_events`) and its files
(``/runs/<run>/files/<path>``, always a download). A run's pages need a link signed for
it; the list needs an operator's link unless it is open here (:mod:`bots.web.guard`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from bots.web.access import Signer, run_path
from bots.web.guard import NEEDS_OPERATOR, is_local
from bots.web.live import Live
from bots.web.run_events import after, agent_names, messages, sse, team_names
from bots.web.runs import list_runs
from bots.web.spend import SpendSource
from bots.web.view import run_page
from core.config import Settings
from core.errors import RunError, WorkspaceError
from core.state.store import Store
from core.workspace import Workspace

# The chat platforms whose relays say which channel shows a run.
PLATFORMS = ("slack", "discord", "web")
_FORBIDDEN = "This link is not valid or has expired. Ask for a new link in the run's thread."


@dataclass
class Inspector:
    """What the app reads runs with."""

    settings: Settings
    store: Store
    workspace: Workspace
    signer: Signer
    live: Live
    # The runs list may be open without an operator's token (the server listens on
    # loopback); it is, for direct loopback requests naming a loopback host only.
    open_list: bool = False
    # Where the spend page reads a month's report (core.runs.spend.report); None: no page.
    spend: SpendSource | None = None

    def sees_all(self, request: Request) -> bool:
        """Whether ``request`` may see every run (and the spend): an operator's link, or
        the list open here."""
        open_here = self.open_list and is_local(request.scope)
        return open_here or self.signer.is_operator(_token(request))


def inspector_routes(
    inspector: Inspector, page: Any, env: Environment
) -> list[tuple[str, Any, list[str]]]:
    """The inspector's routes, for the app: ``page(name, **context)`` renders a template
    of ``env``."""
    pages = _InspectorPages(inspector, page, env)
    return [
        ("/", pages.runs, ["GET"]),
        ("/runs/{run_id}", pages.run, ["GET"]),
        ("/runs/{run_id}/events", pages.events, ["GET"]),
        ("/runs/{run_id}/files/{path:path}", pages.download, ["GET"]),
    ]


def _token(request: Request) -> str | None:
    return request.query_params.get("t")


def _forbidden() -> Response:
    return PlainTextResponse(_FORBIDDEN, status_code=403)


def _no_run(run_id: str) -> Response:
    return PlainTextResponse(f"There is no run {run_id}.", status_code=404)


class _InspectorPages:
    """The inspector's endpoints."""

    def __init__(self, inspector: Inspector, page: Any, env: Environment) -> None:
        self.inspector = inspector
        self.page = page
        self.env = env

    async def runs(self, request: Request) -> Response:
        """The latest runs, each with a link to its page."""
        inspector = self.inspector
        if not inspector.sees_all(request):
            return PlainTextResponse(NEEDS_OPERATOR, status_code=403)
        rows = await list_runs(inspector.store, inspector.settings.web_ui.runs_shown, PLATFORMS)
        ttl = inspector.settings.web_ui.link_ttl_s
        links = {row.id: run_path(inspector.signer, row.id, ttl) for row in rows}
        return self.page("runs.html", rows=rows, links=links, nav=True, t=_token(request) or "")

    async def run(self, request: Request) -> Response:
        """A run's page: its timeline, agents, waterfall and files."""
        inspector, run_id = self.inspector, request.path_params["run_id"]
        if not inspector.signer.opens_run(_token(request), run_id):
            return _forbidden()
        try:
            view = await run_page(
                inspector.store,
                inspector.workspace,
                run_id,
                inspector.settings.llm.model,
                request.query_params,
            )
        except RunError:
            return _no_run(run_id)
        return self.page("run.html", page=view, t=_token(request) or "")

    async def download(self, request: Request) -> Response:
        """A file of the run, as a download."""
        run_id, path = request.path_params["run_id"], request.path_params["path"]
        if not self.inspector.signer.opens_run(_token(request), run_id):
            return _forbidden()
        try:
            data = await self.inspector.workspace.read(run_id, path)
        except WorkspaceError:
            return PlainTextResponse(f"There is no file {path} in this run.", status_code=404)
        name = path.rsplit("/", 1)[-1]
        # Always a download, never shown in this origin: an agent may have written HTML.
        return Response(
            data,
            media_type="application/octet-stream",
            headers={"content-disposition": f"attachment; filename*=UTF-8''{quote(name)}"},
        )

    async def events(self, request: Request) -> Response:
        """The run's new events, as they happen, each a timeline row."""
        inspector, run_id = self.inspector, request.path_params["run_id"]
        if not inspector.signer.opens_run(_token(request), run_id):
            return _forbidden()
        since = after(request)
        try:
            run = await inspector.store.get_run(run_id)
        except RunError:
            return _no_run(run_id)
        names = await agent_names(inspector.store, run_id)
        line = self.env.get_template("_line.html").module.line  # type: ignore[attr-defined]
        message = messages(line, names, team_names(run))
        stream = sse(inspector.live.watch(run_id, since), message)
        return StreamingResponse(
            stream, media_type="text/event-stream", headers={"x-accel-buffering": "no"}
        )
