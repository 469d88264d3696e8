"""The turn's hot path writes the same bytes as before its shortcuts (issue 25): an agent's
hash (its spec dumped once, spliced into the state's JSON), the events and bus messages a
save queues (each dumped by its own class, queued as the XADD ``pipe.xadd`` would), a run's
head parsed once per JSON, and a model answer's body parsed by pydantic-core."""

from __future__ import annotations

import json
from typing import Any

import fakeredis
import pytest

from core.config import load_settings
from core.llm.http_failures import from_body, parse_json
from core.state.bus import Bus, Outgoing
from core.state.event_log import EventLog
from core.state.keys import Keys
from core.state.records import agent_fields, parse_head, state_text
from core.state.store import Store
from core.types.agent import AgentSpec, AgentState, AgentStatus, Budget, EndReason
from core.types.chat import ChatMessage, ToolCall, Usage
from core.types.events import (
    RUN_EVENT,
    AgentFinished,
    ErrorRaised,
    LLMCalled,
    MessageSent,
    RunEvent,
    RunFinished,
    ToolCalled,
    TurnStarted,
)
from core.types.messages import BUS_MESSAGE, HumanReply, ResultMessage, TextMessage
from core.types.run import RunBudget, RunHead, RunStatus

KEYS = Keys("t")


def _state(**changes: Any) -> AgentState:
    spec = AgentSpec(
        name="Lead «1»",
        role="lead",
        parent_id="agt_parent",
        team_id="team_1",
        system_prompt="You are Lead 1.\n\n## Tools\n- `calculate`: sums ✓",
        tools=("calculate", "finish"),
        budget=Budget(max_turns=9, max_cost_usd=0.5),
    )
    thread = [
        ChatMessage(role="system", content=spec.system_prompt),
        ChatMessage(role="user", content="Your brief: work"),
        ChatMessage(
            role="assistant",
            tool_calls=[ToolCall(id="c1", name="calculate", arguments='{"expression": "1+1"}')],
        ),
        ChatMessage(role="tool", tool_call_id="c1", name="calculate", content="1+1 = 2"),
        ChatMessage(role="tool", tool_call_id="c2", name="look", content="x", images=("data:,",)),
    ]
    state = AgentState(
        spec=spec,
        run_id="run_a",
        status=AgentStatus.WAITING,
        seq=4,
        thread=thread,
        usage=Usage(prompt_tokens=10, completion_tokens=2, cost_usd=0.25),
        recent_calls=['calculate({"expression": "1+1"})'],
        prompt_sample=(10, 40),
        children=["agt_c"],
        open_question=None,
        end_reason=EndReason.FINISHED,
    )
    for name, value in changes.items():
        setattr(state, name, value)
    return state


def test_an_agents_hash_holds_its_specs_json_and_its_state_key_the_states() -> None:
    state = _state()
    for _ in range(2):  # the second time from the spec's kept JSON
        fields = agent_fields(state, created=True)
        assert fields["spec"] == state.spec.model_dump_json()
        assert state_text(state) == state.model_dump_json()
        assert fields == {
            "seq": 4,
            "status": "waiting",
            "team": "team_1",
            "spec": state.spec.model_dump_json(),
        }
    # The state changes between saves (its spec does not): the next save says so.
    state.thread.append(ChatMessage(role="user", content="more"))
    state.status, state.seq, state.result = AgentStatus.RUNNING, 5, None
    assert state_text(state) == state.model_dump_json()
    # A turn's save leaves the spec and team its creation wrote (a spec never changes); its
    # state goes to a key of its own (staged: ``Turns.stage``).
    assert agent_fields(state) == {"seq": 5, "status": "running"}
    # Another spec (a copy, or a child's) is dumped for itself.
    other = _state(spec=state.spec.model_copy(update={"name": "Lead 2", "team_id": None}))
    fields = agent_fields(other, created=True)
    assert fields["spec"] == other.spec.model_dump_json() and '"Lead 2"' in fields["spec"]
    assert state_text(other) == other.model_dump_json() and fields["team"] == ""


def _events() -> list[RunEvent]:
    return [
        TurnStarted(run_id="run_a", agent_id="agt_1", seq=3),
        LLMCalled(
            run_id="run_a",
            agent_id="agt_1",
            seq=3,
            model="hosted_vllm/m",
            prompt_tokens=10,
            completion_tokens=2,
            cost_usd=0.0,
            agent_tokens=12,
            agent_cost_usd=0.0,
            text="héllo",
            started_at=1.5,
            duration_s=0.2,
        ),
        ToolCalled(
            run_id="run_a", agent_id="agt_1", seq=3, tool="t", arguments="{}", ok=True, result="r"
        ),
        MessageSent(run_id="run_a", agent_id="agt_1", message_id="m", recipient="b", preview="p"),
        AgentFinished(run_id="run_a", agent_id="agt_1", reason=EndReason.STALLED, detail="d"),
        ErrorRaised(run_id="", agent_id="agt_1", message="m", hint="h"),
        RunFinished(run_id="run_a", status=RunStatus.COMPLETED, result="done"),
    ]


def test_events_are_queued_as_xadd_queued_them() -> None:
    redis = fakeredis.FakeAsyncRedis(decode_responses=True)
    events = _events()
    mine, theirs = redis.pipeline(transaction=False), redis.pipeline(transaction=False)
    EventLog(redis, KEYS, 777).add(mine, "run_a", events)
    for event in events:
        theirs.xadd(
            KEYS.events(event.run_id or "run_a"),
            {"event": RUN_EVENT.dump_json(event)},
            maxlen=777,
            approximate=True,
        )
        if isinstance(event, RunFinished):
            theirs.sadd(KEYS.ended_runs(), event.run_id)
    assert mine.command_stack == theirs.command_stack


