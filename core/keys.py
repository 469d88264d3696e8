"""Redis key names, in one place."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Keys:
    prefix: str = "caramba"

    def run(self, run_id: str) -> str:
        return f"{self.prefix}:run:{run_id}"

    def run_usage(self, run_id: str) -> str:
        return f"{self.prefix}:run:{run_id}:usage"

    def agents(self, run_id: str) -> str:
        """Set of the run's agent ids."""
        return f"{self.prefix}:run:{run_id}:agents"

    def agent(self, run_id: str, agent_id: str) -> str:
        """Hash: ``seq`` and ``state`` (JSON), written together."""
        return f"{self.prefix}:run:{run_id}:agent:{agent_id}"

    def deliveries(self, run_id: str) -> str:
        """Hash ``<agent>:<seq>`` → how many times that turn was started."""
        return f"{self.prefix}:run:{run_id}:deliveries"

    def events(self, run_id: str) -> str:
        return f"{self.prefix}:run:{run_id}:events"

    def runs_index(self) -> str:
        return f"{self.prefix}:runs"
