"""``caramba run``: a task planned (or a saved cohort taken), the proposal decided, the
run followed with the person's input, then a rating and a name for a run that ran."""

from __future__ import annotations

import asyncio
import sys

from rich.console import Console
from rich.prompt import Prompt

from bots.console import proposal
from bots.console.lines import Lines
from bots.console.logs import FileLogs
from bots.console.render import EventPrinter
from bots.console.session import RunConsole
from bots.console.text import escape
from core.config import Settings
from core.errors import UsageError
from core.planning import plan
from core.process import wiring
from core.process.embedded import embedded_services, run_proposal
from core.runs import learning
from core.runs.approval import Approve, Decision, ProposalView
from core.runs.control import start_run
from core.runs.edits import AgentEdit, Edit, EditProblem, apply_edit
from core.services import Services
from core.types.cohort import Cohort
from core.types.run import RunState, RunStatus


async def run_task(
    settings: Settings,
    console: Console,
    task: str,
    printer: EventPrinter,
    lines: Lines,
    logs: FileLogs,
    *,
    yes: bool,
    cohort: str,
) -> RunState:
    """``caramba run``'s flow: plan (or take a saved cohort), the card, the run followed
    with the person's input, then a rating and a name for a run that ran."""
    stream = lines.prompt_stream()

    def asked(question: str) -> str:
        try:
            return str(
                Prompt.ask(question, console=console, default="", show_default=False, stream=stream)
            )
        except EOFError:  # nobody left to answer: skipped
            console.print()
            return ""

    async def ask(svc: Services, view: ProposalView) -> Decision:
        if yes:
            console.print(proposal.card(view))
            return Approve()
        run = await svc.store.get_run(view.run_id)

        def check(change: AgentEdit) -> list[EditProblem]:
            """Core's problems with ``change`` to the proposal as it is now."""
            return apply_edit(run, Edit(agents=(change,)), svc.tools, svc.settings)[1]

        try:
            return await asyncio.to_thread(proposal.ask, console, view, stream, check)
        except EOFError:
            console.print()
            raise UsageError(
                "the input ended before anyone decided about the proposal: nothing was run",
                hint="answer at a terminal, or pass --yes to approve without asking",
            ) from None

    llm = wiring.build_llm(settings)  # looked up here: tests put a scripted model in
    logs.quiet_litellm()  # litellm adds its own stderr handlers when it loads
    async with embedded_services(settings, llm) as svc:
        printer.show_outputs(svc)  # the files the agents made, under the result
        runner = RunConsole(svc, console, printer, lines, hold_empty=not sys.stdin.isatty())
        library = await svc.library()
        if cohort:
            entry = await library.get_by_name(cohort)
            if entry.cohort is None:
                raise UsageError(
                    f"{cohort!r} names an agent, not a cohort",
                    hint="pass the name a cohort was saved under",
                )
            designed: Cohort | None = entry.cohort.model_copy(update={"task": task})
        else:
            with console.status("Planning…"):
                outcome = await plan(settings, svc.llm, svc.tools, task, library=library)
            # A note (the model could not route or design) says the reason and what to do.
            reason = outcome.decision.reason
            if outcome.note and reason in outcome.note:
                reason = outcome.note
            console.print(
                f"[dim]{outcome.path}: {escape(reason)} "
                f"({outcome.llm_calls} planning calls, "
                f"{outcome.usage.total_tokens} tokens)[/]"
            )
            if outcome.direct is not None:
                return await runner.follow(await start_run(svc, task, outcome.direct))
            designed = outcome.cohort
        assert designed is not None
        final = await run_proposal(
            svc,
            task,
            designed,
            lambda view: ask(svc, view),
            on_event=printer,
            on_message=lambda text: console.print(escape(text)),
            library=library,
            follow_run=runner.follow,
        )
        # Only a run that ran is named (not a rejected or cancelled one), and only a
        # result is rated: a failure is not offered for rating as if it were one.
        ran = final.status in (RunStatus.COMPLETED, RunStatus.FAILED)
        if ran and final.cohort is not None and not yes:
            if final.status is RunStatus.COMPLETED:
                stars = await asyncio.to_thread(asked, "Rate the result 1-5 (enter: skip)")
                if stars.strip() in {"1", "2", "3", "4", "5"}:
                    await learning.rate(svc, final, stars=int(stars))
            name = await asyncio.to_thread(asked, "Save this cohort as (enter: skip)")
            if name.strip():
                await learning.save_as(library, final, name.strip())
                console.print(
                    f"Saved as {escape(name.strip())}: "
                    f'caramba run --cohort {escape(name.strip())} "…" runs it again.'
                )
        return final
