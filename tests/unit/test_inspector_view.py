"""The inspector's rows and texts: an agent's turns matched to their own events (a call
settled after a person's approval included), every tool call in the timeline with the
agents it is about, the filters, and arguments pretty-printed (escaped by the page)."""

from __future__ import annotations

import json

from bots.web.pretty import arguments, headline, long, pretty
from bots.web.runs import ran_for
from bots.web.shown import Shown, category
from bots.web.timeline import timeline_line
from bots.web.timing import timings
from bots.web.turns import turns
from core.types import AgentSpec
from core.types.agent import AgentState
from core.types.chat import ChatMessage, ToolCall
from core.types.events import LLMCalled, MessageSent, ToolCalled, TurnStarted
from core.types.run import RunState, RunStatus, Transition

T0 = 2_000.0


def said(seq: int, at: float) -> LLMCalled:
    return LLMCalled(
        run_id="r",
        agent_id="A",
        seq=seq,
        at=at,
        model="m",
        prompt_tokens=3,
        completion_tokens=4,
        cost_usd=0.01,
        agent_tokens=7,
        agent_cost_usd=0.01,
        started_at=at - 1,
        duration_s=1.0,
    )


def ran(seq: int, name: str, args: str, ok: bool, started: float, took: float) -> ToolCalled:
    return ToolCalled(
        run_id="r",
        agent_id="A",
        seq=seq,
        tool=name,
        arguments=args,
        ok=ok,
        result="r",
        at=started + took,
        started_at=started,
        duration_s=took,
    )


def test_turns_match_calls_in_their_own_turn_and_settled_approvals() -> None:
    """Turn 0 calls write_file (held for approval) and search; turn 1 runs the approved
    write_file before its model call and calls write_file again: every call gets its
    own outcome and time, none is skipped or shifted."""
    write = '{"path": "a.md"}'
    thread = [
        ChatMessage(role="system", content="sys"),
        ChatMessage(role="user", content="task"),
        ChatMessage(
            role="assistant",
            tool_calls=[
                ToolCall(id="c1", name="write_file", arguments=write),
                ToolCall(id="c2", name="search", arguments='{"q": "x"}'),
            ],
        ),
        ChatMessage(role="tool", tool_call_id="c1", content="written"),
        ChatMessage(role="tool", tool_call_id="c2", content="found"),
        ChatMessage(role="user", content="approved"),
        ChatMessage(
            role="assistant",
            tool_calls=[ToolCall(id="c3", name="write_file", arguments='{"path": "b.md"}')],
        ),
        ChatMessage(role="tool", tool_call_id="c3", content="failed"),
    ]
    state = AgentState(spec=AgentSpec(id="A", name="Alpha", role="solo"), run_id="r", thread=thread)
    events = [
        TurnStarted(run_id="r", agent_id="A", seq=0, at=T0),
        said(0, T0 + 1),
        ran(0, "write_file", write, True, T0 + 1, 0.0),  # the hold note
        ran(0, "search", '{"q": "x"}', True, T0 + 1, 0.25),
        TurnStarted(run_id="r", agent_id="A", seq=1, at=T0 + 10),
        said(1, T0 + 12),
        ran(1, "write_file", '{"path": "b.md"}', False, T0 + 12, 0.125),
        # Approved: ran before the model call, saved after the turn's own calls.
        ran(1, "write_file", "{masked}", True, T0 + 10, 0.5),
    ]
    llms = [e for e in events if isinstance(e, LLMCalled)]
    tools = [e for e in events if isinstance(e, ToolCalled)]
    first, second = turns(state, llms, tools, timings(events, now=T0 + 20))
    assert [c.name for c in first.calls] == ["write_file", "search"]
    assert first.calls[0].seconds == 0.5 and first.calls[0].ok  # settled by turn 1's event
    assert first.calls[1].seconds == 0.25 and first.calls[1].result == "found"
    assert second.calls[0].ok is False and second.calls[0].seconds == 0.125
    assert (first.seq, first.model_s, first.seconds) == (0, 1.0, 1.25)
    assert second.received == ["approved"] and second.tokens == 7


def test_every_tool_call_is_a_timeline_row_about_its_agent() -> None:
    names = {"A": "Alpha <b>", "B": "Beta"}
    event = ran(3, "calculate", '{"expression": "1+1"}', True, T0, 0.002)
    row = timeline_line("1-0", event, names, {})
    assert row is not None and row.kind == "tool_called" and row.category == "tools"
    assert row.who == "Alpha <b>" and row.agents == ("A",) and row.seconds == 0.002
    assert row.text == "called calculate" and row.tag == "ok"
    assert dict(row.blocks)["arguments"] == '{\n  "expression": "1+1"\n}'
    message = MessageSent(run_id="r", agent_id="A", message_id="m", recipient="B", preview="hi")
    sent = timeline_line("2-0", message, names, {})
    assert sent is not None and sent.agents == ("A", "B")
    assert timeline_line("3-0", TurnStarted(run_id="r", agent_id="A", seq=1), names, {}) is None
    model = timeline_line("4-0", said(1, T0), names, {})
    assert model is not None and model.category == "model" and model.seconds == 1.0


def test_filters_read_from_the_query_and_narrow_rows() -> None:
    agents = {"A": "Alpha", "B": "Beta"}
    shown = Shown.of({"agent": "B", "kind": "tools"}, agents)
    assert shown == Shown("B", "tools") and shown.narrowed
    assert shown.keeps("tool_called", ("B",))
    assert not shown.keeps("tool_called", ("A",))
    assert not shown.keeps("message_sent", ("B",))
    assert Shown.of({"agent": "Z", "kind": "nope"}, agents) == Shown()
    assert Shown().keeps("error", ())
    assert category("approval_asked") == "people" and category("turn_started") == ""
    assert "tools" in Shown().kinds


def test_json_is_indented_and_long_texts_fold() -> None:
    args = json.dumps({"path": "a.md", "content": "<script>x</script>", "n": [1, 2]})
    nice = pretty(args)
    assert nice.startswith('{\n  "path": "a.md",') and "<script>x</script>" in nice
    assert pretty("plain text") == "plain text" and pretty("{not json") == "{not json"
    assert pretty("{}") == "{}" and pretty(None) == ""
    assert not long(nice) and long("x" * 500) and long("\n".join("abcdefghij"))
    assert headline(nice) == '{"path": "a.md", "content": "<script>x</script>", "n": [1, 2]}'
    assert headline("one\ntwo") == "one … (2 lines)"


def test_a_run_ran_from_its_start_to_its_end() -> None:
    def moved(to: RunStatus, at: float) -> Transition:
        return Transition(from_status=None, to_status=to, by="U1", at=at)

    run = RunState(id="r", task="t", history=[moved(RunStatus.APPROVED, T0)])
    assert ran_for(run, now=T0 + 50) is None  # not started
    run.history += [moved(RunStatus.RUNNING, T0 + 1), moved(RunStatus.WAITING_HUMAN, T0 + 3)]
    assert ran_for(run, now=T0 + 50) == 49  # still running
    run.history += [moved(RunStatus.RUNNING, T0 + 9), moved(RunStatus.COMPLETED, T0 + 12.5)]
    assert ran_for(run, now=T0 + 50) == 11.5


def test_arguments_are_shown_with_secrets_masked() -> None:
    shown = arguments(json.dumps({"url": "https://x.test/?api_key=sk-abcdefghijklmnop", "n": 1}))
    assert "sk-abcdefghijklmnop" not in shown and shown.startswith('{\n  "url": ')
    assert arguments("") == "" and arguments(None) == ""