async def test_events_written_read_back_the_same() -> None:
    redis = fakeredis.FakeAsyncRedis(decode_responses=True)
    log = EventLog(redis, KEYS, 100)
    events = _events()
    await log.emit(*events)
    read = [e for _, e in await log.read("run_a", count=100)]
    assert read == events  # (the one with no run id goes to the first one's run)


def test_bus_messages_are_queued_as_xadd_queued_them() -> None:
    redis = fakeredis.FakeAsyncRedis(decode_responses=True)
    bus = Bus(Store(redis, KEYS, 100), KEYS, load_settings().bus)
    outgoing = [
        Outgoing("s1", TextMessage(run_id="r", sender="a", recipient="b", body="hi ✓"), ("b",)),
        Outgoing(
            "s2",
            ResultMessage(run_id="r", sender="a", recipient="p", body="done", ok=False, tokens=3),
            ("p",),
        ),
        Outgoing(
            "s3", HumanReply(run_id="r", sender="h", recipient="a", body="ok", author="Ana"), ("a",)
        ),
    ]
    mine, theirs = redis.pipeline(transaction=False), redis.pipeline(transaction=False)
    for write in bus.send_writes(outgoing):
        write(mine)
    for out in outgoing:
        theirs.xadd(
            out.stream,
            {"m": BUS_MESSAGE.dump_json(out.message)},
            maxlen=load_settings().bus.stream_maxlen,
            approximate=True,
        )
    assert mine.command_stack == theirs.command_stack


def test_a_runs_head_is_parsed_once_per_json() -> None:
    head = RunHead(
        id="run_a",
        status=RunStatus.RUNNING,
        budget=RunBudget(tokens=10, cost_usd=1.0, wall_clock_s=60),
        deadline_at=99.5,
    )
    raw = head.model_dump_json()
    first = parse_head(raw)
    assert first == head and parse_head(raw) is first
    paused = head.model_copy(update={"paused": "tokens"}).model_dump_json()
    assert parse_head(paused) == head.model_copy(update={"paused": "tokens"})
    assert parse_head(None) is None
    with pytest.raises(ValueError):
        parse_head("{not json")


@pytest.mark.parametrize(
    "text",
    [
        '{"choices": [{"message": {"content": "h\\u00e9 \\ud83d\\ude00"}}], "u": 1.5e300}',
        '  {"choices": [{"message": {}}], "big": 123456789012345678901234567890}  ',
        '{"choices": [{"message": {"content": "\\ud800"}}]}',  # a lone surrogate
        '{"choices": [], "a": 1, "a": 2}',
    ],
)
def test_a_body_is_parsed_as_json_loads_parses_it(text: str) -> None:
    assert parse_json(text) == json.loads(text)


def test_a_body_that_is_not_json_is_refused_as_before() -> None:
    for text in ("[1,]", "<html>", "", "nan nan"):
        with pytest.raises(ValueError):
            parse_json(text)
    assert "an HTML page" in from_body("<html><body>x</body></html>").message  # type: ignore[union-attr]
    assert "not an object" in from_body("[1]").message  # type: ignore[union-attr]


def test_a_prompts_size_counts_texts_calls_and_tools() -> None:
    from core.agent.limits import prompt_chars

    thread = _state().thread
    tools = ({"type": "function", "function": {"name": "t", "parameters": {}}},)
    expected = sum(len(m.content or "") for m in thread)
    expected += sum(len(c.arguments or "") + len(c.name) for m in thread for c in m.tool_calls)
    expected += sum(len(json.dumps(t)) for t in tools)
    assert prompt_chars(thread, tools) == expected == prompt_chars(thread, tools)
    assert prompt_chars([], ()) == 0


def test_a_saved_thread_is_dumped_as_the_state_dump_writes_it_however_it_changed() -> None:
    state = _state()

    def same() -> None:
        assert state_text(state) == state.model_dump_json()

    same()
    same()
    state.thread.append(ChatMessage(role="user", content='é "q" ,"usage":'))
    same()
    state.thread[-1].images = ("data:x",)  # set in place by the turn that appended it
    same()
    state.thread[2] = ChatMessage(role="user", content="replaced")  # an approval's outcome
    same()
    state.thread += [ChatMessage(role="assistant", content=t) for t in ("a", "b")]
    same()
    del state.thread[3:]
    same()
    state.thread.clear()
    same()
    state.thread.append(ChatMessage(role="user", content="1"))
    same()
    state.thread = [ChatMessage(role="user", content="z")]
    same()


def test_a_prompts_size_counts_a_grown_or_rewritten_thread_anew() -> None:
    from core.agent.limits import prompt_chars

    def size(messages: list[ChatMessage]) -> int:
        return sum(len(m.content or "") for m in messages) + sum(
            len(c.arguments or "") + len(c.name) for m in messages for c in m.tool_calls
        )

    thread = _state().thread
    note = ChatMessage(role="user", content="files: a")
    assert prompt_chars((*thread, note), ()) == size([*thread, note])
    thread.append(ChatMessage(role="assistant", content="more"))
    assert prompt_chars(thread, ()) == size(thread)
    thread[1] = ChatMessage(role="user", content="a brief rewritten, longer")
    assert prompt_chars((*thread, note), ()) == size([*thread, note])
    del thread[2:]
    assert prompt_chars(thread, ()) == size(thread)
