"""The spend ledger in Redis (keys: ``Keys.spend_*``). A run's cost is folded into the
month it ended in once (a Lua script: the run's id added to the month's folded set is the
claim; its rows and every total are written with it, or nothing is). Until then the run
is "open" and its live usage (``Keys.run_usage``) counts when a budget is checked. Budgets
set from chat, the over-budget asks a request waits on, the approvals that let it go on
and the 80 % warnings are kept here too. Every month key expires ``ttl_s`` after it was
last written (``[governance] months_kept``).

Part of the state room: called by ``core.spend`` and ``core.runs.spend`` (and the image
tool, for its calls' cost)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from core.state.records import parse_head
from core.state.store import Store
from core.types.spend import ChannelBudget, SpendRow

BY = ("channel", "team", "person", "model", "day")

# KEYS: open, folded, rows, by channel, team, person, model, day, names, planned, asks,
# the run's image costs.
# ARGV: run id, ttl, number of rows, then per row: field, row JSON, channel, team,
# person, model, day, cost; then name pairs (key, name).
# Whoever folds (or finds the run folded) forgets what only an open run needs: its
# planning note, an ask left by a run cancelled while it waited, its image costs.
_FOLD = """
local function forget()
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[10], ARGV[1])
  redis.call('HDEL', KEYS[11], ARGV[1])
  redis.call('DEL', KEYS[12])
end
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then
  forget()
  return 0
end
local n = tonumber(ARGV[3])
local i = 4
for _ = 1, n do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
  for d = 0, 4 do
    redis.call('HINCRBYFLOAT', KEYS[4 + d], ARGV[i + 2 + d], ARGV[i + 7])
  end
  i = i + 8
end
while i < #ARGV do
  redis.call('HSET', KEYS[9], ARGV[i], ARGV[i + 1])
  i = i + 2
end
forget()
for k = 2, 9 do
  redis.call('EXPIRE', KEYS[k], tonumber(ARGV[2]))
