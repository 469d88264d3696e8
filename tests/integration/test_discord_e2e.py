"""The production shape of the Discord bot, offline: a real discord.py client on the local
Discord (gateway, REST), real Redis, a real Celery worker that plans the request and runs
the agents through the real litellm gateway against the OpenAI-compatible HTTP fake."""

from __future__ import annotations

import pytest

from bots.discord.bot import CarambaBot
from core.process.wiring import build_llm, build_services
from core.types.run import RunStatus
from tasks.app import make_app
from tasks.scheduler import CeleryScheduler
from tests.conftest import make_settings
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.llm_server import FakeLLMServer
from tests.integration.test_discord_bot import Harness, layout_text
from tests.integration.test_slack_e2e import responder
from tests.schedulers import celery_settings, celery_worker

pytestmark = pytest.mark.integration


async def test_mention_to_result_through_a_celery_worker_and_litellm(real_redis) -> None:
    async with FakeLLMServer() as llm, FakeDiscord.serving() as fake:
        llm.set_responder(responder)
        settings = make_settings(
            llm={"model": "openai/fake-model", "api_base": llm.base_url, "api_key_env": ""},
            planning={"reflection_rounds": 0, "library_top_k": 0},
            discord={"approver_roles": ["approver"], "status_interval_s": 0.2},
        )
        settings = celery_settings(settings, real_redis.test_prefix)
        app = make_app(settings, retry_delay_s=0.05)
        publisher = CeleryScheduler(app, settings)
        svc = build_services(settings, publisher, llm=build_llm(settings), redis=real_redis)
        bot = CarambaBot(svc, guild_ready_timeout=0.05)
        try:
            async with celery_worker(app), fake.running(bot):
                h = Harness(fake, bot)
                asked = await fake.mention(
                    "general", "alice", "Compare the cheapest flights to Berlin."
                )
                card, run_id = await h.card(timeout_s=30)
                assert "Scout" in layout_text(card)
                click = await fake.click(card["id"], f"caramba:approve:{run_id}", "bob")
                assert (await fake.wait_ack(click)).json["type"] == 6
                await h.runs_end(timeout_s=60)
        finally:
            await publisher.aclose()
    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.COMPLETED, run.error
    thread = fake.thread_of(asked)
    assert thread is not None
    texts = [m["content"] for m in fake.channel_messages(thread["id"])]
    assert "Cheapest: 49 EUR" in texts[-1]
    assert any("Run completed" in t for t in texts)
    assert fake.pinged() == [] and fake.unguarded_mentions() == []
    # Planning and both agents went over HTTP to the model.
    assert len(llm.requests) >= 5
