"""``run_code``: Python (or bash) in the sandbox, against the run's files.

Registered only where the sandbox works (``core.tools.sandbox.probe``); elsewhere it is
marked unavailable with the reason, and code never runs unsandboxed.
"""

from __future__ import annotations

from typing import Literal

from core.agent.context import ToolContext
from core.config import Settings
from core.errors import ToolRetry
from core.tools.registry import ToolRegistry, tool
from core.tools.sandbox import probe, run_code_in_sandbox

_MAX_CODE_CHARS = 100_000


@tool(read_only=False, category="code", runs_code=True)
async def run_code(
    ctx: ToolContext, code: str, language: Literal["python", "bash"] = "python"
) -> str:
    """Run Python code (or a bash script) in a sandbox and get back what it printed and
    which files it created. The working directory holds the run's workspace files: open
    them by relative path (pd.read_csv("data.csv")); files written there are saved back
    to the workspace, and files in "outputs/" are sent to the chat when the run ends.
    pandas, numpy and matplotlib are installed (save plots with plt.savefig, e.g.
    "outputs/chart.png"). There is no network, and CPU time, memory, processes, file size,
    output and wall-clock time are limited: print summaries, not whole tables. Nothing is
    kept between calls except the workspace files.

    Args:
        code: The whole program to run (each call starts fresh).
        language: "python" or "bash".
    """
    settings = ctx.settings.sandbox
    if language == "bash" and not settings.shell:
        raise ToolRetry("bash is switched off here (sandbox.shell = false): write Python")
    if not code.strip():
        raise ToolRetry("the code is empty: pass the whole program to run")
    if len(code) > _MAX_CODE_CHARS:
        raise ToolRetry(
            f"the code is {len(code):,} characters (at most {_MAX_CODE_CHARS:,}): put data "
            "in a workspace file and read it from the code"
        )
    ready = probe(settings)
    if not ready.ok:
        raise ToolRetry(f"code cannot run here: {ready.detail}")
    return await run_code_in_sandbox(settings, ready, ctx.workspace, ctx.run_id, code, language)


def register(registry: ToolRegistry, settings: Settings) -> None:
    """Offer ``run_code`` if the sandbox works here, else say why not."""
    ready = probe(settings.sandbox)
    if ready.ok:
        registry.register(run_code)
    else:
        registry.mark_unavailable(run_code.name, f"{ready.detail}; code never runs unsandboxed")
