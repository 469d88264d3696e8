"""The offline demo: a real run through the turn loop, tools and Redis (fakeredis), with a
scripted model standing in for the LLM. Nothing leaves this machine."""

from __future__ import annotations

import datetime as dt
import re

from core.llm.base import LLMRequest
from core.llm.scripted import SCRIPTED_MODEL, Reply, ScriptedModel, call
from core.types.agent import AgentSpec

DEMO_TASK = (
    "How many seconds are there in a leap year, how many weekdays are left before "
    "New Year, and what time is it in Tokyo right now?"
)


def demo_agent() -> AgentSpec:
    return AgentSpec(
        name="Demo assistant",
        role="solo",
        model=SCRIPTED_MODEL,
        tools=("calculate", "days_between", "current_time", "finish"),
        description="Answers questions that need arithmetic, dates and clocks.",
    )


def _tool_results(request: LLMRequest) -> list[str]:
    return [m.content or "" for m in request.messages if m.role == "tool"]


def _demo_step(request: LLMRequest) -> Reply:
    """Decide the next step from what the tools returned so far, like a model would."""
    results = _tool_results(request)
    today = dt.date.today()
    if len(results) == 0:
        return Reply(
            content="First the arithmetic: 366 days × 24 h × 3600 s.",
            calls=(call("calculate", {"expression": "366 * 24 * 3600"}),),
        )
    if len(results) == 1:
        new_year = dt.date(today.year + 1, 1, 1)
        return Reply(
            content="Now the weekdays until New Year.",
            calls=(
                call("days_between", {"start": today.isoformat(), "end": new_year.isoformat()}),
            ),
        )
    if len(results) == 2:
        return Reply(
            content="And the clock in Tokyo.",
            calls=(call("current_time", {"timezone": "Asia/Tokyo"}),),
        )
    seconds = results[0].rsplit("=", 1)[-1].strip()
    weekdays = re.search(r"\((\d+) weekdays\)", results[1])
    answer = (
        f"- A leap year has **{seconds} seconds** (366 × 24 × 3600).\n"
        f"- From today ({today:%Y-%m-%d}) to New Year there are "
        f"**{weekdays.group(1) if weekdays else '?'} weekdays** left.\n"
        f"- In Tokyo it is now **{results[2]}**."
    )
    return Reply(content="All three answers are in.", calls=(call("finish", {"result": answer}),))


def demo_model() -> ScriptedModel:
    return ScriptedModel(responder=_demo_step)
