"""What agents write, in the web chat: Markdown rendered, their HTML and script links
shown as text, and a file with an awkward name offered (escaped, its link quoted) and
downloaded through the run's file route — with a real run of a scripted agent."""

from __future__ import annotations

from urllib.parse import quote

from bots.chat.threads import Shown
from bots.web.app import Inspector, create_app, secured
from bots.web.chat import WebChat
from bots.web.live import Live
from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs.control import start_run
from core.types import AgentSpec
from tests.integration.test_web_chat import KEY, client, until

ODD = 'notes/odd name & "q" <b>.md'
RESULT = (
    "**Done.** <script>alert(1)</script> <img src=x onerror=alert(2)>\n\n"
    "[click me](javascript:alert(3)) · [the docs](https://example.com/a?b=1&c=2)\n\n"
    "- one\n- two"
)


async def test_agents_words_rendered_safely_and_every_file_offered(make_services, settings) -> None:
    def respond(r: LLMRequest) -> Reply:
        if not any(m.role == "tool" for m in r.messages):
            return Reply(calls=(call("write_file", {"path": ODD, "content": "<h1>hi</h1>"}),))
        return Reply(calls=(call("finish", {"result": RESULT}),))

    svc = make_services(settings, ScriptedModel(responder=respond))
    chat = WebChat(svc, KEY, open=True)
    live = Live(svc.store, blocking=False)
    inspector = Inspector(svc.settings, svc.store, svc.workspace, KEY, live, open_list=True)
    spec = AgentSpec(name="Writer", role="solo", tools=("write_file", "finish"))
    run_id = await start_run(svc, "Write notes", spec, requested_by="web")
    await chat.relays.follow(Shown(run_id=run_id, channel="web", thread=run_id))
    try:
        async with client(secured(create_app(inspector, chat))) as c:
            page = await until(c, f"/chat/{run_id}", r'class="msg k-result"')
            page = await until(c, f"/chat/{run_id}", r'class="msg k-files"')
            result = page[page.index('class="msg k-result"') :]
            assert "<strong>Done.</strong>" in result and "<li>one</li>" in result
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in result
            assert "&lt;img src=x onerror=alert(2)&gt;" in result
            assert "<script>alert" not in page and "<img" not in page
            assert "javascript:" not in page.replace("[click me](javascript:alert(3))", "")
            assert 'href="https://example.com/a?b=1&amp;c=2"' in result
            # The file, named escaped, its link quoted; downloaded, never shown as a page.
            assert "odd name &amp; &#34;q&#34; &lt;b&gt;.md" in page
            href = f"/runs/{run_id}/files/{quote(ODD, safe='/')}?t="
            assert href in page
            start = page.index(href)
            link = page[start : page.index('"', start)].replace("&amp;", "&")
            got = await c.get(link)
            assert got.status_code == 200 and got.text == "<h1>hi</h1>"
            assert got.headers["content-type"] == "application/octet-stream"
    finally:
        await chat.aclose()
        await live.aclose()