end
return 1
"""


async def open_run(store: Store, run_id: str, channel_key: str, team_key: str) -> None:
    """Count ``run_id`` as open (its live usage belongs to ``channel_key``/``team_key``)."""
    await store.redis.hset(store.keys.spend_open(), run_id, f"{channel_key} {team_key}")


async def open_runs(store: Store) -> dict[str, tuple[str, str]]:
    """Run id → (channel key, team key) of every run not folded yet."""
    raw: Mapping[Any, Any] = await store.redis.hgetall(store.keys.spend_open())
    return _opened(raw)


async def folded_and_open(
    store: Store, month: str, by: str, key: str
) -> tuple[float, dict[str, tuple[str, str]]]:
    """``key``'s folded total of ``month`` (``by`` channel or team) and the open runs, read
    at one instant (a run folded meanwhile is counted in one of them, never in neither)."""
    async with store.redis.pipeline(transaction=True) as pipe:
        pipe.hget(store.keys.spend_totals(month, by), key)
        pipe.hgetall(store.keys.spend_open())
        total, raw = await pipe.execute()
    return float(total or 0.0), _opened(raw or {})


def _opened(raw: Mapping[Any, Any]) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for run_id, where in raw.items():
        channel, _, team = _text(where).partition(" ")
        found[_text(run_id)] = (channel, team)
    return found


async def ended_among(store: Store, run_ids: Iterable[str]) -> list[str]:
    """Those of ``run_ids`` whose run has ended (read from their small heads in one round
    trip; a run with no head is listed: its record decides)."""
    ids = list(run_ids)
    if not ids:
        return []
    async with store.redis.pipeline(transaction=False) as pipe:
        for run_id in ids:
            pipe.get(store.keys.run_head(run_id))
        heads = await pipe.execute()
    ended = []
    for run_id, raw in zip(ids, heads, strict=True):
        head = parse_head(raw)
        if head is None or head.status.terminal:
            ended.append(run_id)
    return ended


async def live_costs(store: Store, run_ids: Iterable[str]) -> dict[str, float]:
    """What each of ``run_ids`` has spent so far: its model calls (the usage counter),
    its planning (:func:`note_planning`) and its image calls."""
    ids = list(run_ids)
    if not ids:
        return {}
    async with store.redis.pipeline(transaction=False) as pipe:
        for run_id in ids:
            pipe.hget(store.keys.run_usage(run_id), "cost_usd")
            pipe.hvals(store.keys.spend_images(run_id))
            pipe.hget(store.keys.spend_planned(), run_id)
        got = await pipe.execute()
    costs: dict[str, float] = {}
    for n, run_id in enumerate(ids):
        used, images, planned = got[3 * n : 3 * n + 3]
        images_usd = sum(float(v) for v in images or ())
        costs[run_id] = float(used or 0.0) + images_usd + float(planned or 0.0)
    return costs


async def note_planning(store: Store, run_id: str, usd: float) -> None:
    """What planning ``run_id`` cost, for budget checks while it is open."""
    if usd > 0:
        await store.redis.hset(store.keys.spend_planned(), run_id, repr(usd))


async def fold(
    store: Store,
    run_id: str,
    month: str,
    rows: Iterable[SpendRow],
    names: Mapping[str, str],
    ttl_s: int,
) -> bool:
    """Write ``run_id``'s ``rows`` into ``month`` once; False if it was folded already."""
    keys = store.keys
    month_keys = [keys.spend_totals(month, by) for by in BY]
    all_keys = [keys.spend_open(), keys.spend_folded(month), keys.spend_rows(month)]
    all_keys += [*month_keys, keys.spend_names(), keys.spend_planned()]
    all_keys += [keys.spend_asks(), keys.spend_images(run_id)]
    listed = list(rows)
    argv: list[str | float | int] = [run_id, ttl_s, len(listed)]
    for row in listed:
        argv += [f"{row.run_id}|{row.model}", row.model_dump_json(), row.channel_key]
        argv += [row.team_key, row.requester_id, row.model, row.day, repr(row.cost_usd)]
    for key, name in names.items():
        if name:
            argv += [key, name]
    script = store.redis.register_script(_FOLD)
    return bool(await script(keys=all_keys, args=argv))


async def drop_open(store: Store, run_id: str) -> None:
    """Forget an open run that has nothing to fold (it no longer exists), and what only
    an open run needs (its planning note, its ask, its image costs)."""
    keys = store.keys
    async with store.redis.pipeline(transaction=True) as pipe:
        pipe.hdel(keys.spend_open(), run_id)
        pipe.hdel(keys.spend_planned(), run_id)
        pipe.hdel(keys.spend_asks(), run_id)
        pipe.delete(keys.spend_images(run_id))
        await pipe.execute()


async def month_totals(store: Store, month: str) -> dict[str, dict[str, float]]:
    """``month``'s totals: by → key → USD."""
    async with store.redis.pipeline(transaction=False) as pipe:
        for by in BY:
            pipe.hgetall(store.keys.spend_totals(month, by))
        got = await pipe.execute()
    return {
        by: {_text(k): float(v) for k, v in (raw or {}).items()}
        for by, raw in zip(BY, got, strict=True)
    }


async def month_rows(store: Store, month: str) -> list[SpendRow]:
    """Every row of ``month``."""
    raw: Mapping[Any, Any] = await store.redis.hgetall(store.keys.spend_rows(month))
    return [SpendRow.model_validate_json(v) for v in raw.values()]


async def names(store: Store) -> dict[str, str]:
    """Place key or person id → the name last seen."""
    raw: Mapping[Any, Any] = await store.redis.hgetall(store.keys.spend_names())
    return {_text(k): _text(v) for k, v in raw.items()}


