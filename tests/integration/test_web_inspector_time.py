"""The inspector's times on real runs in a real Redis: a finished cohort's page shows the
run's, each turn's and each call's duration, a waterfall lane per agent, every
``ToolCalled`` of every agent in the timeline, and the filters narrow both; arguments
are pretty-printed and stay escaped."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from bots.web.view import read_all_events
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import people
from core.runs.control import start_run
from core.types.events import LLMCalled, ToolCalled, TurnStarted
from tests import scenarios
from tests.helpers import collect
from tests.integration.test_web_inspector import (
    EVIL,
    app_for,
    client,
    evil_model,
    finished_run,
    solo,
    token,
)
from tests.scenarios.test_tool_approval import (
    ALICE,
    SECRET,
    WRITE,
    agent,
    approval_settings,
    waiting,
)

pytestmark = pytest.mark.integration


class Page(HTMLParser):
    """The timeline's rows and the waterfall's lanes of a run's page."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: list[dict[str, str]] = []
        self.lanes: dict[str, list[dict[str, str]]] = {}
        self._lane: str | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = a.get("class", "").split()
        if tag == "li" and "line" in classes:
            self.rows.append(a)
        elif tag == "div" and "wf-lane" in classes:
            self._lane = a["data-agent"]
            self.lanes[self._lane] = []
        elif tag == "rect" and self._lane is not None:
            self.lanes[self._lane].append(a)

    def kinds(self) -> list[str]:
        return [c[2:] for r in self.rows for c in r["class"].split() if c.startswith("k-")]


async def cohort_page(make_services: Any, settings: Any, redis: Any) -> tuple[str, Any, list]:
    run_id = await finished_run(
        make_services,
        settings,
        redis,
        scenarios.competition(),
        scenarios.orchestrator(),
        "Leap-year seconds, best answer wins",
    )
    app, inspector = app_for(settings, redis)
    events = await read_all_events(inspector.store, run_id)
    return run_id, app, events


async def test_durations_waterfall_and_every_tool_call(make_services, settings, real_redis) -> None:
    run_id, app, events = await cohort_page(make_services, settings, real_redis)
    async with client(app) as c:
        html = (await c.get(f"/runs/{run_id}", params={"t": token(run_id)})).text
        listing = (await c.get("/")).text
    # The runs list says how long the run took.
    assert re.search(r'<td class="num took-cell">[\d.]+ m?s</td>', listing)
    page = Page(html)
    # The run's duration, and every turn's and call's.
    assert re.search(r'id="run-took">took [\d.]+ m?s<', html)
    assert html.count('title="the whole turn"') == sum(isinstance(e, LLMCalled) for _, e in events)
    # Every ToolCalled of every agent is a row of the timeline, with its time.
    tool_ids = {i for i, e in events if isinstance(e, ToolCalled)}
    agents_calling = {e.agent_id for _, e in events if isinstance(e, ToolCalled)}
    assert len(agents_calling) >= 5 and len(tool_ids) >= 15
    rows = {r["data-id"]: r for r in page.rows}
    assert tool_ids <= set(rows)
    assert all(rows[i]["data-cat"] == "tools" for i in tool_ids)
    assert page.kinds().count("tool_called") == len(tool_ids)
    assert page.kinds().count("llm_called") == sum(isinstance(e, LLMCalled) for _, e in events)
    # One waterfall lane per agent: its life, each turn, each model and tool call.
    assert set(page.lanes) == {e.agent_id for _, e in events if e.kind == "agent_created"}
    for agent_id, rects in page.lanes.items():
        mine = [e for _, e in events if e.agent_id == agent_id]
        expected = 1 + sum(isinstance(e, TurnStarted | LLMCalled | ToolCalled) for e in mine)
        assert len(rects) == expected
        for rect in rects:
            x, width = float(rect["x"].rstrip("%")), float(rect["width"].rstrip("%"))
            assert 0 <= x and width > 0 and x + width <= 100.001
            assert float(rect["data-seconds"]) >= 0


