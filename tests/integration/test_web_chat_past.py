"""The web chat's past chats (bots/web/chat_past.py), on real Redis: the web chat's own
runs only, newest first, their status in words; read again at once after a new chat."""

from __future__ import annotations

from bots.web.chat_past import PastChats, past_chats
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.types import AgentSpec


def finishing() -> ScriptedModel:
    return ScriptedModel(responder=lambda _r: Reply(calls=(call("finish", {"result": "ok"}),)))


async def test_the_web_chats_own_runs_newest_first(make_services, settings) -> None:
    svc = make_services(settings, finishing())
    spec = AgentSpec(name="Solo", role="solo", tools=("finish",))
    first = await start_run(svc, "First <b>task</b>", spec, requested_by="web")
    await start_run(svc, "Someone else's", spec, requested_by="U0ALICE")
    second = await start_run(svc, "Second task", spec, requested_by="web")

    chats = await past_chats(svc.store, "web", 10)
    assert [c.id for c in chats] == [second, first]
    assert chats[1].task == "First <b>task</b>"
    assert all("_" not in c.status for c in chats)
    assert [c.id for c in await past_chats(svc.store, "web", 1)] == [second]

    kept = PastChats(svc.store, "web", 10)
    assert len(await kept.get()) == 2
    third = await start_run(svc, "Third task", spec, requested_by="web")
    kept.forget()  # a new chat: read again at once
    assert (await kept.get())[0].id == third
