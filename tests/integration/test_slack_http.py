"""The Slack bot end to end, offline: signed HTTP requests into the app served by uvicorn,
a local fake of the Slack Web API recording every call, real Redis, the scripted model,
turns run by the inline scheduler."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import tempfile
import time
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from slack_sdk.signature import SignatureVerifier

from bots.slack.app import SlackBot
from bots.slack.secrets import SlackSecrets
from bots.slack.server import EVENTS_PATH, served
from core.config import Settings
from core.llm.scripted import Reply, ScriptedModel, call
from core.services import Services
from core.types.run import RunStatus
from tests.fakes.slack_api import FakeSlackAPI
from tests.helpers import collect
from tests.planning_helpers import ROUTE_PLAN, as_json, design, prompt_writer
from tests.planning_helpers import settings as planning_settings
from tests.scenarios import texts

pytestmark = pytest.mark.integration
SECRET = "test-signing-secret"
ANA, MALLORY, CHANNEL = "UANA", "UMAL", "C1"


def responder(request: Any) -> Reply:
    """Prompt drafts while planning; every running agent finishes at once, except that
    the orchestrator of a task about airports first asks which one and reports the answer."""
    if "The agent: " in (request.messages[-1].content or ""):
        return prompt_writer(request)
    if request.agent_name == "Orchestrator" and "airport" in json.dumps(
        [m.content for m in request.messages]
    ):
        replies = texts(request, "[Reply from")
        if not replies:
            return Reply(calls=(call("ask_user", {"question": "BER or a nearby airport?"}),))
        return Reply(calls=(call("finish", {"result": replies[0].splitlines()[1]}),))
    return Reply(calls=(call("finish", {"result": f"{request.agent_name} says: 3 flights"}),))


def scripted(plan: dict[str, Any] | None) -> ScriptedModel:
    """The planning path with ``plan``; the fast path (a direct answer) with None."""
    m = ScriptedModel(responder=responder)
    if plan is None:
        direct = {"path": "direct", "reason": "a simple question", "answer": "Paris."}
        return m.script("router", Reply(calls=(call("submit_router", direct),)))
    m.script("router", ROUTE_PLAN)
    m.script("planner", as_json(plan))
    return m


def waiting_for(wanted: dict[str, str]) -> ScriptedModel:
    """The usual plan, with parents (``wanted``: parent → child) that finish only once
    that child's result came: a test about one agent's turn must not see the run end (its
    root finishing at once) before that agent's first turn."""

    def answer(request: Any) -> Reply:
        child = wanted.get(request.agent_name or "")
        seen = json.dumps([m.content for m in request.messages])
        if child is not None and f"{child} says" not in seen:
            return Reply(calls=(call("wait_for_messages", {}),))
        return responder(request)

    model = scripted(design())
    model.responder = answer
    return model


def asking_design() -> dict[str, Any]:
    """The usual design, with an orchestrator that may ask people questions."""
    d = design()
    d["agents"][0]["tools"] = ["ask_user"]
    return d


