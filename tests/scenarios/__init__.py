"""Scenarios over any Redis and any scheduler.

The tests in this folder run the real turn loop with a scripted model, most against both
fakeredis and a real Redis (the ``any_redis`` fixture); those parametrised with
``tests.schedulers.SCHEDULERS`` (and the ``services`` fixture) also run under each
scheduler, inline and a real Celery worker. Others hold the scheduler still
(``core.scheduler.RecordingScheduler``) and run the turns one by one.

Here: the scripted multi-agent scenarios they share, where each agent's "model" is a
function of its thread, and helpers to read what a model was shown.
"""

from __future__ import annotations

from collections.abc import Callable

from core.llm.base import LLMRequest
from core.llm.scripted import Reply, ScriptedModel, call
from core.types import AgentSpec

Brain = Callable[[LLMRequest], Reply]


def texts(request: LLMRequest, prefix: str) -> list[str]:
    """Contents of the user messages (bus deliveries) that start with ``prefix``."""
    return [
        m.content or ""
        for m in request.messages
        if m.role == "user" and (m.content or "").startswith(prefix)
    ]


def calls_made(request: LLMRequest, tool: str) -> int:
    return sum(
        c.name == tool for m in request.messages if m.role == "assistant" for c in m.tool_calls
    )


def brains(mapping: dict[str, Brain]) -> ScriptedModel:
    def respond(request: LLMRequest) -> Reply:
        return mapping[request.agent_name](request)

    return ScriptedModel(responder=respond)


ORCHESTRATOR_TOOLS = (
    "create_agent",
    "send_message",
    "roster",
    "wait_for_messages",
    "finish",
    "calculate",
)


def orchestrator() -> AgentSpec:
    return AgentSpec(
        name="Orchestrator",
        role="orchestrator",
        tools=ORCHESTRATOR_TOOLS,
        description="Runs a competition between two teams.",
    )


def competition() -> ScriptedModel:
    """Orchestrator → two competing teams (lead + member each) → judge → orchestrator."""

    def orch(r: LLMRequest) -> Reply:
        results = texts(r, "[Result from Team")
        verdict = texts(r, "[Result from Judge")
        if calls_made(r, "create_agent") == 0:
            brief = "Estimate the seconds in a leap year; show the calculation."
            return Reply(
                calls=(
                    call(
                        "create_agent",
                        {
                            "name": "Team A lead",
                            "role": "lead",
                            "purpose": brief,
                            "tools": ["calculate", "create_agent"],
                            "pattern": "fan_out",
                        },
                    ),
                    call(
                        "create_agent",
                        {
                            "name": "Team B lead",
                            "role": "lead",
                            "purpose": brief,
                            "tools": ["calculate", "create_agent"],
                            "pattern": "fan_out",
                        },
                    ),
                    call(
                        "create_agent",
                        {
                            "name": "Judge",
                            "role": "judge",
                            "purpose": "Pick the better candidate, with reasons.",
                        },
                    ),
                    call("wait_for_messages"),
                )
            )
        if verdict:
            return Reply(calls=(call("finish", {"result": "Winner: " + verdict[0]}),))
        if len(results) == 2 and calls_made(r, "send_message") == 0:
            body = "\n\n".join(
                f"Candidate {'AB'[i]}: {t.split(chr(10), 1)[1]}"
                for i, t in enumerate(sorted(results))
            )
            return Reply(
                calls=(
                    call("send_message", {"to": "Judge", "body": body}),
                    call("wait_for_messages"),
                )
            )
        return Reply(calls=(call("wait_for_messages"),))

    def lead(team: str, answer: str) -> Brain:
        def brain(r: LLMRequest) -> Reply:
            member_results = texts(r, f"[Result from {team} analyst")
            if calls_made(r, "create_agent") == 0:
                return Reply(
                    calls=(
                        call(
                            "create_agent",
                            {
                                "name": f"{team} analyst",
                                "role": "member",
                                "purpose": "Compute 366*24*3600.",
                                "tools": ["calculate"],
                                "budget_share": 0.5,
                            },
                        ),
                        call("wait_for_messages"),
                    )
                )
            if member_results:
                return Reply(calls=(call("finish", {"result": f"{answer} ({team})"}),))
            return Reply(calls=(call("wait_for_messages"),))

        return brain

    def analyst(r: LLMRequest) -> Reply:
        if calls_made(r, "calculate") == 0:
            return Reply(calls=(call("calculate", {"expression": "366*24*3600"}),))
        return Reply(calls=(call("finish", {"result": r.messages[-1].content or ""}),))

    def judge(r: LLMRequest) -> Reply:
        candidates = texts(r, "[Message from Orchestrator")
        if not candidates:
            return Reply(calls=(call("wait_for_messages"),))
        return Reply(
            calls=(call("finish", {"result": "Candidate A: it shows the full calculation."}),)
        )

    return brains(
        {
            "Orchestrator": orch,
            "Team A lead": lead("Team A", "31622400 seconds = 366 × 24 × 3600"),
            "Team B lead": lead("Team B", "about 31.6 million seconds"),
            "Team A analyst": analyst,
            "Team B analyst": analyst,
            "Judge": judge,
        }
    )


