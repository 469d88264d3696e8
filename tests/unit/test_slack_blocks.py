"""Slack rendering: escaping, Block Kit limits, the relay's coalescing and what it queues,
and which failed calls the outbox tries again."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackRequestError

from bots.chat.ports import Limits, Place, StatusLine
from bots.chat.relay import ThreadRelay
from bots.slack.blocks import CANCEL, FEEDBACK_UP, proposal_blocks
from bots.slack.failures import classify
from bots.slack.render import SlackRenderer
from bots.slack.secrets import SlackSecrets
from bots.slack.text import SECTION_LIMIT, escape, split, truncate
from core.errors import MissingSecretError
from core.runs.approval import AgentCard, ProposalView
from core.types.agent import EndReason
from core.types.events import AgentCreated, AgentFinished, RunFinished, RunStarted, ToolCalled
from core.types.figures import cost
from core.types.run import RunBudget, RunStatus


def test_escape_defuses_broadcasts_and_markup() -> None:
    text = escape("<!channel> hi @here & <@U1> @Everyone <https://x|y>")
    assert "<" not in text and ">" not in text and "&amp;" in text
    assert "@here" not in text and "@Everyone" not in text and "<!channel>" not in text


def test_truncate_and_split_respect_the_limit() -> None:
    long = escape("a&b " * 2000)
    cut = truncate(long, pointer="see the file")
    assert len(cut) <= SECTION_LIMIT and cut.endswith("see the file)")
    assert not cut.split("…")[0].endswith(("&", "&a", "&am", "&amp"))
    pieces = split("line\n" * 2000)
    assert all(len(p) <= SECTION_LIMIT for p in pieces) and len(pieces) == 4


def _view(agents: int, task: str) -> ProposalView:
    return ProposalView(
        run_id="run_1",
        task=task,
        requested_by="UANA",
        status=RunStatus.PROPOSED,
        steps=("Find <!everyone>", "Compare"),
        agents=tuple(
            AgentCard(
                id=f"a{i}",
                name=f"Agent {i}",
                role="member",
                parent="Lead",
                model="openai/x",
                tools=("calculate",),
                prompt_excerpt="You search. " * 40,
                max_tokens=1000,
                max_cost_usd=0.5,
            )
            for i in range(agents)
        ),
        patterns=("Lead: fan_out",),
        reused=(),
        budget=RunBudget(tokens=100_000, cost_usd=1.0, wall_clock_s=600),
        expires_at=None,
        decided_by=None,
    )


def test_the_card_fits_block_kit_limits() -> None:
    blocks = [b.to_dict() for b in proposal_blocks(_view(80, "x" * 10_000 + " @channel"))]
    assert len(blocks) <= 50
    for b in blocks:
        if b["type"] == "section":
            assert len(b["text"]["text"]) <= SECTION_LIMIT
    text = json.dumps(blocks)
    assert "more agents" in text and "truncated" in text and "<!everyone>" not in text
    assert blocks[-1]["elements"][0]["value"] == "run_1"


def test_missing_secrets_name_the_variable(monkeypatch) -> None:
    monkeypatch.delenv("SLACK_BOT_TOKEN", raising=False)
    try:
        SlackSecrets.from_env()
    except MissingSecretError as exc:
        assert exc.variable == "SLACK_BOT_TOKEN"
    else:
        raise AssertionError("expected MissingSecretError")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.delenv("SLACK_SIGNING_SECRET", raising=False)
    try:
        SlackSecrets.from_env()
    except MissingSecretError as exc:
        assert exc.variable == "SLACK_SIGNING_SECRET"
    else:
        raise AssertionError("expected MissingSecretError")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1")  # Socket Mode needs no signing secret
    assert SlackSecrets.from_env().app_token == "xapp-1"


async def test_the_relay_coalesces_status_and_queues_in_order() -> None:
    relay = ThreadRelay(Place("C1", "1.1"), "r", SlackRenderer(), Limits(message_chars=3000))
    relay.show_status(force=True)
    assert relay.take() == ([], None), "no status message before the run starts"
    await relay.on_event(RunStarted(run_id="r", task="t"))
    (status,), content = relay.take()
    assert status.kind == "status" and content is not None
    assert CANCEL in json.dumps(content.payload), "Cancel while it runs"
    for seq in range(30):
        await relay.on_event(
            ToolCalled(
                run_id="r",
                agent_id="a",
                seq=seq,
                tool="calculate",
                arguments="",
                ok=True,
                result="1",
            )
        )
        relay.show_status(interval_s=1.0)
    assert relay.take() == ([], None), "coalesced: at most one status a second"

    for name in "BC":
        await relay.on_event(
            AgentCreated(run_id="r", agent_id=name.lower(), name=name, role="x", model="m")
        )
    await relay.on_event(
        AgentFinished(run_id="r", agent_id="b", reason=EndReason.FINISHED, result="done")
    )
    await relay.on_event(RunFinished(run_id="r", status=RunStatus.COMPLETED, result="y" * 7000))
    relay.show_status(force=True)
    entries, content = relay.take()
    assert [(e.what, len(e.text)) for e in entries] == [
        ("milestone", len("*B* finished:\ndone")),
        ("result", 3000),
        ("result", 3000),
        ("result", 1000),
    ]
    assert FEEDBACK_UP in json.dumps(entries[-1].payload), "buttons on the last piece"
    assert content is not None and "Run completed" in content.text
    assert "tool calls 30" in content.text and CANCEL not in json.dumps(content.payload)

    relay.quiet = True  # replaying what an earlier process queued: nothing again
    await relay.on_event(RunFinished(run_id="r", status=RunStatus.COMPLETED, result="z"))
    assert relay.take()[0] == []


class _Response:
    def __init__(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        self.status_code, self.data, self.headers = status, data, headers or {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default) if isinstance(self.data, dict) else default


def _api_error(status: int, data: Any, **headers: str) -> SlackApiError:
    return SlackApiError("failed", _Response(status, data, headers))


def test_which_failures_the_outbox_tries_again() -> None:
    limited = classify(
        _api_error(429, {"ok": False, "error": "ratelimited"}, **{"Retry-After": "7"})
    )
    assert limited.retry and limited.wait_s == 7.0, "Retry-After is honoured"
    assert classify(_api_error(503, "<html>503</html>")).retry
    assert classify(_api_error(200, {"ok": False, "error": "internal_error"})).retry
    refused = [
        classify(_api_error(200, {"ok": False, "error": e}))
        for e in ("invalid_blocks", "channel_not_found", "fatal_error")
    ]
    assert not any(f.retry for f in refused), "Slack refused the call itself"
    down = classify(aiohttp.ClientConnectionError("Connection refused"))
    assert down.retry and not down.answered, "unreachable: no answer at all"
    assert classify(TimeoutError()).retry
    assert classify(SlackRequestError("Failed to upload a file (status: 500)")).answered
    assert not classify(TypeError("a bug")).retry


def test_the_manifest_grants_what_the_bot_calls() -> None:
    """Each Web API method the bot calls needs its scope in manifest.yml (one paste)."""
    from core.config import PROJECT_ROOT

    listed = {
        line.strip()[2:]
        for line in (PROJECT_ROOT / "manifest.yml").read_text().splitlines()
        if line.strip().startswith("- ")
    }
    needed = {
        "app_mentions:read",  # app_mention events
        "chat:write",  # chat.postMessage / update / postEphemeral
        "reactions:write",  # reactions.add
        "files:write",  # files.getUploadURLExternal / completeUploadExternal
        "assistant:write",  # assistant.threads.setStatus
        "channels:history",  # thread replies (message.channels)
        "app_mention",
        "message.channels",
    }
    assert needed <= listed, needed - listed


def test_costs_and_tokens_read_as_people_write_them() -> None:
    assert [cost(c) for c in (0, 0.0006, 0.42, 3.1, 1204)] == [
        "$0",
        "under $0.01",
        "$0.42",
        "$3.10",
        "$1,204.00",
    ]
    ended = StatusLine(
        run_id="r", phase="ended", outcome="completed", tokens=12_345, cost_usd=0.0006
    )
    assert (
        SlackRenderer()
        .status_line(ended)
        .startswith("Run completed · 12,345 tokens · under $0.01 · ")
    )
    card = json.dumps([b.to_dict() for b in proposal_blocks(_view(1, "t"))], ensure_ascii=False)
    assert "Budget: 100,000 tokens · $1.00" in card and "1,000 tokens, $0.50" in card
