"""A run paused at its budget, in the web chat: the pause shows "Extend by 100,000 tokens"
and "Stop here" while the run is paused; a form without the operator's token, or from
another site, is refused; Extend resumes the run to its end; Stop ends another with
what it has; the buttons go once the pause is over."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from bots.chat.threads import Shown
from bots.web.access import OPERATOR
from bots.web.app import Inspector, create_app, secured
from bots.web.chat import WebChat
from bots.web.live import Live
from core.runs.control import start_run
from core.types import AgentSpec
from core.types.run import RunStatus
from tests.integration.budget_run import DONE, TASK, spender, tiny_budget
from tests.integration.test_web_chat import KEY, ORIGIN, client, until


@contextlib.asynccontextmanager
async def paused_run(make_services: Any, settings: Any) -> AsyncIterator[tuple[Any, Any, str]]:
    """A chat served off loopback (the operator's token needed) and a run of the web's
    that sums past its budget: the client, the services and the thread's path (with
    the token)."""
    svc = make_services(tiny_budget(settings), spender())
    chat = WebChat(svc, KEY, open=False)
    live = Live(svc.store, blocking=False)
    inspector = Inspector(svc.settings, svc.store, svc.workspace, KEY, live, open_list=False)
    spec = AgentSpec(name="Helper", role="solo", tools=("calculate", "finish"))
    run_id = await start_run(svc, TASK, spec, requested_by="web")
    await chat.relays.follow(Shown(run_id=run_id, channel="web", thread=run_id))
    try:
        async with client(secured(create_app(inspector, chat))) as c:
            yield c, svc, f"/chat/{run_id}?t={KEY.token(OPERATOR, 600)}"
    finally:
        await chat.aclose()
        await live.aclose()


def act(c: httpx.AsyncClient, path: str, action: str, **headers: str) -> Any:
    thread, token = path.split("?", 1)
    return c.post(f"{thread}/act?{token}", data={"action": action}, headers=headers)


async def test_extend_from_the_chat_resumes_the_run_and_strangers_are_refused(
    make_services, settings
) -> None:
    async with paused_run(make_services, settings) as (c, svc, path):
        run_id = path.split("?")[0].rsplit("/", 1)[1]
        await until(c, path, r'value="extend"')
        # The status line is the relay's own message, apart from the pause's card: one CI
        # run on a slow host served the card before the line changed. Wait for both.
        page = await until(c, path, r"paused at the budget")
        assert 'value="extend"' in page
        assert "Paused at its budget: the run used " in page and " of 800 tokens" in page
        assert ">Extend by 100,000 tokens</button>" in page and ">Stop here</button>" in page

        no_token = await c.post(
            path.split("?")[0] + "/act", data={"action": "extend"}, headers={"origin": ORIGIN}
        )
        assert no_token.status_code == 403
        evil = await act(c, path, "extend", origin="http://evil.example")
        assert evil.status_code == 403
        assert (await svc.store.get_run(run_id)).paused == "tokens"

        assert (await act(c, path, "extend", origin=ORIGIN)).status_code == 303
        done = await until(c, path, DONE)
        assert "Extended by the web chat: +100,000 tokens" in done
        assert "The budget was extended: the run goes on" in done
        assert 'value="extend"' not in done, "no buttons on a pause that is over"
        run = await svc.store.get_run(run_id)
        assert run.status is RunStatus.COMPLETED and run.result == DONE

        await act(c, path, "stop", origin=ORIGIN)  # a form sent again from an old page
        told = await until(c, path, r"Not stopped: this run has already finished")
        assert "there is nothing to stop" in told


async def test_stop_from_the_chat_ends_the_run_with_what_it_has(make_services, settings) -> None:
    async with paused_run(make_services, settings) as (c, svc, path):
        await until(c, path, r'value="stop"')
        assert (await act(c, path, "stop", origin=ORIGIN)).status_code == 303
        done = await until(c, path, r"no agent had finished yet")
        assert "Stopped by the web chat, with the results so far" in done
        assert 'value="stop"' not in done
        run = await svc.store.get_run(path.split("?")[0].rsplit("/", 1)[1])
        assert run.status is RunStatus.FAILED
