"""Redis key names of what people are asked and what they said: an agent's open
questions, tool calls waiting for approval, forms an MCP server asks to be filled in,
votes on a result and the names people were seen under (``core.runs.people``). A mixin of
:class:`core.state.keys.Keys`; part of the state room (``core.state``)."""

from __future__ import annotations


class PeopleKeys:
    """The keys of people's questions, approvals, forms and votes (``Keys`` has them all)."""

    prefix: str

    def questions(self, run_id: str) -> str:
        """Hash question id → open question (JSON) of an agent waiting for a person."""
        return f"{self.prefix}:run:{run_id}:questions"

    def approvals(self, run_id: str) -> str:
        """Hash of the run's tool calls waiting for (or given) a person's approval:
        ``<id>`` → the request, ``decision:<id>``, ``started:<id>``, ``result:<id>``,
        ``grant:<tool>`` (``core.state.approvals``)."""
        return f"{self.prefix}:run:{run_id}:approvals"

    def forms(self, run_id: str) -> str:
        """Hash form id → open form (JSON) an MCP tool call waits on (``core.state.forms``)."""
        return f"{self.prefix}:run:{run_id}:forms"

    def form_answer(self, run_id: str, form_id: str) -> str:
        """The answer to an open form, written as it is claimed, read by the waiting call."""
        return f"{self.prefix}:run:{run_id}:form-answer:{form_id}"

    def vote(self, run_id: str, person_id: str) -> str:
        """A person's vote on a run's result (``up``/``down``, with a TTL): one each."""
        return f"{self.prefix}:run:{run_id}:vote:{person_id}"

    def old_votes(self, run_id: str, person_id: str) -> tuple[str, str]:
        """Where Slack and Discord kept a vote before the people room (read only, for
        runs rated across the upgrade; they lapse with their 90-day TTL)."""
        return (
            f"{self.prefix}:slack:feedback:{run_id}:{person_id}",
            f"{self.prefix}:discord:vote:{run_id}:{person_id}",
        )

    def person_name(self, person_id: str) -> str:
        """The name a person was last seen under by the people room (with a TTL)."""
        return f"{self.prefix}:person:{person_id}:name"

    def hinted(self, run_id: str, person_id: str) -> str:
        """Set (with a TTL) once a person was told why their reply was not delivered."""
        return f"{self.prefix}:run:{run_id}:hinted:{person_id}"
