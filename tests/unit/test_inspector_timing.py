"""The inspector's times from a run's events: spans of turns, model calls and tool calls
(measured, or estimated from events stored before they carried a start), the run's
duration, the waterfall's bars on one axis, and durations as people read them."""

from __future__ import annotations

import pytest

from bots.web.timing import Timings, seconds, timings
from bots.web.waterfall import MIN_WIDTH, step_for, ticks, waterfall
from core.types.agent import EndReason
from core.types.events import (
    RUN_EVENT,
    AgentCreated,
    AgentFinished,
    FormAsked,
    LLMCalled,
    QuestionAsked,
    QuestionClosed,
    RunEvent,
    RunFinished,
    RunStarted,
    ToolCalled,
    TurnStarted,
)
from core.types.run import RunStatus

T0 = 1_000.0


def llm(agent: str, seq: int, at: float, started: float | None, took: float | None) -> LLMCalled:
    return LLMCalled(
        run_id="r",
        agent_id=agent,
        seq=seq,
        at=at,
        model="m",
        prompt_tokens=10,
        completion_tokens=5,
        cost_usd=0.0,
        agent_tokens=15,
        agent_cost_usd=0.0,
        started_at=started,
        duration_s=took,
    )


def tool(agent: str, seq: int, name: str, at: float, started=None, took=None, ok=True):
    return ToolCalled(
        run_id="r",
        agent_id=agent,
        seq=seq,
        at=at,
        tool=name,
        arguments='{"x": 1}',
        ok=ok,
        result="done",
        started_at=started,
        duration_s=took,
    )


def run_events() -> list[RunEvent]:
    """Two agents over ten seconds: A's turn 0 (model 2 s, a tool 1 s), B's turn 0 (model
    1 s, a failed tool 0.5 s), A's turn 1 (model 1 s)."""
    return [
        RunStarted(run_id="r", at=T0, task="t"),
        AgentCreated(run_id="r", agent_id="A", at=T0, name="Alpha", role="lead", model="m"),
        AgentCreated(run_id="r", agent_id="B", at=T0 + 1, name="Beta", role="member", model="m"),
        TurnStarted(run_id="r", agent_id="A", seq=0, at=T0 + 0.5),
        llm("A", 0, T0 + 2.6, T0 + 0.5, 2.0),
        tool("A", 0, "search", T0 + 3.7, T0 + 2.6, 1.0),
        TurnStarted(run_id="r", agent_id="B", seq=0, at=T0 + 4),
        llm("B", 0, T0 + 5, T0 + 4, 1.0),
        tool("B", 0, "write_file", T0 + 5.5, T0 + 5, 0.5, ok=False),
        AgentFinished(run_id="r", agent_id="B", at=T0 + 6, reason=EndReason.FINISHED),
        TurnStarted(run_id="r", agent_id="A", seq=1, at=T0 + 8),
        llm("A", 1, T0 + 9, T0 + 8, 1.0),
        AgentFinished(run_id="r", agent_id="A", at=T0 + 9.5, reason=EndReason.FINISHED),
        RunFinished(run_id="r", agent_id="A", at=T0 + 10, status=RunStatus.COMPLETED),
    ]


def test_spans_of_turns_model_and_tool_calls() -> None:
    t = timings(run_events(), now=T0 + 99)
    assert t.start == T0 and t.end == T0 + 10 and t.finished and t.seconds == 10
    turn = t.turn("A", 0)
    assert turn is not None and (turn.start, turn.end) == (T0 + 0.5, T0 + 3.6)
    assert [s.seconds for s in t.calls("A", 0, "model")] == [2.0]
    assert [s.seconds for s in t.calls("A", 0, "tool")] == pytest.approx([1.0])
    b_turn = t.turn("B", 0)
    assert b_turn is not None and b_turn.seconds == pytest.approx(1.5) and not b_turn.ok
    [failed] = t.calls("B", 0, "tool")
    assert not failed.ok and failed.label == "write_file"
    [life_b] = t.of("B", "life")
    assert (life_b.start, life_b.end) == (T0 + 1, T0 + 6)
    assert [s.seq for s in t.of("A", "turn")] == [0, 1]


def test_a_running_run_lasts_until_now() -> None:
    events = run_events()[:-3]
    t = timings(events, now=T0 + 20)
    assert not t.finished and t.end == T0 + 20 and t.seconds == 20
    [life_a] = t.of("A", "life")
    assert life_a.end == T0 + 20  # still alive


