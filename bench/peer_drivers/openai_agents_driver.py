"""The workload on the OpenAI Agents SDK: one Agent per agent on the Chat Completions
model (one shared AsyncOpenAI client), tools as function tools, a parent's ``delegate``
tool runs its children with ``Runner.run`` concurrently. Tracing off."""

from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import common
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

set_tracing_disabled(True)
_model: OpenAIChatCompletionsModel | None = None


def model() -> OpenAIChatCompletionsModel:
    global _model
    if _model is None:
        client = AsyncOpenAI(
            base_url=os.environ["BENCH_BASE_URL"], api_key="x", timeout=common.TIMEOUT_S
        )
        _model = OpenAIChatCompletionsModel(model="fake-model", openai_client=client)
    return _model


@function_tool
def calculate(expression: str) -> str:
    """Evaluate a sum of two integers like '2 + 3'."""
    return common.calculate(expression)


def agent(name: str) -> Agent:
    tools = [calculate]
    children = common.TEAM.get(name, [])
    if children:

        @function_tool
        async def delegate(task: str) -> str:
            """Have your team do the task; returns their answers."""
            results = await asyncio.gather(*(run(child) for child in children))
            return "\n".join(str(r) for r in results)

        tools.append(delegate)
    return Agent(name=name, instructions=common.instructions(name), model=model(), tools=tools)


async def run(name: str) -> str:
    result = await Runner.run(agent(name), "Do your part of the task.", max_turns=20)
    return str(result.final_output)


async def main() -> None:
    await common.measure(run, lambda: run("Orchestrator"))


if __name__ == "__main__":
    asyncio.run(main())
