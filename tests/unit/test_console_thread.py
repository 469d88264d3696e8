"""The console as a chat-layer adapter (bots/console/thread.py, render.py, transport.py,
live.py): every intention rendered and drawn, nothing from people or agents acting on the
terminal, the status message as the live status line, other updates printed again, a
refused message replaced by its fallback, and a run's thread and trace in the order of
its events."""

from __future__ import annotations

import io
import typing
from dataclasses import replace

import pytest
from rich.console import Console

from bots.chat.intentions import Form, Paused, SpendAsk, ToolApproval
from bots.chat.outbox import Entry
from bots.chat.ports import (
    Artifacts,
    Card,
    ChatPost,
    Intention,
    Milestone,
    Note,
    Notify,
    OutFile,
    Place,
    Question,
    Rendered,
    Result,
    StatusLine,
    TextFile,
)
from bots.console.live import LiveStatus
from bots.console.render import ConsoleRenderer
from bots.console.thread import ConsoleThread, Delivery, console_adapter, deliver
from bots.console.transport import ConsoleTransport, drawn
from core.llm.scripted import ScriptedModel
from core.runs import control
from core.runs.approval import AgentCard, ProposalView
from core.types import AgentSpec
from core.types.agent import EndReason
from core.types.events import (
    AgentCreated,
    AgentFinished,
    ErrorRaised,
    QuestionAsked,
    RunEvent,
    RunFinished,
    RunStarted,
    RunStatusChanged,
    ToolCalled,
)
from core.types.run import RunBudget, RunStatus
from tests.conftest import make_settings

R = "run_1"
ESC = "\x1b]0;pwned\x07\x1b[2J\x9b31m"
PLACE = Place("terminal", R)


def _view(text: str = "") -> ProposalView:
    agent = AgentCard.model_validate(
        {
            "id": "agt_1",
            "name": f"Ana{text}",
            "role": "orchestrator",
            "parent": None,
            "model": "openai/x",
            "tools": ("calculate",),
            "prompt_excerpt": f"Add it up{text}",
            "max_tokens": 20000,
            "max_cost_usd": None,
        }
    )
    return ProposalView(
        run_id=R,
        task=f"Budget it{text}",
        requested_by=f"console{text}",
        status=RunStatus.PROPOSED,
        steps=(f"Add{text}",),
        agents=(agent,),
        patterns=(),
        reused=(),
        budget=RunBudget(tokens=120000, cost_usd=0.5, wall_clock_s=1800),
        expires_at=None,
        decided_by=None,
    )


def _samples(text: str = "") -> list[Intention]:
    return [
        StatusLine(run_id=R, phase="running", agents=2, who=f"Ana{text}", doing="used", tool="x"),
        Card(_view(text)),
        Milestone(agent=f"Ana{text}", reason="finished", text=f"Half of it{text}"),
        Question(agent=f"Ana{text}", text=f"Which city{text}?"),
        Note(text=f"a note{text}", level="warning"),
        Notify(agent=f"Ana{text}", who=f"@bo{text}", text=f"look{text}"),
        ChatPost(agent=f"Ana{text}", text=f"**interim**{text}"),
        Result(run_id=R, status=RunStatus.COMPLETED, text=f"# Done{text}", tokens=12),
        Artifacts(
            run_id=R, files=(OutFile(path="outputs/a.md", filename="a.md", title="a", size=3),)
        ),
        Paused(
            run_id=R,
            what="cost",
            detail=f"over{text}",
            cost_usd=2.0,
            limit_cost_usd=1.5,
            extend_cost_usd=2.0,
        ),
        ToolApproval(
            run_id=R,
            approval_id="a-1",
            agent=f"Ana{text}",
            tool="files__delete",
            purpose=f"Delete a file{text}.",
            arguments=f'{{"path": "old{text}"}}',
            reason=f"Cleaning up{text}",
            risks=("may delete or overwrite things",),
        ),
        SpendAsk(
            run_id=R,
            text=f"This request would take #ops{text} over its budget.",
            place_name=f"#ops{text}",
            owner_name="Bo",
            spent_usd=9.5,
            month_usd=10.0,
        ),
        # Asked field by field by the run's console (bots/console/forms.py), not drawn.
        Form(run_id=R, form_id="form_1", agent=f"Ana{text}", server="shop", message=f"Who{text}?"),
    ]


def _shown(intentions: list[Intention]) -> str:
    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=False)
    for intention in intentions:
        for message in ConsoleRenderer().render(intention):
            console.print(drawn(message.text, message.payload))
    return out.getvalue()


def test_every_intention_kind_is_rendered_and_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOGNAME", "ana")
    kinds = {cls.__name__ for cls in typing.get_args(Intention)}
    assert {type(i).__name__ for i in _samples()} == kinds
    text = _shown(_samples())
    for said in (
        "Proposal for ana",  # the requester by name
        "└ Half of it",
        "? Ana asks: Which city?",
        "! a note",
        "🔔 Ana → @bo: look",
        "Ana posted",
        "interim",
        "completed · 12 tokens · $0",
        "Files the agents made (1):",
        "⏸ paused: the run spent $2.00 of $1.50 — extend by $2.00, or stop here",
        "🔐 Ana wants to use files__delete: Delete a file. (may delete or overwrite things)",
        "Why: Cleaning up",
        "This request would take #ops over its budget.",
    ):
        assert said in text, said
    status = ConsoleRenderer().render(_samples()[0])[0]
    assert status.text == "Ana used x · agents 0/2 done · tool calls 0"
    assert status.payload == {"kind": "status", "running": False}


