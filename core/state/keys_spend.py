"""Redis key names of team spend (``core.state.spend``): the cost ledger of each month
(rows, totals, runs folded), the runs not folded yet, budgets set from chat, asks to go
over a budget and their approvals, the warnings said. A mixin of
:class:`core.state.keys.Keys`; part of the state room (``core.state``)."""

from __future__ import annotations


class SpendKeys:
    """The spend ledger's and budgets' keys (``Keys`` has them all)."""

    prefix: str

    def spend_open(self) -> str:
        """Hash run id → where its cost goes (``channel team``), for runs not folded into
        the ledger yet (their live usage counts when a budget is checked)."""
        return f"{self.prefix}:spend:open"

    def spend_folded(self, month: str) -> str:
        """Set of the run ids folded into ``month``'s ledger (the claim: counted once)."""
        return f"{self.prefix}:spend:{month}:folded"

    def spend_rows(self, month: str) -> str:
        """Hash ``<run id>|<model>`` → a ``SpendRow`` (JSON) of ``month``."""
        return f"{self.prefix}:spend:{month}:rows"

    def spend_totals(self, month: str, by: str) -> str:
        """Hash key → USD of ``month``, ``by`` channel, team, person, model or day."""
        return f"{self.prefix}:spend:{month}:by:{by}"

    def spend_names(self) -> str:
        """Hash place key or person id → the name people read (last seen)."""
        return f"{self.prefix}:spend:names"

    def spend_budgets(self) -> str:
        """Hash place key → a ``ChannelBudget`` set from chat (JSON; wins over config)."""
        return f"{self.prefix}:spend:budgets"

    def spend_asks(self) -> str:
        """Hash run id → the over-budget ask its request waits on (JSON)."""
        return f"{self.prefix}:spend:asks"

    def spend_pass(self, run_id: str) -> str:
        """Set (with a TTL) once a request over budget was approved: planning goes on."""
        return f"{self.prefix}:spend:pass:{run_id}"

    def spend_warned_in(self, month: str) -> str:
        """Hash place key → the run in whose thread its warning about ``month`` is said
        (the 80 % line, once per place and month: at a request, or when an ended run
        takes the month past it)."""
        return f"{self.prefix}:spend:{month}:warned-in"

    def spend_planned(self) -> str:
        """Hash run id → what planning an open run cost (USD), so a budget check reads no
        run record; dropped when the run is folded."""
        return f"{self.prefix}:spend:planned"

    def spend_images(self, run_id: str) -> str:
        """Hash image model → USD its calls cost a run (folded with the run's usage)."""
        return f"{self.prefix}:run:{run_id}:spend-images"
