"""The workload on CrewAI: one ``Crew`` of one ``Agent`` and one ``Task`` per agent,
run with the native async ``akickoff``, on one shared ``LLM`` (``openai/`` model: CrewAI's
own OpenAI provider); tools from ``crewai.tools.tool``; a parent's ``delegate`` tool
awaits its children's crews under ``asyncio.gather``. No memory, no planning, no
delegation of CrewAI's own; telemetry and tracing off (environment)."""

from __future__ import annotations

import asyncio
import logging
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import common
from crewai import LLM, Agent, Crew, Task
from crewai.tools import tool

# A real model has a token count; the fake one makes CrewAI warn on every call.
logging.getLogger("crewai.llms.base_llm").setLevel(logging.ERROR)
_llm: LLM | None = None


def llm() -> LLM:
    global _llm
    if _llm is None:
        _llm = LLM(
            model="openai/fake-model",
            base_url=os.environ["BENCH_BASE_URL"],
            api_key="x",
            timeout=common.TIMEOUT_S,
        )
    return _llm


@tool("calculate")
def calculate(expression: str) -> str:
    """Evaluate a sum of two integers like '2 + 3'."""
    return common.calculate(expression)


def crew(name: str) -> Crew:
    tools = [calculate]
    children = common.TEAM.get(name, [])
    if children:

        @tool("delegate")
        async def delegate(task: str) -> str:
            """Have your team do the task; returns their answers."""
            results = await asyncio.gather(*(run(child) for child in children))
            return "\n".join(results)

        tools.append(delegate)
    agent = Agent(
        role=name,
        goal="Do your part of the task.",
        backstory=common.instructions(name),
        llm=llm(),
        tools=tools,
        allow_delegation=False,
        max_iter=20,
        verbose=False,
    )
    task = Task(description="Do your part of the task.", expected_output="the result", agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False)


async def run(name: str) -> str:
    return str(await crew(name).akickoff())


async def main() -> None:
    await common.measure(run, lambda: run("Orchestrator"))


if __name__ == "__main__":
    asyncio.run(main())