class Harness:
    def __init__(self, bot: SlackBot, slack: FakeSlackAPI, http: httpx.AsyncClient) -> None:
        self.bot, self.slack, self.http = bot, slack, http

    def cards(self) -> list[dict[str, Any]]:
        """The proposal cards posted (messages with an Approve button)."""
        return [c for c in self.slack.of("chat.postMessage") if "caramba_approve" in json.dumps(c)]

    async def card(self) -> tuple[dict[str, Any], str]:
        """Wait for the one proposal card; it and its run's id."""
        await self.slack.wait_for(lambda: bool(self.cards()))
        (card,) = self.cards()
        run_id: str = card["blocks"][-1]["elements"][0]["value"]
        return card, run_id

    async def asked(self) -> str:
        """Request a booking (``asking_design``), approve it, and wait for the agent's
        question in the thread; the run's id."""
        await self.mention("Book a flight to Berlin: which airport is best?")
        _, run_id = await self.card()
        await self.click("caramba_approve", run_id, ANA, "1700000000.000200")
        posts = self.slack.of
        await self.slack.wait_for(
            lambda: any("BER or a nearby" in c["text"] for c in posts("chat.postMessage"))
        )
        return run_id

    async def runs_end(self, timeout_s: float = 20) -> None:
        """Wait for the clicks' work, then for every relayed run to end."""
        await self.bot.drain()
        await self.bot.relays.wait(timeout_s)
        assert not self.bot.relays, "a run did not end in time"

    async def post(self, body: str, content_type: str, *, secret: str = SECRET) -> httpx.Response:
        ts = str(int(time.time()))
        sig = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
        return await self.http.post(
            EVENTS_PATH,
            content=body,
            headers={
                "Content-Type": content_type,
                "X-Slack-Request-Timestamp": ts,
                "X-Slack-Signature": sig,
            },
        )

    async def event(self, event_id: str, event: dict[str, Any], **kw: Any) -> httpx.Response:
        """Deliver ``event`` as Slack's Events API does (a signed event callback)."""
        body = {
            "type": "event_callback",
            "team_id": "T1",
            "api_app_id": "A1",
            "event_id": event_id,
            "event_time": int(time.time()),
            "event": {"user": ANA, "channel": CHANNEL, **event},
        }
        answered = await self.post(json.dumps(body), "application/json", **kw)
        await listeners_done()
        return answered

    async def mention(self, text: str, *, event_id: str = "Ev1", **kw: Any) -> httpx.Response:
        mention = {"type": "app_mention", "text": f"<@UBOT> {text}", "ts": "1700000000.000100"}
        return await self.event(event_id, {**mention, "event_ts": mention["ts"]}, **kw)

    async def reply(self, text: str, *, event_id: str) -> httpx.Response:
        reply = {"type": "message", "channel_type": "channel", "text": text}
        return await self.event(
            event_id, {**reply, "ts": "1700000000.000900", "thread_ts": "1700000000.000100"}
        )

    async def click(self, action_id: str, run_id: str, user: str, card_ts: str) -> httpx.Response:
        payload = {
            "type": "block_actions",
            "team": {"id": "T1"},
            "user": {"id": user},
            "api_app_id": "A1",
            "trigger_id": "trig",
            "container": {"type": "message", "message_ts": card_ts, "channel_id": CHANNEL},
            "channel": {"id": CHANNEL},
            "message": {"ts": card_ts, "thread_ts": "1700000000.000100", "text": "card"},
            "actions": [
                {"type": "button", "action_id": action_id, "value": run_id, "block_id": "b"}
            ],
        }
        body = "payload=" + urllib.parse.quote(json.dumps(payload))
        return await self.post(body, "application/x-www-form-urlencoded")


async def listeners_done() -> None:
    """Bolt acknowledges an event before its listener runs (the listener is a task of its
    own): wait for those tasks, so that what a test does next (``bot.drain()``, a count of
    calls) sees the work the event started."""
    while pending := [
        t
        for t in asyncio.all_tasks()
        if not t.done()
        and "run_ack_function_asynchronously" in getattr(t.get_coro(), "__qualname__", "")
    ]:
        await asyncio.gather(*pending, return_exceptions=True)


@contextlib.asynccontextmanager
async def harness(
    make_services: Any,
    redis: Any,
    plan: dict[str, Any] | str | None = "default",
    model: ScriptedModel | None = None,
) -> AsyncIterator[Harness]:
    slack = await FakeSlackAPI().start()
    s = quick_library(planning_settings(), tempfile.mkdtemp(prefix="caramba-lib-"))
    s = s.model_copy(update={"slack": s.slack.model_copy(update={"api_url": slack.url})})
    model = model or scripted(design() if plan == "default" else plan)
    svc = make_services(s, model, redis=redis)
    try:
        async with serve_bot(svc, slack) as h:
            yield h
    finally:
        await slack.stop()
        shutil.rmtree(s.library.index_dir, ignore_errors=True)


