"""The spend ledger's costs (``core.spend``): the budget check made before a request is
planned, with N runs open in its channel (their usage counters, planning and image costs
read in one pipeline); folding ended runs into their month (one Lua script each, after
reading the run, its agents and usage); an idle fold pass (only heads read). Needs Redis
on 127.0.0.1:6379 (db 15, cleans up its keys). Run: ``.venv/bin/python bench/spend_ledger.py``."""

from __future__ import annotations

import asyncio
import time
import uuid

from redis.asyncio import Redis

from core.config import load_settings
from core.config_governance import BudgetRule, GovernanceSettings
from core.llm.scripted import ScriptedModel
from core.process.wiring import build_services
from core.scheduler.inline import InlineScheduler
from core.spend import budgets, ledger
from core.state import spend as kept
from core.types.place import Place
from core.types.run import RunState, RunStatus

URL = "redis://127.0.0.1:6379/15"
OPEN = 500
CHECKS = 50


async def main() -> None:
    prefix = f"bench-{uuid.uuid4().hex[:6]}"
    place = Place(platform="slack", workspace="T", channel="C", channel_name="#c")
    rule = BudgetRule(month_usd=1e6)
    gov = GovernanceSettings(channels={place.key: rule}, fold_batch=10_000)
    settings = load_settings(redis={"url": URL, "key_prefix": prefix})
    settings = settings.model_copy(update={"governance": gov})
    redis = Redis.from_url(URL, decode_responses=True)
    svc = build_services(settings, InlineScheduler(1), llm=ScriptedModel(), redis=redis)
    try:
        for i in range(OPEN):
            ended = RunStatus.COMPLETED if i % 2 else RunStatus.RUNNING
            run = RunState(id=f"run_{i}", task="t", status=ended, place=place)
            await svc.store.create_run(run)
            await redis.hset(svc.store.keys.run_usage(run.id), "cost_usd", 0.01)
            await kept.open_run(svc.store, run.id, place.key, place.team_key)
        started = time.perf_counter()
        for _ in range(CHECKS):
            await budgets.check(svc, place)
        check_ms = (time.perf_counter() - started) / CHECKS * 1000
        print(f"budget check, {OPEN} runs open in the channel: {check_ms:.1f} ms")
        started = time.perf_counter()
        folded = await ledger.fold_ended(svc)
        fold_s = time.perf_counter() - started
        print(f"fold pass: {folded} ended runs in {fold_s * 1000:.0f} ms "
              f"({fold_s / folded * 1000:.2f} ms a run)")  # fmt: skip
        started = time.perf_counter()
        await ledger.fold_ended(svc)
        idle_ms = (time.perf_counter() - started) * 1000
        print(f"fold pass, {OPEN - folded} runs under way, none ended: {idle_ms:.1f} ms")
    finally:
        found = [k async for k in redis.scan_iter(match=f"{prefix}:*", count=1000)]
        if found:
            await redis.delete(*found)
        await redis.aclose()


if __name__ == "__main__":
    asyncio.run(main())
