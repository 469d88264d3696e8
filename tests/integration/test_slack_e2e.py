"""The production shape of the Slack bot, offline: signed HTTP requests into the bot, the
Slack Web API fake, real Redis, a real Celery worker that plans the request and runs the
agents through the real litellm gateway against the OpenAI-compatible HTTP fake."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.process.wiring import build_llm, build_services
from core.types.run import RunStatus
from tasks.app import make_app
from tasks.scheduler import CeleryScheduler
from tests.conftest import make_settings
from tests.fakes.llm_server import FakeLLMServer, FakeReply
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.test_slack_http import ANA, serve_bot
from tests.schedulers import celery_settings, celery_worker

pytestmark = pytest.mark.integration
THREAD = "1700000000.000100"


def tool_names(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or ()}


def cards(slack: FakeSlackAPI) -> list[dict[str, Any]]:
    return [c for c in slack.of("chat.postMessage") if "caramba_approve" in json.dumps(c)]


def responder(request: dict[str, Any]) -> FakeReply:
    """Router → plan; planner → an orchestrator with one scout; prompt drafts; then each
    agent finishes (the scout with fares, the orchestrator once it has the scout's)."""
    tools = tool_names(request)
    said = json.dumps(request["messages"])
    if "submit_router" in tools:
        return FakeReply(tool_calls=[("submit_router", {"path": "plan", "reason": "steps"})])
    if "submit_planner" in tools:
        design = {
            "steps": [{"title": "Find fares", "tools": ["calculate"]}],
            "agents": [
                {"name": "Orchestrator", "role": "orchestrator", "tools": []},
                {
                    "name": "Scout",
                    "role": "lead",
                    "parent": "Orchestrator",
                    "team": "fares",
                    "tools": ["calculate"],
                    "description": "finds fares",
                },
            ],
            "teams": [{"name": "fares", "lead": "Scout", "pattern": "fan_out"}],
        }
        return FakeReply(tool_calls=[("submit_planner", design)])
    if "finish" not in tools:
        return FakeReply(content="Find the three cheapest fares and finish with them.")
    system = request["messages"][0]["content"]
    if "Scout" in system.split("\n", 1)[0] or "You are Scout" in system:
        return FakeReply(tool_calls=[("finish", {"result": "LIS-BER: 49, 55, 61 EUR"})])
    if "49, 55, 61" in said:
        return FakeReply(tool_calls=[("finish", {"result": "Cheapest: 49 EUR (of 49/55/61)"})])
    return FakeReply(tool_calls=[("wait_for_messages", {})])


async def test_mention_to_result_through_a_celery_worker_and_litellm(real_redis) -> None:
    slack = await FakeSlackAPI().start()
    async with FakeLLMServer() as llm:
        llm.set_responder(responder)
        settings = make_settings(
            llm={"model": "openai/fake-model", "api_base": llm.base_url, "api_key_env": ""},
            planning={"reflection_rounds": 0, "library_top_k": 0},
            slack={"api_url": slack.url},
        )
        settings = celery_settings(settings, real_redis.test_prefix)
        app = make_app(settings, retry_delay_s=0.05)
        publisher = CeleryScheduler(app, settings)
        svc = build_services(settings, publisher, llm=build_llm(settings), redis=real_redis)
        try:
            async with celery_worker(app), serve_bot(svc, slack) as h:
                assert (await h.mention("Compare the cheapest flights to Berlin.")).status_code
                await slack.wait_for(lambda: bool(cards(slack)), 30)
                (card,) = cards(slack)
                assert card["thread_ts"] == THREAD and "Scout" in json.dumps(card["blocks"])
                run_id = card["blocks"][-1]["elements"][0]["value"]
                await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
                await h.runs_end(timeout_s=60)
        finally:
            await publisher.aclose()
            await slack.stop()

    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.COMPLETED, run.error
    methods = [c.method for c in slack.calls if c.method != "auth.test"]
    # acknowledgement → card in the thread → approve → status updates → result.
    assert methods[:3] == ["reactions.add", "assistant.threads.setStatus", "chat.postMessage"]
    assert methods.index("chat.update") > 2
    posts = slack.of("chat.postMessage")
    assert all(p["thread_ts"] == THREAD for p in posts)
    assert "Cheapest: 49 EUR" in posts[-1]["text"]
    assert "Run completed" in slack.of("chat.update")[-1]["text"]
    assert f"Approved by <@{ANA}>" in json.dumps(slack.of("chat.update")[0]["blocks"])
    # Planning and both agents went over HTTP to the model.
    assert len(llm.requests) >= 5
