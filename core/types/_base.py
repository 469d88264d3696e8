from __future__ import annotations

import os
import time

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Immutable value object."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def new_id(prefix: str) -> str:
    """A short, unique, readable id such as ``run_3f9c2a7d1b``: 40 random bits, as many
    as ``uuid4().hex[:10]`` gave, without its object (a turn makes several)."""
    return f"{prefix}_{os.urandom(5).hex()}"


def now() -> float:
    return time.time()
