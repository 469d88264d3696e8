"""Redis key names of the agent library (``core.state.library_store``: its entries,
names, BM25 statistics, format) and of learning from ended runs (``core.runs.learning``:
which runs ended, who records them, which are recorded). A mixin of
:class:`core.state.keys.Keys`; part of the state room (``core.state``)."""

from __future__ import annotations


class LibraryKeys:
    """The library's and learning's keys (``Keys`` has them all)."""

    prefix: str

    def ended_runs(self) -> str:
        """Set of runs that ended and whose outcome the library has not recorded yet."""
        return f"{self.prefix}:runs:ended"

    def learning_claims(self) -> str:
        """Hash run id → when a process claimed recording its outcome."""
        return f"{self.prefix}:runs:ended:claimed"

    def learned(self, run_id: str) -> str:
        """Set once the run's outcome is in the library."""
        return f"{self.prefix}:run:{run_id}:learned"

    def library(self) -> str:
        """The agent library's keys start with this (``core.state.library_store``)."""
        return f"{self.prefix}:library"

    def library_names(self) -> str:
        """Hash name → entry id of the library's named entries."""
        return f"{self.library()}:names"

    def library_entry(self, entry_id: str) -> str:
        """Hash: a library entry (kind, payload, text, terms, name, its track record)."""
        return f"{self.library()}:entry:{entry_id}"

    def library_lexical(self, kind: str, field: str) -> str:
        """Hash term → entries of ``kind`` holding it in ``field`` (+ ``#docs``,
        ``#length``): the BM25 statistics (``core.library.lexical_store``)."""
        return f"{self.library()}:lexical:{kind}:{field}"

    def library_lexical_version(self) -> str:
        return f"{self.library()}:lexical:version"

    def library_format(self) -> str:
        """The index format the library's vectors are in (``core.library.upgrade``)."""
        return f"{self.library()}:format"

    def library_run_agents(self, run_id: str) -> str:
        """Set of the library entries a run's agents came from (``core.runs.learning``)."""
        return f"{self.library()}:run:{run_id}:agents"
