"""A scripted model over HTTP for trying ``caramba run`` from outside: answers for the
OpenAI-compatible fake (tests/fakes/llm_server.py), by what each request is.

Planning: the router always plans; the planner designs one agent, "Helper", with
``ask_user`` and ``calculate``; the prompt creator writes short prompts. The Helper acts on
words in the task:

* "ask": asks "Which city: Lisbon or Porto?" and finishes with the person's answer;
* "spend": calls ``calculate`` three times, each call reported as 2,000 prompt tokens
  ($1 at :data:`PRICE`: the run, designed with $1.50, pauses at its budget), then
  finishes;
* anything else: finishes at once.

Serve it with ``python -m tests.fakes.console_llm --port 8998`` and point caramba at it::

    CARAMBA_LLM__MODEL=openai/fake-model CARAMBA_LLM__API_BASE=http://127.0.0.1:8998/v1 \\
    CARAMBA_LLM__API_KEY_ENV= CARAMBA_LIBRARY__EMBEDDER=hashing caramba run "ask me"
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from tests.fakes.llm_server import FakeReply, ThreadedFakeLLMServer

QUESTION = "Which city: Lisbon or Porto?"
SPEND_CALLS = 3
SPEND_TOKENS = 2000
# The run's budget; priced at PRICE (llm.prices), each "spend" call costs $1.
BUDGET_USD = 1.5
PRICE = {"input_per_mtok": 500.0, "output_per_mtok": 0.0}


def _tools(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or ()}


def _texts(body: dict[str, Any], role: str) -> list[str]:
    return [m.get("content") or "" for m in body["messages"] if m["role"] == role]


def _calls(body: dict[str, Any], name: str) -> int:
    return sum(
        c["function"]["name"] == name
        for m in body["messages"]
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or ()
    )


def design() -> dict[str, Any]:
    """One agent that can ask and calculate."""
    return {
        "steps": [{"title": "Do it", "tools": ["ask_user", "calculate"]}],
        "agents": [
            {
                "name": "Helper",
                "role": "orchestrator",
                "description": "Does the task, asking the person when it must.",
                "tools": ["ask_user", "calculate"],
            }
        ],
        "budget_usd": BUDGET_USD,
        "rationale": "one agent is enough",
    }


def helper(body: dict[str, Any]) -> FakeReply:
    """The Helper's next move, from its thread."""
    users = _texts(body, "user")
    task = users[0] if users else ""
    replies = [u for u in users if u.startswith("[Reply from ")]
    if replies:
        answer = replies[-1].split("\n", 1)[-1].strip()
        return FakeReply(tool_calls=[("finish", {"result": f"Going with {answer}."})])
    if "ask" in task and not _calls(body, "ask_user"):
        return FakeReply(tool_calls=[("ask_user", {"question": QUESTION})])
    if "spend" in task:
        done = _calls(body, "calculate")
        if done < SPEND_CALLS:
            return FakeReply(
                tool_calls=[("calculate", {"expression": f"{done} + 1"})],
                prompt_tokens=SPEND_TOKENS,
            )
        return FakeReply(
            tool_calls=[("finish", {"result": f"Spent enough: {done} sums."})], prompt_tokens=10
        )
    return FakeReply(tool_calls=[("finish", {"result": "Done."})])


def respond(body: dict[str, Any]) -> FakeReply:
    """Every request of a ``caramba run``: routing, planning, prompts, the Helper."""
    tools = _tools(body)
    if "submit_router" in tools:
        return FakeReply(
            tool_calls=[("submit_router", {"path": "plan", "reason": "it takes steps"})]
        )
    if "submit_planner" in tools:
        return FakeReply(tool_calls=[("submit_planner", design())])
    if "finish" in tools:
        return helper(body)
    last = (_texts(body, "user") or [""])[-1]
    if "Critique the draft" in last:
        return FakeReply(content="Say when to ask and when to finish.")
    return FakeReply(content="Do the task; ask the person only what you cannot know.")


def main() -> None:
    parser = argparse.ArgumentParser(description="the console's scripted model over HTTP")
    parser.add_argument("--port", type=int, default=8998)
    args = parser.parse_args()
    with ThreadedFakeLLMServer(port=args.port) as server:
        server.set_responder(respond)
        print(f"serving on {server.base_url}", flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