def test_events_stored_before_timings_still_read() -> None:
    """Old events (no started_at/duration_s, as stored JSON) read; the model call is
    estimated from its turn's start, the tool call is an instant."""
    old_llm = RUN_EVENT.validate_json(
        '{"kind":"llm_called","run_id":"r","agent_id":"A","at":1003.0,"seq":0,"model":"m",'
        '"prompt_tokens":1,"completion_tokens":1,"cost_usd":0,"agent_tokens":2,'
        '"agent_cost_usd":0}'
    )
    old_tool = RUN_EVENT.validate_json(
        '{"kind":"tool_called","run_id":"r","agent_id":"A","at":1004.0,"seq":0,"tool":"x",'
        '"arguments":"{}","ok":true,"result":"r"}'
    )
    assert isinstance(old_tool, ToolCalled) and old_tool.duration_s is None
    events = [
        RunStarted(run_id="r", at=T0, task="t"),
        TurnStarted(run_id="r", agent_id="A", seq=0, at=T0 + 1),
        old_llm,
        old_tool,
    ]
    t = timings(events, now=T0 + 5)
    [model] = t.calls("A", 0, "model")
    assert (model.start, model.end, model.measured) == (T0 + 1, T0 + 3, False)
    [call] = t.calls("A", 0, "tool")
    assert call.seconds == 0 and not call.measured
    turn = t.turn("A", 0)
    assert turn is not None and turn.end == T0 + 4


def test_no_run_start_no_waterfall() -> None:
    assert timings([], now=T0).seconds is None
    assert waterfall(Timings(), [("A", "Alpha", 0)]) is None


def test_waterfall_bars_are_proportional_on_one_axis() -> None:
    t = timings(run_events(), now=T0 + 99)
    w = waterfall(t, [("A", "Alpha", 0), ("B", "Beta", 1)])
    assert w is not None and w.seconds == 10
    alpha, beta = w.lanes
    assert (alpha.name, beta.depth, alpha.turns) == ("Alpha", 1, 2)
    assert alpha.busy_s == pytest.approx(3.1 + 1.0)
    kinds = [b.kind for b in alpha.bars]
    assert kinds == ["life", "turn", "turn", "model", "model", "tool"]  # drawn in this order
    model = next(b for b in alpha.bars if b.kind == "model")
    assert (model.x, model.width) == pytest.approx((5.0, 20.0))  # 0.5 s in, 2 s of 10
    b_tool = next(b for b in beta.bars if b.kind == "tool")
    assert (b_tool.x, b_tool.width, b_tool.ok) == pytest.approx((50.0, 5.0, False))
    assert "write_file" in b_tool.title and "failed" in b_tool.title
    for lane in w.lanes:
        for bar in lane.bars:
            assert 0 <= bar.x <= 100 and bar.x + bar.width <= 100 + 1e-9
            # Widths are in proportion to durations (down to the narrowest drawn).
            assert bar.width == pytest.approx(max(MIN_WIDTH, bar.seconds / w.seconds * 100))


def test_a_call_too_short_to_see_is_drawn_narrow_but_says_how_long() -> None:
    events = [
        *run_events()[:4],
        tool("A", 0, "calculate", T0 + 1, T0 + 0.6, 0.0004),
        RunFinished(run_id="r", at=T0 + 10, status=RunStatus.COMPLETED),
    ]
    w = waterfall(timings(events, now=T0), [("A", "Alpha", 0)])
    assert w is not None
    [bar] = [b for b in w.lanes[0].bars if b.kind == "tool"]
    assert bar.width == MIN_WIDTH and bar.seconds == pytest.approx(0.0004)
    assert "<1 ms" in bar.title


def test_ticks_are_round() -> None:
    assert step_for(10) == 2 and step_for(2.27) == 0.5 and step_for(0.04) == 0.01
    assert step_for(600) == 100 and step_for(3600) == 1000
    marks = ticks(10)
    assert [m.label for m in marks] == ["0", "2.00 s", "4.00 s", "6.00 s", "8.00 s", "10.0 s"]
    assert [m.x for m in marks] == pytest.approx([0, 20, 40, 60, 80, 100])


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (None, "—"),
        (0.0002, "<1 ms"),
        (0.2304, "230 ms"),
        (2.4, "2.40 s"),
        (12.34, "12.3 s"),
        (185, "3 min 05 s"),
        (3720, "1 h 02 min"),
    ],
)
def test_durations_as_people_read_them(value: float | None, said: str) -> None:
    assert seconds(value) == said


def test_waits_for_people_are_spans_of_their_agent() -> None:
    asked = QuestionAsked(
        run_id="r", agent_id="A", at=T0 + 1, question_id="q1", question="?", timeout_s=60
    )
    closed = QuestionClosed(run_id="r", agent_id="A", at=T0 + 4, question_id="q1", answer="y")
    form = FormAsked(
        run_id="r", agent_id="B", at=T0 + 2, form_id="f1", server="s", message="m", timeout_s=9
    )
    events = [RunStarted(run_id="r", at=T0, task="t"), asked, form, closed]
    t = timings(events, now=T0 + 10)
    [answer] = t.of("A", "wait")
    assert (answer.start, answer.end, answer.label) == (T0 + 1, T0 + 4, "an answer")
    [open_form] = t.of("B", "wait")
    assert open_form.end == T0 + 10  # still waiting
    w = waterfall(t, [("A", "Alpha", 0)])
    assert w is not None and "waited for an answer 3.00 s" in w.lanes[0].bars[0].title
