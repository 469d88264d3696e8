"""Side effects a tool asks for during a turn, processed exactly once after it is saved."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from core.types._base import Frozen


class _IntentBase(Frozen):
    run_id: str
    agent_id: str
    # Unique per run/agent/turn/index; processors use it to do the effect once.
    key: str = ""


class PostToChat(_IntentBase):
    kind: Literal["post_to_chat"] = "post_to_chat"
    text: str
    filename: str | None = None


class Notify(_IntentBase):
    kind: Literal["notify"] = "notify"
    who: str
    text: str


class Remind(_IntentBase):
    kind: Literal["remind"] = "remind"
    text: str
    after_s: float = Field(gt=0)


Intent = Annotated[PostToChat | Notify | Remind, Field(discriminator="kind")]
INTENT: TypeAdapter[Intent] = TypeAdapter(Intent)
