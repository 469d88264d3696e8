"""Chat mentions in what agents wrote, in the web chat: a person the people room has seen
by name, one it never saw as "someone", a role as "a role" — never a raw id, and still
escaped — with a real run of a scripted agent."""

from __future__ import annotations

from bots.chat.threads import Shown
from bots.web.app import Inspector, create_app, secured
from bots.web.chat import WebChat
from bots.web.live import Live
from bots.web.mentions import mentioned, named
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.state.people import PeopleMarks
from core.types import AgentSpec
from tests.integration.test_web_chat import KEY, client, until

RESULT = "Ask <@U0ANA> or <@!1234567> about it, and tell <@&9876> <b>now</b>."


def test_mentions_read_as_names() -> None:
    assert mentioned([RESULT, "<@U0ANA> again"]) == ["U0ANA", "1234567"]
    assert named(RESULT, {"U0ANA": "Ana"}) == (
        "Ask @Ana or @someone about it, and tell @a role <b>now</b>."
    )


async def test_an_agents_mentions_show_as_names_in_the_thread(make_services, settings) -> None:
    model = ScriptedModel(responder=lambda r: Reply(calls=(call("finish", {"result": RESULT}),)))
    svc = make_services(settings, model)
    await PeopleMarks(svc.store).remember("U0ANA", "Ana")
    chat = WebChat(svc, KEY, open=True)
    live = Live(svc.store, blocking=False)
    inspector = Inspector(svc.settings, svc.store, svc.workspace, KEY, live, open_list=True)
    spec = AgentSpec(name="Writer", role="solo", tools=("finish",))
    run_id = await start_run(svc, "Who should I ask?", spec, requested_by="web")
    await chat.relays.follow(Shown(run_id=run_id, channel="web", thread=run_id))
    try:
        async with client(secured(create_app(inspector, chat))) as c:
            page = await until(c, f"/chat/{run_id}", r'class="msg k-result"')
            result = page[page.index('class="msg k-result"') :]
            assert "Ask @Ana or @someone about it, and tell @a role &lt;b&gt;now&lt;/b&gt;." in (
                result
            )
            assert "U0ANA" not in page and "1234567" not in page and "9876" not in page
    finally:
        await chat.aclose()
        await live.aclose()