async def set_names(store: Store, names: Mapping[str, str], ttl_s: int) -> None:
    """Keep place keys' (or person ids') names; the names live ``ttl_s`` after the last
    one was learned or a run was folded (as long as the months that show them)."""
    if names:
        mapping: dict[Any, Any] = dict(names)
        async with store.redis.pipeline(transaction=True) as pipe:
            pipe.hset(store.keys.spend_names(), mapping=mapping)
            pipe.expire(store.keys.spend_names(), ttl_s)
            await pipe.execute()


async def budgets(store: Store) -> dict[str, ChannelBudget]:
    """The budgets set from chat, by place key."""
    raw: Mapping[Any, Any] = await store.redis.hgetall(store.keys.spend_budgets())
    return {_text(k): ChannelBudget.model_validate_json(v) for k, v in raw.items()}


async def set_budget(store: Store, budget: ChannelBudget) -> None:
    await store.redis.hset(store.keys.spend_budgets(), budget.place_key, budget.model_dump_json())


async def put_ask(store: Store, run_id: str, ask: str) -> None:
    """Keep the over-budget ask ``run_id`` waits on (JSON, ``core.spend.budgets.Ask``)."""
    await store.redis.hset(store.keys.spend_asks(), run_id, ask)


async def get_ask(store: Store, run_id: str) -> str | None:
    found: Any = await store.redis.hget(store.keys.spend_asks(), run_id)
    return None if found is None else _text(found)


async def take_ask(store: Store, run_id: str) -> str | None:
    """Remove the ask ``run_id`` waits on and return it; None if none was (another
    click took it): concurrent decisions make one."""
    async with store.redis.pipeline(transaction=True) as pipe:
        pipe.hget(store.keys.spend_asks(), run_id)
        pipe.hdel(store.keys.spend_asks(), run_id)
        found, removed = await pipe.execute()
    return _text(found) if removed and found is not None else None


async def grant_pass(store: Store, run_id: str, at: float, ttl_s: int) -> None:
    """Let ``run_id``'s planning go on past its budget (a person approved at ``at``)."""
    await store.redis.set(store.keys.spend_pass(run_id), repr(at), ex=ttl_s)


async def passed_at(store: Store, run_id: str) -> float | None:
    """When going over budget was approved for ``run_id``, if it was."""
    found: Any = await store.redis.get(store.keys.spend_pass(run_id))
    return None if found is None else float(found)


async def release_planning(store: Store, run_id: str) -> None:
    """Drop the planning claim of a request that now waits for a spending decision, so
    the planning job sent once it is approved is not taken for a second delivery."""
    await store.redis.delete(store.keys.planning(run_id))


async def warn_in(store: Store, month: str, place_key: str, run_id: str, ttl_s: int) -> bool:
    """Whether ``place_key``'s warning about ``month`` is said in ``run_id``'s thread: the
    first run to ask claims it (once per place and month); the same run asking again is
    told yes (its thread shows it, whichever of its paths asked first)."""
    key = store.keys.spend_warned_in(month)
    async with store.redis.pipeline(transaction=True) as pipe:
        pipe.hsetnx(key, place_key, run_id)
        pipe.hget(key, place_key)
        pipe.expire(key, ttl_s)
        _, owner, _ = await pipe.execute()
    return owner is not None and _text(owner) == run_id


async def add_image_cost(
    store: Store, run_id: str, model: str, usd: float, ttl_s: int = 86_400 * 31
) -> None:
    """Count an image call's cost to ``run_id`` (folded with its model calls, then
    dropped; ``ttl_s`` bounds it for a run never folded)."""
    if usd > 0:
        key = store.keys.spend_images(run_id)
        async with store.redis.pipeline(transaction=True) as pipe:
            pipe.hincrbyfloat(key, model, usd)
            pipe.expire(key, ttl_s)
            await pipe.execute()


async def image_costs(store: Store, run_id: str) -> dict[str, float]:
    raw: Mapping[Any, Any] = await store.redis.hgetall(store.keys.spend_images(run_id))
    return {_text(k): float(v) for k, v in raw.items()}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
