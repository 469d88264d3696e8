"""The workload on LangGraph: one prebuilt ReAct agent graph (``create_react_agent``) per
agent on ``ChatOpenAI`` (one shared model object), tools from ``langchain_core``'s
``@tool``; a parent's ``delegate`` tool runs its children's graphs with ``ainvoke`` under
``asyncio.gather``. No checkpointer (nothing is persisted); LangSmith tracing off."""

from __future__ import annotations

import asyncio
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(__file__))
import common
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent

warnings.filterwarnings("ignore")  # create_react_agent's deprecation notice
_model: ChatOpenAI | None = None


def model() -> ChatOpenAI:
    global _model
    if _model is None:
        _model = ChatOpenAI(
            model="fake-model",
            base_url=os.environ["BENCH_BASE_URL"],
            api_key="x",
            timeout=common.TIMEOUT_S,
        )
    return _model


@tool
def calculate(expression: str) -> str:
    """Evaluate a sum of two integers like '2 + 3'."""
    return common.calculate(expression)


def agent(name: str):  # type: ignore[no-untyped-def]
    tools = [calculate]
    children = common.TEAM.get(name, [])
    if children:

        @tool
        async def delegate(task: str) -> str:
            """Have your team do the task; returns their answers."""
            results = await asyncio.gather(*(run(child) for child in children))
            return "\n".join(results)

        tools.append(delegate)
    return create_react_agent(model(), tools=tools, prompt=common.instructions(name))


async def run(name: str) -> str:
    state = await agent(name).ainvoke(
        {"messages": [("user", "Do your part of the task.")]}, {"recursion_limit": 50}
    )
    return str(state["messages"][-1].content)


async def main() -> None:
    await common.measure(run, lambda: run("Orchestrator"))


if __name__ == "__main__":
    asyncio.run(main())
