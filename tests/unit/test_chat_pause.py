"""The relay's part of a run paused at its budget (bots/chat/pause.py): the pause as an
intention with what was spent against the limit, in plain figures; the status line
saying so; a line when the run goes on; nothing posted when the events are replayed."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from bots.chat.intentions import Paused
from bots.chat.pause import PAUSED, amount, extend_label, pause_text
from bots.chat.ports import Limits, Place
from bots.chat.relay import ThreadRelay
from bots.web.chat_render import WebRenderer
from core.types.events import BudgetReached, RunStarted, RunStatusChanged
from core.types.run import RunBudget, RunStatus

RUN = "run_paused"


def reached(what: str = "cost") -> BudgetReached:
    return BudgetReached(
        run_id=RUN,
        what=what,  # type: ignore[arg-type]
        detail="the run spent $4.08 of $3.00",
        tokens=123_456,
        cost_usd=4.0812,
        extend_tokens=200_000,
        extend_cost_usd=1.0,
        extend_wall_clock_s=900,
    )


def svc(budget: RunBudget) -> Any:
    """Just enough of the services for the relay to read the run's budget."""

    async def get_run(run_id: str) -> Any:
        return SimpleNamespace(budget=budget)

    return SimpleNamespace(store=SimpleNamespace(get_run=get_run))


def relay(budget: RunBudget | None = None) -> ThreadRelay:
    r = ThreadRelay(Place("c", "t"), RUN, WebRenderer(), Limits(message_chars=1000))
    r.svc = svc(budget) if budget is not None else None
    return r


async def test_a_budget_pause_is_posted_with_its_figures_and_the_status_says_so() -> None:
    r = relay(RunBudget(tokens=100_000, cost_usd=3.0, wall_clock_s=600))
    await r.on_event(RunStarted(run_id=RUN, task="t"))
    r.take()
    await r.on_event(reached())
    entries, status = r.take()
    (pause,) = entries
    assert pause.text == (
        "⏸ Paused at its budget: the run spent $4.08 of $3.00. Extend it to go on, or stop "
        "here with the results so far."
    )
    assert pause.payload == {
        "kind": "paused",
        "run": RUN,
        "extend": "Extend by $1.00",
        "stop": "Stop here",
    }
    assert status is not None and PAUSED in status.text

    await r.on_event(RunStatusChanged(run_id=RUN, status=RunStatus.WAITING_HUMAN, by="system"))
    assert r.take() == ([], None)
    await r.on_event(RunStatusChanged(run_id=RUN, status=RunStatus.RUNNING, by="UANA"))
    (note,), _ = r.take()
    assert note.text == (
        "▶ The budget was extended: the run goes on (its budget is now $3.00 · 100,000 tokens)."
    )
    # Running again after an answered question is no extension.
    await r.on_event(RunStatusChanged(run_id=RUN, status=RunStatus.RUNNING, by="UANA"))
    assert r.take()[0] == []


async def test_replayed_events_post_nothing_and_an_unknown_limit_keeps_cores_words() -> None:
    r = relay()
    r.quiet = True
    await r.on_event(reached())
    assert r.take() == ([], None)
    assert r.line.doing == PAUSED, "the state is rebuilt all the same"
    r.quiet = False
    p = Paused(run_id=RUN, what="cost", detail="the run spent $4.08 of $3.00", cost_usd=4.08)
    assert "the run spent $4.08 of $3.00." in pause_text(p)


def test_the_extension_in_plain_figures() -> None:
    tokens = Paused(run_id=RUN, what="tokens", detail="", tokens=120_000, limit_tokens=100_000)
    tokens = Paused(**{**vars(tokens), "extend_tokens": 50_000})
    assert "the run used 120,000 of 100,000 tokens" in pause_text(tokens)
    assert extend_label(tokens) == "Extend by 50,000 tokens"
    assert amount("wall_clock", 0, 0, 900) == "15 min"
    assert amount("cost", 0.004, 0, 0) == "under $0.01"
