"""The library's usage errors: an entry that is not there, a name already taken."""

from __future__ import annotations

from core.errors import UsageError


class EntryNotFoundError(UsageError):
    """No library entry has this id or name."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(
            f"no agent or cohort named or with id {key!r} in the library",
            hint="look it up with find_cohorts / find_agents, or save it first",
        )


class NameTakenError(UsageError):
    """Another entry is already saved under this name."""

    def __init__(self, name: str, entry_id: str) -> None:
        self.name = name
        self.entry_id = entry_id
        super().__init__(
            f"the name {name!r} already belongs to library entry {entry_id}",
            hint="choose another name, or save with replace=True to move the name",
        )
