"""The offline cohort demo (``caramba demo --cohort``): agents creating agents at run time —
an orchestrator runs a competition between two teams and a judge it creates, over the real
bus and turn loop, with scripted "brains" standing in for the model."""

from __future__ import annotations

from collections.abc import Callable

from core.llm.base import LLMRequest
from core.llm.scripted import SCRIPTED_MODEL, Reply, ScriptedModel, call
from core.process.demo_reading import called as _called
from core.process.demo_reading import delivered as _delivered
from core.types.agent import AgentSpec

COHORT_TASK = "How many seconds are in a leap year? Two teams compete; a judge picks."
Brain = Callable[[LLMRequest], Reply]


def _orchestrator(r: LLMRequest) -> Reply:
    if not _called(r, "create_agent"):
        brief = "Work out the number of seconds in a leap year; show how."
        return Reply(
            content="Two competing teams and a judge.",
            calls=(
                call(
                    "create_agent",
                    {
                        "name": "Team Exact",
                        "role": "lead",
                        "purpose": brief,
                        "tools": ["calculate"],
                        "pattern": "fan_out",
                    },
                ),
                call(
                    "create_agent",
                    {
                        "name": "Team Rough",
                        "role": "lead",
                        "purpose": brief,
                        "tools": ["calculate"],
                        "pattern": "fan_out",
                    },
                ),
                call(
                    "create_agent",
                    {
                        "name": "Judge",
                        "role": "judge",
                        "purpose": "Pick the most correct, best-shown answer.",
                    },
                ),
                call("wait_for_messages"),
            ),
        )
    verdict = _delivered(r, "[Result from Judge")
    if verdict:
        return Reply(
            content="The judge has decided.",
            calls=(call("finish", {"result": verdict[0].split("\n", 1)[1]}),),
        )
    results = sorted(_delivered(r, "[Result from Team"))
    if len(results) == 2 and not _called(r, "send_message"):
        body = "\n".join(
            f"Candidate {'AB'[i]}: {t.split(chr(10), 1)[1]}" for i, t in enumerate(results)
        )
        return Reply(
            content="Both teams are done; over to the judge.",
            calls=(call("send_message", {"to": "Judge", "body": body}), call("wait_for_messages")),
        )
    return Reply(calls=(call("wait_for_messages"),))


def _lead(expression: str) -> Brain:
    def brain(r: LLMRequest) -> Reply:
        if not _called(r, "calculate"):
            return Reply(calls=(call("calculate", {"expression": expression}),))
        worked = next(m.content for m in reversed(r.messages) if m.role == "tool")
        return Reply(calls=(call("finish", {"result": worked or ""}),))

    return brain


def _judge(r: LLMRequest) -> Reply:
    candidates = _delivered(r, "[Message from Orchestrator")
    if not candidates:
        return Reply(calls=(call("wait_for_messages"),))
    exact = next((line for line in candidates[0].splitlines() if "366" in line), "")
    return Reply(
        calls=(
            call(
                "finish",
                {
                    "result": f"Winner — {exact}. It counts 366 days "
                    "exactly; the other answer rounds."
                },
            ),
        )
    )


def cohort_model() -> ScriptedModel:
    brains: dict[str, Brain] = {
        "Orchestrator": _orchestrator,
        "Team Exact": _lead("366 * 24 * 60 * 60"),
        "Team Rough": _lead("365.25 * 24 * 3600"),
        "Judge": _judge,
    }
    return ScriptedModel(responder=lambda r: brains[r.agent_name](r))


def cohort_orchestrator() -> AgentSpec:
    return AgentSpec(
        name="Orchestrator",
        role="orchestrator",
        model=SCRIPTED_MODEL,
        tools=(
            "create_agent",
            "send_message",
            "roster",
            "wait_for_messages",
            "finish",
            "calculate",
        ),
        description="Runs a competition between two teams and a judge.",
    )
