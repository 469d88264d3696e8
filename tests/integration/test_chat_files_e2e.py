"""Analyse this CSV and plot it, offline and end to end: a Slack mention with a CSV
attached (signed HTTP into the bot, the Slack Web API fake serving the file) → a real
Celery worker plans the request through litellm and the OpenAI-compatible fake → a cohort
whose analyst runs pandas and matplotlib code in the bubblewrap sandbox, reading
inputs/sales.csv and saving outputs/chart.png → the chart (a PNG) and the summary arrive
in the thread."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from core.process.wiring import build_llm, build_services
from core.tools.sandbox import probe
from core.types.run import RunStatus
from tasks.app import make_app
from tasks.scheduler import CeleryScheduler
from tests.conftest import make_settings
from tests.fakes.llm_server import FakeLLMServer, FakeReply
from tests.fakes.slack_api import FakeSlackAPI
from tests.integration.test_slack_http import ANA, CHANNEL, serve_bot
from tests.schedulers import celery_settings, celery_worker

pytestmark = pytest.mark.integration
THREAD = "1700000000.000100"
MONTHS = [(f"2024-{m:02d}", 100 + 7 * m + (40 if m == 11 else 0)) for m in range(1, 13)]
CSV = ("month,sales\n" + "".join(f"{month},{sales}\n" for month, sales in MONTHS)).encode()
TOTAL = sum(s for _, s in MONTHS)
ANALYSIS = """
import os
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

df = pd.read_csv("inputs/sales.csv")
best = df.loc[df["sales"].idxmax()]
os.makedirs("outputs", exist_ok=True)
ax = df.plot(x="month", y="sales", kind="bar", legend=False, title="Monthly sales 2024")
ax.set_ylabel("sales")
plt.tight_layout()
plt.savefig("outputs/chart.png", dpi=80)
print(f"TOTAL={df['sales'].sum()} BEST={best['month']}:{best['sales']}")
"""


def tool_names(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools") or ()}


def design() -> dict[str, Any]:
    return {
        "steps": [{"title": "Analyse and plot the sales", "tools": ["run_code"]}],
        "agents": [
            {"name": "Orchestrator", "role": "orchestrator", "tools": []},
            {
                "name": "Analyst",
                "role": "lead",
                "parent": "Orchestrator",
                "team": "analysis",
                "tools": ["run_code"],
                "description": "analyses inputs/sales.csv with pandas and plots it",
            },
        ],
        "teams": [{"name": "analysis", "lead": "Analyst", "pattern": "fan_out"}],
    }


def responder(request: dict[str, Any]) -> FakeReply:
    """Router → plan; planner → an orchestrator and an analyst with run_code; prompt
    drafts; the analyst runs the analysis once and reports what it printed; the
    orchestrator finishes with the analyst's findings."""
    tools = tool_names(request)
    messages = request["messages"]
    if "submit_router" in tools:
        return FakeReply(tool_calls=[("submit_router", {"path": "plan", "reason": "code"})])
    if "submit_planner" in tools:
        return FakeReply(tool_calls=[("submit_planner", design())])
    if "finish" not in tools:
        return FakeReply(content="Analyse the attached sales with code and plot them.")
    said = json.dumps(messages)
    if says(request, "You are Analyst"):
        ran = [m["content"] for m in messages if m["role"] == "tool" and "TOTAL=" in m["content"]]
        if not ran:
            return FakeReply(tool_calls=[("run_code", {"code": ANALYSIS})])
        found = re.search(r"TOTAL=(\d+) BEST=(\S+):(\d+)", ran[-1])
        assert found is not None, ran[-1]
        total, month, best = found.groups()
        summary = f"Sales in 2024 came to {total}; the best month was {month} ({best})."
        return FakeReply(tool_calls=[("finish", {"result": summary + " Chart: chart.png"})])
    if "Sales in 2024 came to" in said:
        found = re.search(r"Sales in 2024 came to [^.]*\.[^.]*\.", said)
        assert found is not None
        return FakeReply(tool_calls=[("finish", {"result": "Summary: " + found.group(0)})])
    return FakeReply(tool_calls=[("wait_for_messages", {})])


async def test_a_csv_in_slack_becomes_a_chart_and_a_summary_in_the_thread(real_redis) -> None:
    slack = await FakeSlackAPI().start()
    async with FakeLLMServer() as llm:
        llm.set_responder(responder)
        settings = make_settings(
            llm={"model": "openai/fake-model", "api_base": llm.base_url, "api_key_env": ""},
            planning={"reflection_rounds": 0, "library_top_k": 0},
            slack={"api_url": slack.url},
        )
        settings = celery_settings(settings, real_redis.test_prefix)
        assert probe(settings.sandbox).ok, probe(settings.sandbox).detail
        app = make_app(settings, retry_delay_s=0.05)
        publisher = CeleryScheduler(app, settings)
        svc = build_services(settings, publisher, llm=build_llm(settings), redis=real_redis)
        try:
            async with celery_worker(app), serve_bot(svc, slack) as h:
                sales = slack.host_file("sales.csv", CSV)
                mention = {
                    "type": "app_mention",
                    "text": "<@UBOT> Analyse the attached sales and plot them by month.",
                    "ts": THREAD,
                    "event_ts": THREAD,
                    "files": [sales],
                }
                assert (await h.event("EvCsv", mention)).status_code == 200
                await slack.wait_for(lambda: bool(h.cards()), 30)
                (card,) = h.cards()
                run_id = card["blocks"][-1]["elements"][0]["value"]
                assert "run_code" in json.dumps(card["blocks"]), "the card shows the code tool"
                await h.click("caramba_approve", run_id, ANA, "1700000000.000200")
                await h.runs_end(timeout_s=90)
        finally:
            await publisher.aclose()
            await slack.stop()

    run = await svc.store.get_run(run_id)
    assert run.status is RunStatus.COMPLETED, run.error
    assert [f.path for f in run.files] == ["inputs/sales.csv"]
    # The planner and the analyst were told of the file.
    note = f"inputs/sales.csv ({len(CSV)} B, text/csv)"
    planner = [r for r in llm.requests if "submit_planner" in tool_names(r)]
    assert note in planner[0]["messages"][0]["content"]
    analyst = [r["messages"] for r in llm.requests if says(r, "You are Analyst")]
    assert note in analyst[0][1]["content"], "in the analyst's first message"
    # The chart: a PNG made in the sandbox from the CSV, uploaded into the thread.
    (shared,) = slack.shared
    file_id, channel, thread, _ = shared
    assert (channel, thread, slack.filenames[file_id]) == (CHANNEL, THREAD, "chart.png")
    chart = slack.uploads[file_id]
    assert chart.startswith(b"\x89PNG\r\n\x1a\n") and len(chart) > 1000
    assert await svc.workspace.read(run_id, "outputs/chart.png") == chart
    # The summary, the thread's last message, below the chart.
    expected = f"Sales in 2024 came to {TOTAL}; the best month was 2024-11 (217)."
    last = [i for i, c in enumerate(slack.calls) if c.method == "chat.postMessage"][-1]
    assert f"Summary: {expected}" in slack.calls[last].args["text"]
    upload = [i for i, c in enumerate(slack.calls) if c.method == "files.completeUploadExternal"]
    assert upload[0] < last


def says(request: dict[str, Any], start: str) -> bool:
    return (request["messages"][0]["content"] or "").startswith(start)