async def test_filters_narrow_the_timeline_and_the_waterfall(
    make_services, settings, real_redis
) -> None:
    run_id, app, events = await cohort_page(make_services, settings, real_redis)
    judge = next(e for _, e in events if e.kind == "agent_created" and e.name == "Judge")
    judge_tools = {
        i for i, e in events if isinstance(e, ToolCalled) and e.agent_id == judge.agent_id
    }
    assert judge_tools
    async with client(app) as c:
        everything = Page((await c.get(f"/runs/{run_id}", params={"t": token(run_id)})).text)
        narrowed = await c.get(
            f"/runs/{run_id}",
            params={"t": token(run_id), "agent": judge.agent_id, "kind": "tools"},
        )
        messages = Page(
            (await c.get(f"/runs/{run_id}", params={"t": token(run_id), "kind": "messages"})).text
        )
        unknown = Page(
            (
                await c.get(f"/runs/{run_id}", params={"t": token(run_id), "agent": "agt_nobody"})
            ).text
        )
    page = Page(narrowed.text)
    assert {r["data-id"] for r in page.rows} == judge_tools
    assert all(judge.agent_id in r["data-agents"].split() for r in page.rows)
    assert list(page.lanes) == [judge.agent_id]
    assert f"{len(judge_tools)} of {len(everything.rows)} steps" in narrowed.text
    # The form shows what was chosen.
    assert f'<option value="{judge.agent_id}" selected>' in narrowed.text
    assert '<option value="tools" selected>' in narrowed.text
    assert messages.rows and set(messages.kinds()) == {"message_sent"}
    assert len(messages.rows) < len(everything.rows)
    # An agent not of this run shows everything.
    assert len(unknown.rows) == len(everything.rows)


async def test_arguments_are_pretty_and_escaped(make_services, settings, real_redis) -> None:
    run_id = await finished_run(
        make_services, settings, real_redis, evil_model(), solo(), f"Task {EVIL}"
    )
    app, _ = app_for(settings, real_redis)
    async with client(app) as c:
        html = (await c.get(f"/runs/{run_id}", params={"t": token(run_id)})).text
    assert "<script>alert" not in html and "<img src=x" not in html
    args = json.dumps({"path": "out/evil.html", "content": EVIL}, indent=2)
    escaped = args.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    escaped = escaped.replace('"', "&#34;")
    assert f"<pre>{escaped}</pre>" in html  # indented JSON, escaped, in the agent's turn


async def held_twice(make_services: Any, redis: Any) -> tuple[str, Any]:
    """A finished run whose write_file waited for approval twice: denied, then approved."""
    settings = approval_settings()
    model = ScriptedModel().script(
        "*",
        Reply(content="I save the report.", calls=(call("write_file", WRITE),)),
        Reply(content="Trying again.", calls=(call("write_file", WRITE),)),
        Reply(calls=(call("finish", {"result": "saved"}),)),
    )
    svc = make_services(settings, model, redis=redis)
    run_id = await start_run(svc, "write the report", agent(), requested_by=ALICE.id)
    first = await waiting(svc, run_id)
    await people.approve_action(svc, run_id, first.id, ALICE, "deny", reason="not yet")
    second = await waiting(svc, run_id, count=2)
    await people.approve_action(svc, run_id, second.id, ALICE, "once")
    events = await collect(svc, run_id, timeout_s=30)
    assert events[-1].kind == "run_finished"
    return run_id, settings


async def test_a_call_held_for_approval_shows_its_real_outcome(make_services, real_redis) -> None:
    """Denied once, approved once: the held calls get the outcome and time of the event
    their approval settled (a later turn's), every ToolCalled is a timeline row."""
    run_id, settings = await held_twice(make_services, real_redis)
    app, inspector = app_for(settings, real_redis)
    stored = await read_all_events(inspector.store, run_id)
    async with client(app) as c:
        html = (await c.get(f"/runs/{run_id}", params={"t": token(run_id)})).text
    page = Page(html)

    tool_ids = {i for i, e in stored if isinstance(e, ToolCalled)}
    assert len(tool_ids) == 5  # two held notes, the denial, the approved run, finish
    assert tool_ids <= {r["data-id"] for r in page.rows}
    assert {"approval_asked", "approval_decided"} <= set(page.kinds())
    # In the agent's turns: the first write_file denied (failed), the second ran.
    calls = re.findall(r'<div class="call( failed)?">\n<span class="tool">(\w+)</span>', html)
    assert calls == [(" failed", "write_file"), ("", "write_file"), ("", "finish")]
    # The waterfall shows the two waits for a person in the writer's lane.
    [lane] = page.lanes.values()
    assert sum("b-wait" in r["class"] for r in lane) == 2
    # Arguments are shown as approvers see them: the key masked, in turns and timeline.
    assert SECRET not in html and "v1 key ••••" in html
