"""A streamed chat completion (``stream: true``, server-sent events) read into the body a
call without streaming would have got: content deltas joined, tool-call deltas joined by
their ``index``, usage from the last chunk (``stream_options.include_usage``).

An event that is not a JSON chunk, or a stream that ends before the answer does, is a
:class:`~core.llm.failures.CallFailure` saying so; an error event is the server's error.
Owns that reading; calls :mod:`core.llm.failures` only.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import Any

from core.llm.failures import CallFailure, empty_choices
from core.llm.http_failures import parse_json

_SNIPPET = 200


class Completion:
    """The chunks of one stream so far, and the completion they add up to."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] | None = None
        self.finish: str | None = None
        self.choices = 0
        self.done = False

    def add(self, data: str) -> None:
        """One event's data: a chunk, ``[DONE]``, or an error."""
        if data.strip() == "[DONE]":
            self.done = True
            return
        try:
            chunk = parse_json(data)  # (pydantic-core's, the stdlib's for what it refuses)
        except ValueError:
            chunk = None
        if not isinstance(chunk, dict):
            raise malformed(data)
        if chunk.get("error"):
            raise _error_event(chunk["error"])
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._delta(choice.get("delta") or {})
                self.finish = choice.get("finish_reason") or self.finish
                self.choices += 1

    def _delta(self, delta: dict[str, Any]) -> None:
        if isinstance(delta.get("content"), str):
            self.content.append(delta["content"])
        for call in delta.get("tool_calls") or ():
            slot = self.calls.setdefault(
                int(call.get("index", len(self.calls))), {"id": "", "name": "", "arguments": []}
            )
            function = call.get("function") or {}
            slot["id"] = slot["id"] or call.get("id") or ""
            slot["name"] = slot["name"] or function.get("name") or ""
            if isinstance(function.get("arguments"), str):
                slot["arguments"].append(function["arguments"])

    def body(self) -> dict[str, Any]:
        """The completion, shaped as a non-streamed answer's JSON body."""
        if not self.done and self.finish is None:
            raise CallFailure(
                "the model server's stream ended before the answer did (no finish_reason, no "
                "[DONE])",
                retry=True,
                transient=True,
                max_attempts=2,
            )
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": slot["id"],
                    "type": "function",
                    "function": {"name": slot["name"], "arguments": "".join(slot["arguments"])},
                }
                for _, slot in sorted(self.calls.items())
            ]
        if not self.choices:
            raise empty_choices()
        choices = [{"index": 0, "message": message, "finish_reason": self.finish}]
        return {"choices": choices, "usage": self.usage or {}}


async def read(stream: AsyncIterable[bytes]) -> dict[str, Any]:
    """The completion a stream of SSE bytes (``response.content.iter_any()``) adds up to."""
    completion = Completion()
    pending: list[str] = []
    buffer = b""
    async for piece in stream:
        buffer += piece
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            _line(line, pending, completion)
    if buffer:
        _line(buffer, pending, completion)
    _line(b"", pending, completion)
    return completion.body()


def _line(raw: bytes, pending: list[str], completion: Completion) -> None:
    """One line of the event stream: a blank line ends an event; ``data:`` lines make it."""
    line = raw.decode("utf-8", "replace").rstrip("\r")
    if not line:
        if pending:
            completion.add("\n".join(pending))
            pending.clear()
        return
    if line.startswith(":"):
        return  # a comment (a keep-alive)
    field, _, value = line.partition(":")
    if field == "data":
        pending.append(value.removeprefix(" "))
    elif field not in ("event", "id", "retry"):
        raise malformed(line)


def malformed(data: str) -> CallFailure:
    snippet = " ".join(data.split())
    snippet = snippet if len(snippet) <= _SNIPPET else snippet[:_SNIPPET] + "…"
    return CallFailure(
        "the model server's stream sent an event that is not a chat-completion chunk: check "
        f"llm.api_base (first {_SNIPPET} chars: {snippet})"
    )


def _error_event(error: Any) -> CallFailure:
    said = error.get("message") if isinstance(error, dict) else error
    return CallFailure(
        f"the model server broke off its stream with an error: {said}",
        retry=True,
        transient=True,
        max_attempts=2,
    )
