"""``caramba spend``: the month's total it prints equals the sum of the runs' costs (as
their records and usage counters hold them), per channel and person too; a channel asked
by name; a bad month said in one line. Real Redis, runs planned and run by the inline
scheduler."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import pytest
from typer.testing import CliRunner

from bots.cli import app
from core.config_governance import GovernanceSettings
from core.process.jobs import handle
from core.process.wiring import build_services
from core.runs import people
from core.runs.outcomes import Requested
from core.scheduler.inline import InlineScheduler
from core.spend import ledger
from core.types.people import Person
from core.types.place import Place
from tests.conftest import REDIS_URL
from tests.helpers import collect
from tests.planning_helpers import settings as planning_settings
from tests.scenarios.test_spend import direct_model

pytestmark = pytest.mark.integration
runner = CliRunner()
OPS = Place(platform="slack", workspace="T0ACME", channel="C0OPS", channel_name="#ops")
DEV = Place(platform="slack", workspace="T0ACME", channel="C0DEV", channel_name="#dev")


async def seed(prefix: str) -> tuple[float, dict[str, float]]:
    """Three runs in two channels by two people, ended and folded; what they cost."""
    from redis.asyncio import Redis

    base = planning_settings(library_top_k=0)
    settings = base.model_copy(
        update={
            "redis": base.redis.model_copy(update={"url": REDIS_URL, "key_prefix": prefix}),
            "governance": GovernanceSettings(),
        }
    )
    client: Any = Redis.from_url(REDIS_URL, decode_responses=True)
    scheduler = InlineScheduler(4)
    svc = build_services(settings, scheduler, llm=direct_model(), redis=client)
    scheduler.start(lambda job: handle(svc, job))
    per_channel: dict[str, float] = {}
    try:
        asks = [(OPS, "Ana"), (OPS, "Bob"), (DEV, "Bob")]
        for place, name in asks:
            made = await people.request(
                svc, "Capital of France?", Person(f"U{name}", name), place=place
            )
            assert isinstance(made, Requested)
            await collect(svc, made.run_id, timeout_s=20)
            run = await svc.store.get_run(made.run_id)
            cost = (await svc.store.run_usage(run.id)).cost_usd
            cost += run.planning.cost_usd if run.planning else 0.0
            per_channel[place.channel_name] = per_channel.get(place.channel_name, 0.0) + cost
        assert await ledger.fold_ended(svc) == 3
    finally:
        await scheduler.stop()
        await client.aclose()
    return sum(per_channel.values()), per_channel


async def clean(prefix: str) -> None:
    from redis.asyncio import Redis

    client: Any = Redis.from_url(REDIS_URL, decode_responses=True)
    keys = [k async for k in client.scan_iter(match=f"{prefix}:*", count=1000)]
    if keys:
        await client.delete(*keys)
    await client.aclose()


def dollars(text: str, label: str) -> float:
    found = re.search(rf"{re.escape(label)}[\s│]*\$([\d,.]+)", text)
    assert found, text
    return float(found.group(1).replace(",", ""))


def test_caramba_spend_agrees_with_the_sum_of_the_runs_costs() -> None:
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    env = {"CARAMBA_REDIS__URL": REDIS_URL, "CARAMBA_REDIS__KEY_PREFIX": prefix, "COLUMNS": "160"}
    try:
        total, per_channel = asyncio.run(seed(prefix))
        assert total > 0
        shown = runner.invoke(app, ["spend"], env=env)
        assert shown.exit_code == 0, shown.output
        assert dollars(shown.output, "Total:") == pytest.approx(round(total, 4), abs=1e-9)
        assert "(3 runs ended)" in shown.output
        for name, cost in per_channel.items():
            assert dollars(shown.output, name) == pytest.approx(round(cost, 4), abs=1e-9)
        assert "Ana" in shown.output and "Bob" in shown.output and "UAna" not in shown.output
        assert "planning" in shown.output  # by model: the router's call

        ops = runner.invoke(app, ["spend", "--channel", "#ops"], env=env)
        assert ops.exit_code == 0, ops.output
        assert dollars(ops.output, "Total:") == pytest.approx(round(per_channel["#ops"], 4))
        assert "(2 runs ended)" in ops.output and "#dev" not in ops.output

        bad = runner.invoke(app, ["spend", "--month", "2026-13"], env=env)
        assert bad.exit_code == 2 and "is not like 2026-11" in bad.output
        empty = runner.invoke(app, ["spend", "--month", "2001-01"], env=env)
        assert empty.exit_code == 0 and "Total: $0.0000" in empty.output
    finally:
        asyncio.run(clean(prefix))


def test_caramba_spend_without_redis_says_what_to_set() -> None:
    shown = runner.invoke(app, ["spend"], env={"CARAMBA_REDIS__URL": "", "COLUMNS": "160"})
    assert shown.exit_code == 2 and "CARAMBA_REDIS__URL" in shown.output
