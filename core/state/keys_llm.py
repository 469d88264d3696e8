"""Redis key names of the model calls: the call keeper's stream, its heartbeats and
replies, a kept call's claim and result, the capability ladder's rungs
(``core.agent.keeper_client``, ``core.llm.capabilities``). A mixin of
:class:`core.state.keys.Keys`; part of the state room (``core.state``)."""

from __future__ import annotations


class LlmKeys:
    """The model calls' keys (``Keys`` has them all)."""

    prefix: str

    def llm_call(self, run_id: str, agent_id: str, seq: int) -> str:
        """Set (NX, with a TTL) while the call keeper makes turn ``seq``'s model call:
        ``<call id> <fingerprint>`` (``core.agent.keeper_client``)."""
        return f"{self.prefix}:run:{run_id}:llm-call:{agent_id}:{seq}"

    def llm_result(self, run_id: str, call_id: str) -> str:
        """The outcome of a kept call (its answer or its error), for whoever waits."""
        return f"{self.prefix}:run:{run_id}:llm-result:{call_id}"

    def llm_calls(self) -> str:
        """Stream of model calls handed to the call keepers (group ``keepers``)."""
        return f"{self.prefix}:llm:calls"

    def llm_keepers(self) -> str:
        """Set with a short TTL while a call keeper is alive (its heartbeat)."""
        return f"{self.prefix}:llm:keepers"

    def llm_rungs(self) -> str:
        """Hash: model name → its rung of the capability ladder (``core.llm.capabilities``),
        so every process starts where others got to; expires a day after the last change."""
        return f"{self.prefix}:llm:rungs"

    def llm_replies(self, process: str) -> str:
        """Pub/sub channel: ids of the kept calls of one requesting process that ended."""
        return f"{self.prefix}:llm:replies:{process}"
