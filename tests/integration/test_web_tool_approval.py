"""A tool call waiting for approval, in the web chat (its pages and forms through the
ASGI app, embedded services, the scripted model): the agent's write_file waits with
Approve once / Approve for this run / Deny and a reason field (the secret in its
arguments masked, the agent's reason shown); a denial's reason is what the agent reads;
Approve once runs the call once and the run completes; each decided request says who
decided; the inspector's timeline shows both decisions. A run someone else asked for
(from Slack) is not the web chat's to approve: its click is refused, naming them."""

from __future__ import annotations

import asyncio
import html as html_lib
import re
import time
from collections.abc import Awaitable, Callable

import pytest

from core.agent import approvals
from core.runs import people
from core.runs.approval import Approve
from core.runs.outcomes import Requested
from core.services import Services
from core.types.people import Person
from core.types.run import RunStatus
from tests.integration.approval_run import DENIAL, DONE, REASON, SECRET, TASK, asking, told
from tests.integration.approval_run import writer as writer_model
from tests.integration.test_web_chat import chat_app, client, post, until
from tests.planning_helpers import settings as planning_settings

pytestmark = pytest.mark.integration
ALICE = Person("U0ALICE", "Alice")


def _approval_ids(page: str) -> list[str]:
    return re.findall(r'value="tool:once:([^"]+)"', page)


async def test_a_write_waits_is_denied_then_approved_once_and_the_run_completes() -> None:
    model = writer_model()
    async with chat_app(asking(planning_settings()), model=model) as (app, svc), client(app) as c:
        asked = await post(c, "/chat", task=TASK)
        path = asked.headers["location"]
        run_id = path.rsplit("/", 1)[1]
        card = await until(c, path, r'value="approve"')
        assert "write_file: changes things, asks a person before each call" in card
        assert (await post(c, f"{path}/act", action="approve")).status_code == 303

        page = html_lib.unescape(await until(c, path, r'value="tool:once:'))
        assert "Writer wants to use write_file" in page and REASON in page
        assert SECRET not in page and "••••" in page
        assert "Approve for this run" in page and "the agent reads it" in page
        (first,) = _approval_ids(page)
        assert (await svc.store.get_run(run_id)).status is RunStatus.WAITING_HUMAN

        denied = await post(c, f"{path}/act", action=f"tool:deny:{first}", text=DENIAL)
        assert denied.status_code == 303
        page = html_lib.unescape(await until(c, path, r"Denied by the web chat"))
        assert f"✖ Denied by the web chat: {DENIAL}" in page
        page = await until(c, path, rf'value="tool:once:(?!{re.escape(first)})')
        (second,) = _approval_ids(page)
        print("Writer read:", told(model)[0])
        assert told(model)[0].startswith(f"Denied by the web chat: {DENIAL}.")

        assert (await post(c, f"{path}/act", action=f"tool:once:{second}")).status_code == 303
        await until(c, path, re.escape(DONE), timeout_s=30)
        run = await svc.store.get_run(run_id)
        assert run.status is RunStatus.COMPLETED and run.result == DONE
        page = html_lib.unescape((await c.get(path)).text)
        assert "✔ Approved once by the web chat." in page
        assert "outputs/report.md" in told(model)[-1]
        assert SECRET.encode() in await svc.workspace.read(run_id, "outputs/report.md")

        inspector = re.search(r'href="(/runs/[^"]+)">inspect this run', page)
        assert inspector is not None
        shown = html_lib.unescape((await c.get(html_lib.unescape(inspector.group(1)))).text)
        assert f"write_file: Denied by the web chat: {DENIAL}" in shown
        assert "write_file: Approved once by the web chat" in shown


async def test_the_web_chat_cannot_approve_a_call_in_someone_elses_run() -> None:
    model = writer_model()
    async with chat_app(asking(planning_settings()), model=model) as (app, svc), client(app) as c:
        requested = await people.request(svc, TASK, ALICE)  # asked from Slack, say
        assert isinstance(requested, Requested)
        run_id = requested.run_id
        await _until(lambda: _status_is(svc, run_id, RunStatus.PROPOSED))
        assert (await people.decide(svc, run_id, ALICE, Approve())).line == "Approved by Alice."
        await _until(lambda: _pending(svc, run_id))
        (waiting,) = await approvals.pending(svc, run_id)

        refused = await post(c, f"/chat/{run_id}/act", action=f"tool:once:{waiting.id}")
        assert refused.status_code == 303
        page = html_lib.unescape((await c.get(f"/chat/{run_id}")).text)
        assert "Only Alice, who asked" in page
        assert (await svc.store.get_run(run_id)).status is RunStatus.WAITING_HUMAN
        assert await approvals.pending(svc, run_id) == [waiting]


async def _status_is(svc: Services, run_id: str, status: RunStatus) -> bool:
    return (await svc.store.get_run(run_id)).status is status


async def _pending(svc: Services, run_id: str) -> bool:
    return bool(await approvals.pending(svc, run_id))


async def _until(check: Callable[[], Awaitable[bool]], timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)
