"""The agent turn with models that do not call tools the OpenAI way (scripted model,
fakeredis): text replies, calls written in text, wrong argument types, empty replies, and
the ladder learning a text-only model across runs."""

from __future__ import annotations

import json

from core.llm.base import LLMRequest
from core.llm.capabilities import Rung
from core.llm.scripted import Reply, ScriptedModel, call
from core.runs import control
from core.runs.approval import Approve, decide
from core.runs.control import start_run
from core.types import AgentSpec, Cohort
from core.types.agent import EndReason
from core.types.events import AgentFinished, RunFinished, ToolCalled
from core.types.run import RunStatus
from tests.conftest import make_settings
from tests.helpers import collect

TOOLS = ("calculate", "finish")


def solo() -> AgentSpec:
    return AgentSpec(name="Solo", tools=TOOLS)


async def _run(svc, task: str = "What is the capital of France?"):  # type: ignore[no-untyped-def]
    run_id = await start_run(svc, task, solo())
    events = await collect(svc, run_id)
    final = events[-1]
    assert isinstance(final, RunFinished)
    ended = next(e for e in events if isinstance(e, AgentFinished))
    return final, ended, events


async def test_a_text_reply_is_nudged_once_then_taken_as_the_result(
    settings, make_services
) -> None:
    model = ScriptedModel(responder=lambda _r: Reply(content="The capital is Paris."))
    svc = make_services(settings, model)
    final, ended, _ = await _run(svc)

    assert (final.status, final.result) == (RunStatus.COMPLETED, "The capital is Paris.")
    assert ended.reason is EndReason.FINISHED
    assert len(model.requests) == 2
    nudge = model.requests[1].messages[-1].content or ""
    assert "without calling a tool" in nudge and "taken as your final result" in nudge


async def test_with_nudge_only_the_same_text_twice_is_a_stall(make_services) -> None:
    settings = make_settings(agents={"text_reply": "nudge", "text_nudges": 3})
    model = ScriptedModel(responder=lambda _r: Reply(content="I am  thinking about it."))
    model.script("*", Reply(content="Let me see."))
    svc = make_services(settings, model)
    final, ended, _ = await _run(svc)

    assert final.status is RunStatus.FAILED
    assert ended.reason is EndReason.STALLED
    assert "same text twice in a row" in ended.detail and "thinking about it" in ended.detail
    assert len(model.requests) == 3  # the different first text was only nudged


async def test_an_empty_reply_is_asked_again_once(settings, make_services) -> None:
    model = ScriptedModel().script(
        "*", Reply(content=""), Reply(calls=(call("finish", {"result": "Paris."}),))
    )
    svc = make_services(settings, model)
    final, _, _ = await _run(svc)
    assert (final.status, final.result) == (RunStatus.COMPLETED, "Paris.")
    assert "Your reply was empty" in (model.requests[1].messages[-1].content or "")
    # What the model is shown of its empty reply is never an empty assistant message.
    assert model.requests[1].messages[-2].content == "(empty reply)"

    silent = ScriptedModel(responder=lambda _r: Reply(content="  "))
    final, ended, _ = await _run(make_services(settings, silent))
    assert final.status is RunStatus.FAILED and ended.reason is EndReason.LLM_ERROR
    assert ended.detail == (
        f"the model {settings.llm.model} replied with nothing twice in a row; choose another "
        "model for solo agents ([llm] model, or [llm.models] solo in config.toml)"
    )


async def test_calls_written_in_text_and_wrong_types_are_carried_out(
    settings, make_services
) -> None:
    written = '{"tool": "calculate", "arguments": {"expression": 42}}'
    model = ScriptedModel().script(
        "*",
        Reply(content=f"<think>I need the calculator.</think>\nSure:\n```json\n{written}\n```"),
        Reply(calls=(call("finish", json.dumps(json.dumps({"result": "42"}))),)),
    )
    svc = make_services(settings, model)
    final, _, events = await _run(svc, "6*7")

    tools = [(e.tool, e.ok, e.result) for e in events if isinstance(e, ToolCalled)]
    assert tools[0] == ("calculate", True, "42 = 42")
    assert tools[1][:2] == ("finish", True)
    assert (final.status, final.result) == (RunStatus.COMPLETED, "42")
    # It writes its calls: from then on its tools are described in the prompt, and it
    # reads the calculator's answer as a message.
    assert model.requests[1].tools == ()
    assert model.requests[1].messages[-1].content == "Result of the tool calculate:\n42 = 42"


async def test_the_ladder_learns_a_text_only_model_across_runs(settings, make_services) -> None:
    model = ScriptedModel(responder=lambda _r: Reply(content="<think>hm</think>Paris."))
    svc = make_services(settings, model)

    first, _, _ = await _run(svc)
    assert svc.ladder.rung(settings.llm.model) is Rung.JSON
    assert [bool(r.tools) for r in model.requests] == [True, True]

    second, _, _ = await _run(svc)
    assert [bool(r.tools) for r in model.requests[2:]] == [False, False]
    guide = model.requests[2].messages[0].content or ""
    assert "## Calling tools" in guide and "`finish`" in guide
    assert svc.ladder.rung(settings.llm.model) is Rung.TEXT

    third, _, _ = await _run(svc)
    assert len(model.requests) == 5  # known to answer in text: no nudge
    assert {first.result, second.result, third.result} == {"Paris."}


async def test_a_new_process_starts_on_the_rung_others_saved(
    settings, make_services, any_redis
) -> None:
    model = ScriptedModel(responder=lambda _r: Reply(content="Paris."))
    first = make_services(settings, model, redis=any_redis)
    await _run(first)
    await _run(first)
    assert first.ladder.rung(settings.llm.model) is Rung.TEXT
    key = first.store.keys.llm_rungs()
    assert await any_redis.hget(key, settings.llm.model) == "text"
    assert 0 < await any_redis.ttl(key) <= 24 * 3600

    later = ScriptedModel(responder=lambda _r: Reply(content="Paris."))
    second = make_services(settings, later, redis=any_redis)  # another process's services
    final, _, _ = await _run(second)
    assert final.result == "Paris."
    assert len(later.requests) == 1 and later.requests[0].tools == ()


async def test_a_text_reply_while_its_agents_work_waits_for_them(make_services) -> None:
    base = ("send_message", "roster", "wait_for_messages", "finish")
    root = AgentSpec(name="Boss", role="orchestrator", tools=base, description="Runs it.")
    member = AgentSpec(
        name="Worker", role="member", parent_id=root.id, tools=base, description="Adds."
    )
    cohort = Cohort(task="Add 40 and 2", agents=(root, member))

    def brain(request: LLMRequest) -> Reply:
        if request.agent_name == "Worker":
            return Reply(content="40 + 2 = 42.")
        heard = any("[Result from Worker" in (m.content or "") for m in request.messages)
        return Reply(content="The team says 42." if heard else "I will wait for my team.")

    model = ScriptedModel(responder=brain)
    svc = make_services(make_settings(), model)
    run_id = await control.propose_run(svc, cohort.task, cohort, requested_by="@ana")
    assert (await decide(svc, run_id, "@ana", Approve())).ok
    events = await collect(svc, run_id)

    final = events[-1]
    assert isinstance(final, RunFinished)
    assert (final.status, final.result) == (RunStatus.COMPLETED, "The team says 42.")
    boss = [r for r in model.requests if r.agent_name == "Boss"]
    # Waited (no reminder) while Worker worked; then one reminder, then its text.
    assert len(boss) == 3
    assert "without calling a tool" not in (boss[1].messages[-1].content or "")
    assert "without calling a tool" in (boss[2].messages[-1].content or "")