def discussion() -> ScriptedModel:
    """Orchestrator → a lead moderating two members over rounds until consensus."""

    def orch(r: LLMRequest) -> Reply:
        if calls_made(r, "create_agent") == 0:
            return Reply(
                calls=(
                    call(
                        "create_agent",
                        {
                            "name": "Panel lead",
                            "role": "lead",
                            "purpose": "Should we ship on Friday? Reach consensus.",
                            "tools": ["calculate", "create_agent"],
                            "pattern": "discussion",
                        },
                    ),
                    call("wait_for_messages"),
                )
            )
        result = texts(r, "[Result from Panel lead")
        if result:
            return Reply(calls=(call("finish", {"result": result[0].split("\n", 1)[1]}),))
        return Reply(calls=(call("wait_for_messages"),))

    def lead(r: LLMRequest) -> Reply:
        replies = [t for t in texts(r, "[Message from ") if "(member)" in t.split("\n")[0]]
        rounds = calls_made(r, "send_message")
        if calls_made(r, "create_agent") == 0:
            return Reply(
                calls=(
                    call(
                        "create_agent",
                        {"name": "Optimist", "role": "member", "purpose": "Argue for shipping."},
                    ),
                    call(
                        "create_agent",
                        {"name": "Skeptic", "role": "member", "purpose": "Argue against shipping."},
                    ),
                    call("send_message", {"to": "team", "body": "Round 1: ship on Friday?"}),
                    call("wait_for_messages"),
                )
            )
        if len(replies) >= 2 * rounds:
            latest = replies[-2:]
            if all("agree" in text for text in latest):
                return Reply(
                    calls=(
                        call(
                            "finish",
                            {
                                "result": f"Consensus after {rounds} rounds: ship on Friday with a "
                                "rollback plan."
                            },
                        ),
                    )
                )
            return Reply(
                calls=(
                    call(
                        "send_message",
                        {
                            "to": "team",
                            "body": f"Round {rounds + 1}: the "
                            "Skeptic wants a rollback plan. With one, agree?",
                        },
                    ),
                    call("wait_for_messages"),
                )
            )
        return Reply(calls=(call("wait_for_messages"),))

    def member(first: str) -> Brain:
        def brain(r: LLMRequest) -> Reply:
            rounds = texts(r, "[Message from Panel lead")
            answered = calls_made(r, "send_message")
            if len(rounds) > answered:
                body = first if answered == 0 else "I agree, with a rollback plan."
                return Reply(
                    calls=(
                        call("send_message", {"to": "parent", "body": body}),
                        call("wait_for_messages"),
                    )
                )
            return Reply(calls=(call("wait_for_messages"),))

        return brain

    return brains(
        {
            "Orchestrator": orch,
            "Panel lead": lead,
            "Optimist": member("I agree: the tests are green."),
            "Skeptic": member("No: there is no rollback plan."),
        }
    )
