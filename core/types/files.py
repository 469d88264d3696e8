"""Files people attach in the chat, as a request (and its agents) know them."""

from __future__ import annotations

from core.types._base import Frozen

# Where a run's workspace keeps what people attached.
INPUTS = "inputs/"


class AttachedFile(Frozen):
    """A file a person attached to a request or a reply, kept in the run's workspace at
    ``path`` (under ``inputs/``)."""

    path: str
    size: int
    mime: str

    def describe(self) -> str:
        """``inputs/sales.csv (2.1 KB, text/csv)``: how the planner and agents see it."""
        return f"{self.path} ({human_size(self.size)}, {self.mime})"


def human_size(n: int) -> str:
    """``2.1 KB``: a size as people read it."""
    if n < 1024:
        return f"{n} B"
    value = n / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"