def test_no_control_byte_in_an_intention_reaches_the_terminal() -> None:
    text = _shown(_samples(ESC))
    assert not set(text) & {"\x1b", "\x07", "\x9b"}, repr(text)
    assert "Which city\\x1b]0;pwned\\x07" in text and "Budget it\\x1b" in text


async def test_the_status_message_is_the_live_line_at_a_terminal_only() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    live = LiveStatus(console, "c + Enter: cancel")
    transport = ConsoleTransport(console, live)
    message_id = await transport.post(PLACE, "Starting…", {"kind": "status", "running": True})
    assert live.text == "Starting…" and live._status is not None
    await transport.update(PLACE, message_id, "Ana used x", {"kind": "status", "running": True})
    assert live.text == "Ana used x" and "c + Enter: cancel" in live._line()
    live.hold()
    assert live._status is None  # the person is asked something
    live.hold(False)
    assert live._status is not None
    await transport.update(PLACE, message_id, "Run completed", {"kind": "status", "running": False})
    assert live._status is None and live.text == ""

    piped = Console(file=io.StringIO(), force_terminal=False)
    quiet = LiveStatus(piped)
    quiet.show("Starting…")
    assert quiet._status is None and piped.file.getvalue() == ""  # type: ignore[attr-defined]


async def test_another_message_updated_is_printed_again_under_a_changed_line() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=False)
    transport = ConsoleTransport(console, LiveStatus(console))
    message_id = await transport.post(PLACE, "first", None)
    await transport.update(PLACE, message_id, "second", None)
    assert out.getvalue() == "first\n  ↻ changed:\nsecond\n"
    assert not transport.classify(OSError("closed")).retry


class _Refusing(ConsoleTransport):
    async def upload(self, place: Place, file: TextFile) -> None:
        raise OSError("the terminal went away")


async def test_a_refused_message_is_replaced_by_its_fallback_and_a_delivered_one_followed() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=False)
    adapter = console_adapter(ConsoleTransport(console, LiveStatus(console)))
    file = TextFile(content="whole", filename="r.md", title="r.md")
    fallback = Entry.post(R, "instead", Rendered("the text instead"))
    preview = Entry.post(R, "then", Rendered("the preview"))
    upload = Entry(run=R, what="file", kind="upload", file=file, then=(preview,))
    await deliver(adapter, PLACE, [upload], Delivery())
    assert "whole" in out.getvalue() and out.getvalue().index("whole") < out.getvalue().index(
        "the preview"
    )

    refusing = replace(adapter, transport=_Refusing(console, LiveStatus(console)))
    out.seek(0)
    out.truncate()
    refused = upload.model_copy(update={"instead": (fallback,)})
    await deliver(refusing, PLACE, [refused], Delivery())
    assert out.getvalue() == "the text instead\n"


def _run_events() -> list[RunEvent]:
    b = "agt_2"
    return [
        RunStarted(run_id=R, task="Budget it"),
        AgentCreated(run_id=R, agent_id="agt_1", name="Ana", role="orchestrator", model="m"),
        AgentCreated(run_id=R, agent_id=b, name="Bo", role="member", model="m", parent_id="agt_1"),
        ToolCalled(
            run_id=R, agent_id=b, seq=0, tool="calculate", arguments="{}", ok=True, result="3"
        ),
        QuestionAsked(run_id=R, agent_id=b, question_id="q", question="Which city?", timeout_s=9),
        AgentFinished(run_id=R, agent_id=b, reason=EndReason.FINISHED, result="Porto: €12"),
        ErrorRaised(run_id=R, agent_id="agt_1", message="boom", hint="fix it"),
        RunFinished(run_id=R, status=RunStatus.COMPLETED, result="All €12.", tokens=40),
    ]


async def test_a_runs_thread_and_trace_come_in_the_order_of_its_events() -> None:
    out = io.StringIO()
    thread = ConsoleThread(Console(file=out, width=120, force_terminal=False))
    for event in _run_events():
        await thread(event)
    text = out.getvalue()
    order = [
        "▶ run run_1 — Budget it",
        "+ Ana (orchestrator, m)",
        "✓ Bo calculate({})",
        "? Bo asks: Which city?",
        "■ Bo finished",
        "└ Porto: €12",  # the milestone, under its agent's end
        "! boom",
        "→ fix it",  # the error's hint, under the thread's note
        "completed · 40 tokens",
        "All €12.",
    ]
    places = [text.index(said) for said in order]
    assert places == sorted(places), text
    assert thread.tools_called == 1
    assert thread.delivery.posted and thread.live.text == ""  # ended: the live line is gone


async def test_the_card_shown_to_decide_is_not_shown_again_when_the_run_is_followed(
    make_services,
) -> None:
    svc = make_services(make_settings(), ScriptedModel(), start=False)
    spec = AgentSpec(name="Ana", role="orchestrator", tools=("finish",))
    run_id = await control.propose_run(svc, "Budget it", spec, requested_by="console")
    out = io.StringIO()
    thread = ConsoleThread(Console(file=out, width=120, force_terminal=False))
    thread.attach(svc)
    await thread(RunStatusChanged(run_id=run_id, status=RunStatus.PROPOSED, by="console"))
    assert "Proposal" not in out.getvalue()


@pytest.mark.parametrize("level", ["info", "warning", "error"])
def test_notes_say_their_level(level: typing.Literal["info", "warning", "error"]) -> None:
    text = _shown([Note(text="said", level=level)])
    assert text.strip() == {"info": "said", "warning": "! said", "error": "✗ said"}[level]
