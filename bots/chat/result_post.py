"""A run's result as the posts that end its thread, on any chat platform: the result (or
why the run failed); a long one as a file with a preview (or, if the file cannot be
uploaded, in pieces); a completed one streamed where the platform streams messages. The
last message has buttons to rate a run that completed; a failed run shows why, without
them. Used by the run's relay (``bots.chat.relay``)."""

from __future__ import annotations

from dataclasses import replace

from bots.chat.outbox import Entry
from bots.chat.outputs import result_file
from bots.chat.ports import Limits, Renderer, Result
from core.types.events import RunFinished
from core.types.run import RunStatus


def result_entries(
    run_id: str, event: RunFinished, limits: Limits, renderer: Renderer, streams: bool
) -> list[Entry]:
    """The outbox entries of ``event``'s result in run ``run_id``'s thread."""
    ok = event.status is RunStatus.COMPLETED
    body = event.result if ok else (event.error or event.status.value)
    result = Result(
        run_id=run_id,
        status=event.status,
        text=body or "(no result)",
        tokens=event.tokens,
        cost_usd=event.cost_usd,
        # A failure is said as one (its reason), never offered for rating like a result.
        rateable=ok and bool(run_id),
    )

    def entries(what: str, shown: Result) -> list[Entry]:
        return [Entry.post(run_id, what, m) for m in renderer.render(shown)]

    whole = entries("result", result)
    if ok and event.result and len(event.result) > limits.result_file_chars:
        file = result_file(run_id, event.result)
        upload = Entry(
            run=run_id,
            what="result file",
            kind="upload",
            file=file,
            then=tuple(entries("result", replace(result, file=file.filename))),
            instead=tuple(whole),
        )
        return [upload]
    if ok and streams:
        (message,) = renderer.render(replace(result, streamed=True))
        stream = Entry.post(run_id, "result", message)
        return [stream.model_copy(update={"kind": "stream", "instead": tuple(whole)})]
    return whole