@contextlib.asynccontextmanager
async def serve_bot(svc: Services, slack: FakeSlackAPI) -> AsyncIterator[Harness]:
    """The bot over ``svc`` served by uvicorn on a free port, calling ``slack``."""
    bot = SlackBot(svc, SlackSecrets(bot_token="xoxb-test", signing_secret=SECRET))
    async with (
        served(bot) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http,
    ):
        yield Harness(bot, slack, http)


def quick_library(s: Settings, folder: str) -> Settings:
    """``s`` with a library that learns outside the repository, without the ONNX model."""
    lib = s.library.model_copy(update={"embedder": "hashing", "index_dir": Path(folder)})
    return s.model_copy(update={"library": lib})


async def test_mention_card_approve_progress_result(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        resp = await h.mention("Compare the three cheapest flights from Lisbon to Berlin.")
        assert resp.status_code == 200
        card, run_id = await h.card()
        reaction = h.slack.of("reactions.add")
        assert reaction == [{"channel": CHANNEL, "timestamp": "1700000000.000100", "name": "eyes"}]
        assert card["thread_ts"] == "1700000000.000100"
        text = json.dumps(card["blocks"])
        assert "Find fares" in text and "Scout A" in text and "Approve" in text
        assert "planning used" in text, "what planning spent before anyone approved"

        # A double click: both acknowledged, one run starts, the second click is refused.
        clicks = await asyncio.gather(
            *(h.click("caramba_approve", run_id, ANA, "1700000000.000200") for _ in range(2))
        )
        assert [r.status_code for r in clicks] == [200, 200]
        await h.bot.drain()
        (second,) = h.slack.of("chat.postEphemeral")
        assert "already" in second["text"]

        await h.runs_end()
        updates = h.slack.of("chat.update")
        assert len([u for u in updates if u["ts"] == "1700000000.000200"]) == 1
        assert updates[0]["ts"] == "1700000000.000200"
        assert f"Approved by <@{ANA}>" in json.dumps(updates[0]["blocks"])
        assert "caramba_approve" not in json.dumps(updates[0]["blocks"])
        thread = [c for c in h.slack.of("chat.postMessage") if c is not card]
        assert all(c["thread_ts"] == "1700000000.000100" for c in thread)
        assert any("agents 0/0" in c["text"] for c in thread), "the status message"
        assert "Run completed" in updates[-1]["text"]
        assert "Orchestrator says: 3 flights" in thread[-1]["text"]
        run = await h.bot.svc.store.get_run(run_id)
        assert run.status is RunStatus.COMPLETED
        assert len([e for e in await collect(h.bot.svc, run_id) if e.kind == "run_started"]) == 1
        order = [c.method for c in h.slack.calls if c.method != "auth.test"]
        assert order[:3] == ["reactions.add", "assistant.threads.setStatus", "chat.postMessage"]


async def test_bad_signature_is_refused(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        resp = await h.mention("anything", secret="wrong")
        assert resp.status_code == 401
        await h.bot.drain()
        assert [c.method for c in h.slack.calls] == []


async def test_a_retried_event_yields_one_card(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        for _ in range(2):
            assert (
                await h.mention("Compare flights to Berlin.", event_id="EvSame")
            ).status_code == 200
        await h.card()
        await h.bot.drain()
        assert len(h.cards()) == 1
        assert len(h.slack.of("reactions.add")) == 1


async def test_an_unauthorised_approve_is_refused_in_private(make_services, real_redis) -> None:
    async with harness(make_services, real_redis) as h:
        await h.mention("Compare flights to Berlin.")
        _, run_id = await h.card()
        assert (await h.click("caramba_approve", run_id, MALLORY, "1.2")).status_code == 200
        await h.bot.drain()
        (refusal,) = h.slack.of("chat.postEphemeral")
        assert refusal["user"] == MALLORY and "Only <@UANA>, who asked" in refusal["text"]
        assert "approval.approvers" not in refusal["text"]  # plain words, not config keys
        assert h.slack.of("chat.update") == []
        run = await h.bot.svc.store.get_run(run_id)
        assert run.status is RunStatus.PROPOSED

        # The requester rejects; a second click is refused with core's reason.
        await h.click("caramba_reject", run_id, ANA, "1.2")
        await h.bot.drain()
        await h.click("caramba_approve", run_id, ANA, "1.2")
        await h.bot.drain()
        assert "Rejected by <@UANA>" in json.dumps(h.slack.of("chat.update")[0]["blocks"])
        again = h.slack.of("chat.postEphemeral")[-1]["text"]
        assert "already decided: rejected by <@UANA>; it was rejected" in again
        assert (await h.bot.svc.store.get_run(run_id)).status is RunStatus.REJECTED


async def test_a_reply_in_the_thread_answers_an_agents_question(make_services, real_redis) -> None:
    async with harness(make_services, real_redis, asking_design()) as h:
        run_id = await h.asked()
        assert (await h.reply("BER, please", event_id="EvReply")).status_code == 200
        done = {"channel": CHANNEL, "timestamp": "1700000000.000900", "name": "white_check_mark"}
        await h.slack.wait_for(lambda: done in h.slack.of("reactions.add"))
        await h.runs_end()
        assert h.slack.of("chat.postMessage")[-1]["text"] == "BER, please"
        assert (await h.bot.svc.store.get_run(run_id)).status is RunStatus.COMPLETED


async def test_a_simple_request_is_answered_in_the_thread_without_a_card(
    make_services, real_redis
) -> None:
    async with harness(make_services, real_redis, None) as h:
        await h.mention("What is the capital of France?")
        await h.slack.wait_for(
            lambda: any("says: 3 flights" in c["text"] for c in h.slack.of("chat.postMessage"))
        )
        await h.runs_end()
        posts = h.slack.of("chat.postMessage")
        assert "caramba_approve" not in json.dumps(posts), "no proposal card"
        assert all(c["thread_ts"] == "1700000000.000100" for c in posts)
        assert "Run completed" in h.slack.of("chat.update")[-1]["text"]


async def test_cancel_stops_the_run(make_services, real_redis) -> None:
    async with harness(make_services, real_redis, asking_design()) as h:
        run_id = await h.asked()
        status = next(c for c in h.slack.of("chat.postMessage") if "agents" in c["text"])
        assert "caramba_cancel" in json.dumps(status["blocks"])

        await h.click("caramba_cancel", run_id, MALLORY, "1700000000.000300")
        await h.slack.wait_for(lambda: len(h.slack.of("chat.postEphemeral")) == 1)
        assert (await h.bot.svc.store.get_run(run_id)).status is RunStatus.WAITING_HUMAN

        h.slack.users[ANA] = {"id": ANA, "name": "ana", "profile": {"display_name": "Ana"}}
        await h.click("caramba_cancel", run_id, ANA, "1700000000.000300")
        await h.runs_end()
        assert (await h.bot.svc.store.get_run(run_id)).status is RunStatus.CANCELLED
        last = h.slack.of("chat.update")[-1]
        assert "Run cancelled" in last["text"] and "caramba_cancel" not in json.dumps(last)
        # The run's end names who cancelled it, never their id.
        said = h.slack.of("chat.postMessage")[-1]["text"]
        assert "cancelled by Ana" in said and ANA not in said


async def test_socket_mode_mention_gets_a_card(make_services, real_redis) -> None:
    from bots.slack.server import serve_socket_mode

    slack = await FakeSlackAPI().start()
    s = planning_settings()
    s = s.model_copy(update={"slack": s.slack.model_copy(update={"api_url": slack.url})})
    svc = make_services(s, scripted(design()), redis=real_redis)
    bot = SlackBot(svc, SlackSecrets(bot_token="xoxb-test", signing_secret="", app_token="xapp"))
    serving = asyncio.create_task(serve_socket_mode(bot, "xapp-1"))
    try:
        event = {
            "type": "event_callback",
            "team_id": "T1",
            "api_app_id": "A1",
            "event_id": "EvSocket",
            "event_time": int(time.time()),
            "event": {
                "type": "app_mention",
                "user": ANA,
                "text": "<@UBOT> Compare flights to Berlin.",
                "ts": "1700000000.000100",
                "channel": CHANNEL,
            },
        }
        envelope = {"envelope_id": "env1", "type": "events_api", "payload": event}
        await slack.envelopes.put(envelope)
        await slack.wait_for(lambda: any(c.get("blocks") for c in slack.of("chat.postMessage")))
        assert {"envelope_id": "env1"} in slack.socket_acks
        assert slack.of("apps.connections.open") and slack.of("reactions.add")
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        await bot.aclose()
        await slack.stop()


def form_values(form: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """What Slack submits for ``form`` as opened, with ``changes`` by block id."""
    values: dict[str, Any] = {}
    for block in form["blocks"]:
        if block["type"] != "input":
            continue
        element, bid = block["element"], block["block_id"]
        if element["type"] == "multi_static_select":
            chosen = [o["value"] for o in element.get("initial_options", [])]
            chosen = changes.get(bid, chosen)
            value: dict[str, Any] = {"selected_options": [{"value": v} for v in chosen]}
        else:
            value = {"value": changes.get(bid, element.get("initial_value"))}
        values[bid] = {"v": {"type": element["type"], **value}}
    return values


async def test_an_edit_changes_the_agent_that_runs(make_services, real_redis) -> None:
    model = waiting_for({"Orchestrator": "Lead A", "Lead A": "Scout A"})
    async with harness(make_services, real_redis, model=model) as h:
        await h.mention("Compare flights to Berlin.")
        _, run_id = await h.card()
        await h.click("caramba_edit_open", run_id, ANA, "1700000000.000200")
        await h.slack.wait_for(lambda: bool(h.slack.of("views.open")))
        form = h.slack.of("views.open")[0]["view"]
        form = json.loads(form) if isinstance(form, str) else form
        assert form["callback_id"] == "caramba_edit" and form["blocks"][0]["type"] == "input"
        run = await h.bot.svc.store.get_run(run_id)
        scout = next(a for a in run.cohort.agents if a.name == "Scout A")  # type: ignore[union-attr]

        async def submit(**changes: Any) -> httpx.Response:
            payload = {
                "type": "view_submission",
                "team": {"id": "T1"},
                "user": {"id": ANA},
                "api_app_id": "A1",
                "trigger_id": "trig",
                "view": {**form, "id": "V1", "state": {"values": form_values(form, **changes)}},
            }
            body = "payload=" + urllib.parse.quote(json.dumps(payload))
            return await h.post(body, "application/x-www-form-urlencoded")

        bad = await submit(**{f"tools:{scout.id}": ["teleport"]})
        assert bad.status_code == 200
        assert bad.json()["response_action"] == "errors"
        assert "teleport" in bad.json()["errors"][f"tools:{scout.id}"]
        # Each problem under its own agent's field, not under the first agent's.
        assert run.cohort is not None and run.cohort.agents[0].id != scout.id
        no_model = await submit(**{f"model:{scout.id}": "openai/no-such-model-xyz"})
        assert "not a model Caramba knows" in no_model.json()["errors"][f"model:{scout.id}"]
        too_few = await submit(**{f"tokens:{scout.id}": "10"})
        assert "1000" in too_few.json()["errors"][f"tokens:{scout.id}"]

        ok = await submit(
            **{f"prompt:{scout.id}": "Only look at trains.", f"tools:{scout.id}": ["finish"]}
        )
        assert ok.status_code == 200 and not ok.content
        await h.slack.wait_for(lambda: bool(h.slack.of("chat.update")))
        assert "Edited by <@UANA>" in json.dumps(h.slack.of("chat.update")[0]["blocks"])
        edited = await h.bot.svc.store.get_run(run_id)
        spec = next(a for a in edited.cohort.agents if a.id == scout.id)  # type: ignore[union-attr]
        assert spec.system_prompt == "Only look at trains." and "calculate" not in spec.tools
        assert "send_message" in spec.tools  # the base tools stay whatever the edit chose

        await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
        await h.runs_end()
        model = h.bot.svc.llm
        asked = [r for r in model.requests if r.agent_name == "Scout A"]  # type: ignore[attr-defined]
        assert asked and "Only look at trains." in (asked[0].messages[0].content or "")
