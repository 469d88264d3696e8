"""The console shows every kind of run event, through its trace or the chat layer's
relay (a new kind without a case fails here)."""

from __future__ import annotations

import io
import typing

from rich.console import Console

from bots.console.text import escape, printable
from bots.console.thread import ConsoleThread
from core.types.agent import EndReason
from core.types.approvals import ApprovalDecision, ApprovalRequest
from core.types.events import (
    AgentCreated,
    AgentFinished,
    ApprovalAsked,
    ApprovalDecided,
    BudgetReached,
    ChatPosted,
    ErrorRaised,
    FormAsked,
    FormClosed,
    LLMCalled,
    MessageSent,
    Notified,
    QuestionAsked,
    QuestionClosed,
    RunEvent,
    RunFinished,
    RunStarted,
    RunStatusChanged,
    SpendApprovalAsked,
    SpendApprovalDecided,
    SpendWarned,
    ToolCalled,
    ToolProgress,
    TurnStarted,
)
from core.types.forms import FormField
from core.types.run import RunStatus

R, A = "run_1", "agt_1"
REQUEST = ApprovalRequest(
    id="a-1",
    run_id=R,
    agent_id=A,
    agent_name="Ana [bot]",
    call_id="c1",
    tool="files__delete",
    purpose="Delete a file.",
    arguments='{"path": "old"}',
    asked_at=0,
    deadline=60,
)
SAMPLES: list[RunEvent] = [
    RunStarted(run_id=R, task="t"),
    AgentCreated(run_id=R, agent_id=A, name="Ana [bot]", role="solo", model="m"),
    TurnStarted(run_id=R, agent_id=A, seq=0),
    LLMCalled(
        run_id=R,
        agent_id=A,
        seq=0,
        model="m",
        prompt_tokens=1,
        completion_tokens=1,
        cost_usd=0,
        agent_tokens=2,
        agent_cost_usd=0,
        text="thinking",
    ),
    ToolCalled(run_id=R, agent_id=A, seq=0, tool="calculate", arguments="{}", ok=True, result="2"),
    ToolProgress(run_id=R, agent_id=A, tool="srv__slow", progress=2, total=5, message="step 2"),
    MessageSent(run_id=R, agent_id=A, message_id="m", recipient="agt_2", preview="hi"),
    ChatPosted(run_id=R, agent_id=A, text="**interim**", filename="r.md"),
    Notified(run_id=R, agent_id=A, who="@ana", text="look"),
    QuestionAsked(run_id=R, agent_id=A, question_id="q", question="which?", timeout_s=60),
    QuestionClosed(run_id=R, agent_id=A, question_id="q", timed_out=True),
    FormAsked(
        run_id=R,
        agent_id=A,
        form_id="f",
        server="shop",
        message="Your size?",
        fields=(FormField(name="size", label="Size", kind="text", required=True),),
        timeout_s=60,
    ),
    FormClosed(run_id=R, agent_id=A, form_id="f", action="accept", by="U1"),
    BudgetReached(
        run_id=R,
        what="tokens",
        detail="the run used 10 of 10 tokens",
        tokens=10,
        cost_usd=0,
        extend_tokens=5,
        extend_cost_usd=1,
        extend_wall_clock_s=60,
    ),
    RunStatusChanged(run_id=R, status=RunStatus.WAITING_HUMAN, by="caramba"),
    ApprovalAsked(run_id=R, agent_id=A, request=REQUEST),
    ApprovalDecided(
        run_id=R,
        agent_id=A,
        approval_id="a-1",
        tool="files__delete",
        decision=ApprovalDecision(choice="deny", by="U1", name="Bo", note="keep it"),
    ),
    ErrorRaised(run_id=R, agent_id=A, message="boom", hint="fix it"),
    AgentFinished(run_id=R, agent_id=A, reason=EndReason.FINISHED, result="done"),
    SpendWarned(run_id=R, place_name="#ops", month="2026-11", spent_usd=8.5, month_usd=10),
    SpendApprovalAsked(
        run_id=R, place_name="#ops", month="2026-11", spent_usd=9.9, month_usd=10, owner_name="Ana"
    ),
    SpendApprovalDecided(run_id=R, approved=True, by="U1", by_name="Ana"),
    RunFinished(run_id=R, status=RunStatus.COMPLETED, result="done"),
]


async def test_every_event_kind_is_printed() -> None:
    kinds = {
        cls.model_fields["kind"].default for cls in typing.get_args(typing.get_args(RunEvent)[0])
    }
    assert {e.kind for e in SAMPLES} == kinds
    out = io.StringIO()
    thread = ConsoleThread(Console(file=out, width=100), verbose=True)
    for event in SAMPLES:
        await thread(event)
    text = out.getvalue()
    assert "Ana [bot]" in text and "which?" in text and "paused" in text and "interim" in text
    assert "files__delete: Denied by Bo: keep it" in text
    assert "#ops has spent $8.50" in text and "waits for Ana" in text
    assert "form accept by" in text  # the form itself is asked by the session (forms.py)


def test_control_characters_are_written_out_and_newlines_and_tabs_kept() -> None:
    assert printable("a\x1b[31mred\x1b[0m") == "a\\x1b[31mred\\x1b[0m"
    assert printable("bell\x07 del\x7f csi\x9b nul\x00") == "bell\\x07 del\\x7f csi\\x9b nul\\x00"
    assert printable("line\r\nnext\rover\ttab\n") == "line\nnext\\rover\ttab\n"
    assert printable("abc\u202edcba") == "abc\\u202edcba"  # a bidi override
    assert printable("naïve € 🙂") == "naïve € 🙂"
    assert escape("[bold]\x1b") == "\\[bold]\\x1b"


async def test_no_control_byte_from_people_or_agents_reaches_the_terminal() -> None:
    """ESC in the task, names, tool output, results and errors: printed as text, never as
    the byte a terminal acts on."""
    esc = "\x1b]0;pwned\x07\x1b[2J\x9b31m"
    out = io.StringIO()
    thread = ConsoleThread(Console(file=out, width=100, force_terminal=False), verbose=True)
    events: list[RunEvent] = [
        RunStarted(run_id=R, task=f"task {esc}"),
        AgentCreated(run_id=R, agent_id=A, name=f"Ana{esc}", role=f"r{esc}", model=f"m{esc}"),
        ToolCalled(run_id=R, agent_id=A, seq=0, tool=f"t{esc}", arguments=esc, ok=True, result=esc),
        MessageSent(run_id=R, agent_id=A, message_id="m", recipient=esc, preview=esc),
        ChatPosted(run_id=R, agent_id=A, text=f"**{esc}**", filename=f"r{esc}.md"),
        QuestionAsked(run_id=R, agent_id=A, question_id="q", question=esc, timeout_s=60),
        ErrorRaised(run_id=R, agent_id=A, message=esc, hint=esc),
        RunFinished(run_id=R, status=RunStatus.COMPLETED, result=f"# {esc}"),
        RunFinished(run_id=R, status=RunStatus.FAILED, error=f"failed {esc}"),
    ]
    for event in events:
        await thread(event)
    text = out.getvalue()
    assert not set(text) & {"\x1b", "\x07", "\x9b"}, repr(text)
    assert "task \\x1b]0;pwned\\x07\\x1b[2J\\x9b31m" in text
    assert "Ana\\x1b" in text and "failed \\x1b" in text
