"""Paid work is kept: a model's answer is saved in Redis as soon as it arrives, so a
delivery of the same work after a crash reuses it instead of paying for the call again.

- A turn's response is saved under its agent and sequence number, before its tools run,
  and dropped in the turn's save transaction — unless every tool it calls is read-only
  and answers at once (``core.agent.phases.model`` says why that round trip is spared).
  A redelivered turn reads the messages the first delivery read (its pending ones, not
  newer ones), so its request is the same; the saved answer is reused when the request's
  fingerprint matches. With the call keeper
  (``llm.keeper``) the keeper process saves it, the same way (``dump``, ``TTL_S``).
- A request's planning calls (router, planner, prompt creator) are saved under a digest
  of their request, for the planning job's next delivery (``RememberingLLM``).
"""

from __future__ import annotations

import hashlib
from typing import Any

from core.llm.base import LLM, LLMRequest, LLMResponse
from core.services import Services
from core.state import answers
from core.state.store import PipelineWrite
from core.types._base import Frozen
from core.types.run import RunHead

# Saved answers outlive any sensible redelivery of their turn, then go.
TTL_S = 24 * 3600


class SavedResponse(Frozen):
    fingerprint: str
    response: LLMResponse


def fingerprint(request: LLMRequest) -> str:
    """Cheap: the thread's length and its last two messages (what a redelivery could
    change), not a digest of the whole thread."""
    tail = "".join(m.model_dump_json() for m in request.messages[-2:])
    digest = hashlib.blake2b(tail.encode(), digest_size=12).hexdigest()
    return f"{request.model}:{len(request.messages)}:{digest}"


def parse(raw: Any) -> SavedResponse | None:
    """The saved answer of a turn (``Store.turn_start`` reads it with the turn)."""
    return None if raw is None else SavedResponse.model_validate_json(raw)


def dump(request: LLMRequest, response: LLMResponse) -> str:
    """What is saved for a turn: the answer and its request's fingerprint (JSON)."""
    return SavedResponse(fingerprint=fingerprint(request), response=response).model_dump_json()


async def save(
    svc: Services, request: LLMRequest, seq: int, response: LLMResponse, *, read_head: bool = False
) -> RunHead | None:
    """Keep the turn's answer; with ``read_head``, read the run's head in the same round
    trip (what the turn checks next: was the run cancelled meanwhile?)."""
    field = svc.store.keys.response_field(request.agent_id, seq)
    answer, run_id = dump(request, response), request.run_id
    if read_head:
        return await answers.keep_and_read_head(svc.store, run_id, field, answer, TTL_S)
    await answers.keep(svc.store, run_id, field, answer, TTL_S)
    return None


def forget_write(svc: Services, run_id: str, agent_id: str, seq: int) -> PipelineWrite:
    """Drop the turn's saved answer (in its save transaction: the turn is applied)."""
    return answers.forget_turn_write(svc.store, run_id, agent_id, seq)


class RememberingLLM:
    """``inner``, with every answer kept under ``run_id`` by a digest of its request, and
    reused for the same request (a planning job delivered again after a crash)."""

    def __init__(self, inner: LLM, svc: Services, run_id: str) -> None:
        self.inner, self.svc, self.run_id = inner, svc, run_id
        self.reused = 0
        self.fields: set[str] = set()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        body = request.model_dump_json(exclude={"run_id", "agent_id", "agent_name"})
        field = "plan:" + hashlib.blake2b(body.encode(), digest_size=16).hexdigest()
        self.fields.add(field)
        raw = await answers.get(self.svc.store, self.run_id, field)
        if raw is not None:
            self.reused += 1
            return LLMResponse.model_validate_json(raw)
        response = await self.inner.complete(request)
        await answers.keep(self.svc.store, self.run_id, field, response.model_dump_json(), TTL_S)
        return response

    async def forget(self) -> None:
        """The work is done (its outcome is saved): drop the answers kept for it."""
        await answers.forget(self.svc.store, self.run_id, self.fields)

    async def aclose(self) -> None:
        """The inner model belongs to the process's services: left open."""
