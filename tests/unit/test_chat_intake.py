"""A request taken in a thread (``bots.chat.intake``), the same for every adapter: the
run recorded with the person as its requester, the thread linked and the run relayed;
or, when it cannot be taken (files refused, files not fetched, the request not
recorded), why not, and no run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bots.chat.inputs import Fetched
from bots.chat.intake import NotOpened, Opened, take_request
from bots.chat.ports import Place
from bots.chat.relays import Relays
from bots.chat.store import ChatStore
from bots.chat.threads import Threads
from core.errors import RunError
from core.llm.scripted import ScriptedModel
from core.types.files import AttachedFile
from core.types.people import Person
from core.types.run import RunStatus
from tests.conftest import make_settings
from tests.fakes.chat import Thread, fake_adapter

ANA = Person("U-ana", "Ana")
PLACE = Place("c1", "t1")


@pytest.fixture
async def relays(make_services: Any) -> AsyncIterator[Relays]:
    svc = make_services(make_settings(), ScriptedModel(), start=False)  # nobody plans
    adapter, _ = fake_adapter(Thread())
    relays = Relays(svc, adapter, Threads(ChatStore.of(svc, adapter.platform)))
    yield relays
    await relays.aclose()


async def test_a_request_becomes_a_run_shown_in_its_thread(relays: Relays) -> None:
    kept = AttachedFile(path="inputs/a.txt", size=3, mime="text/plain")
    asked: list[str] = []

    async def fetch(run_id: str) -> Fetched:
        asked.append(run_id)
        return Fetched(kept=[kept])

    opened = await take_request(relays, "Plan the offsite", ANA, PLACE, fetch)
    assert isinstance(opened, Opened) and asked == [opened.run_id]
    run = await relays.svc.store.get_run(opened.run_id)
    assert run.requested_by == "U-ana" and run.status is RunStatus.PLANNING
    assert run.files == [kept]
    assert await relays.threads.run_in("c1", "t1") == opened.run_id  # replies reach it
    assert opened.run_id in relays  # relayed by this process


async def test_refused_files_leave_no_run(relays: Relays) -> None:
    async def fetch(run_id: str) -> Fetched:
        return Fetched(refused=["tool.exe: programs are not taken"])

    opened = await take_request(relays, "Run this", ANA, PLACE, fetch, run_id="run_x")
    assert opened == NotOpened(files=("tool.exe: programs are not taken",))
    with pytest.raises(RunError):
        await relays.svc.store.get_run("run_x")
    assert await relays.threads.run_in("c1", "t1") is None and len(relays) == 0


async def test_files_not_fetched_or_a_request_not_recorded_say_why(
    relays: Relays, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(run_id: str) -> Fetched:
        raise ConnectionError("the platform hung up")

    opened = await take_request(relays, "Plan it", ANA, PLACE, broken)
    assert isinstance(opened, NotOpened)
    assert "could not take this request (ConnectionError)" in opened.reason

    async def refuse(*args: Any, **kwargs: Any) -> str:
        raise TimeoutError

    monkeypatch.setattr("core.runs.people.request_run", refuse)
    opened = await take_request(relays, "Plan it", ANA, PLACE)
    assert isinstance(opened, NotOpened) and "(TimeoutError)" in opened.reason
    assert len(relays) == 0
