from __future__ import annotations

import time
import uuid

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Immutable value object."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def new_id(prefix: str) -> str:
    """A short, unique, readable id such as ``run_3f9c2a7d1b``."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def now() -> float:
    return time.time()
