"""The workload on AutoGen AgentChat: one ``AssistantAgent`` per agent (one shared
``OpenAIChatCompletionClient``), tools as plain functions, ``max_tool_iterations`` high
enough for the agent to loop until it answers; a parent's ``delegate`` tool runs its
children's ``agent.run`` under ``asyncio.gather``. Nothing is persisted."""

from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import common
from autogen_agentchat.agents import AssistantAgent
from autogen_ext.models.openai import OpenAIChatCompletionClient

_client: OpenAIChatCompletionClient | None = None


def client() -> OpenAIChatCompletionClient:
    global _client
    if _client is None:
        _client = OpenAIChatCompletionClient(
            model="fake-model",
            base_url=os.environ["BENCH_BASE_URL"],
            api_key="x",
            timeout=common.TIMEOUT_S,
            model_info={
                "vision": False,
                "function_calling": True,
                "json_output": False,
                "family": "unknown",
                "structured_output": False,
            },
        )
    return _client


def calculate(expression: str) -> str:
    """Evaluate a sum of two integers like '2 + 3'."""
    return common.calculate(expression)


def agent(name: str) -> AssistantAgent:
    tools: list[object] = [calculate]
    children = common.TEAM.get(name, [])
    if children:

        async def delegate(task: str) -> str:
            """Have your team do the task; returns their answers."""
            results = await asyncio.gather(*(run(child) for child in children))
            return "\n".join(results)

        tools.append(delegate)
    return AssistantAgent(
        name.replace(" ", "_").replace(".", "_"),
        model_client=client(),
        tools=tools,  # type: ignore[arg-type]
        system_message=common.instructions(name),
        max_tool_iterations=20,
        reflect_on_tool_use=False,
    )


async def run(name: str) -> str:
    result = await agent(name).run(task="Do your part of the task.")
    return str(result.messages[-1].to_text())


async def main() -> None:
    await common.measure(run, lambda: run("Orchestrator"))


if __name__ == "__main__":
    asyncio.run(main())
