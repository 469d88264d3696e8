"""The chat layer's Redis key names, in one place: everything the chat layer and its
adapters keep lives under ``{redis.key_prefix}:{platform}:`` (for Slack, the keys it
always had). Only :mod:`bots.chat.store` and its outbox mixin
(:mod:`bots.chat.store_outbox`) use them; core's keys are ``core.state.keys``."""

from __future__ import annotations


class ChatKeys:
    """The chat layer's key names, for one platform: ``{key_prefix}:{platform}:…``."""

    def __init__(self, key_prefix: str, platform: str) -> None:
        self.prefix = f"{key_prefix}:{platform}"
        self.relays = f"{self.prefix}:relays"  # run id → the relay's progress (JSON)

    # -- the shared layer (bots.chat) -------------------------------------------------
    def event(self, event_id: str) -> str:
        return f"{self.prefix}:event:{event_id}"

    def thread(self, channel: str, thread: str) -> str:
        return f"{self.prefix}:thread:{channel}:{thread}"

    def lease(self, run_id: str) -> str:
        return f"{self.prefix}:lease:{run_id}"

    def outbox(self, run_id: str) -> str:
        return f"{self.prefix}:outbox:{run_id}"

    def outbox_status(self, run_id: str) -> str:
        return f"{self.prefix}:outbox:{run_id}:status"

    @property
    def redraws(self) -> str:
        """The redraw outboxes with something to deliver (a hash: queue → place, JSON)."""
        return f"{self.prefix}:redraws"

    @property
    def drops(self) -> str:
        """The messages the platform never showed (a capped stream: run, what, why)."""
        return f"{self.prefix}:drops"

    # -- Slack: progress kept beside the run's outbox -----------------------------------
    def stream(self, run_id: str, key: str) -> str:
        return f"{self.prefix}:outbox:{run_id}:stream:{key}"

    def upload(self, run_id: str, key: str) -> str:
        return f"{self.prefix}:outbox:{run_id}:upload:{key}"

    def assistant_off(self, channel: str, thread: str) -> str:
        return f"{self.prefix}:assistant:off:{channel}:{thread}"

    # -- Discord --------------------------------------------------------------------------
    def seen(self, what: str) -> str:
        return f"{self.prefix}:seen:{what}"

    def result(self, message_id: str) -> str:
        return f"{self.prefix}:result:{message_id}"

    def name(self, user_id: str) -> str:
        return f"{self.prefix}:name:{user_id}"

    def files(self, key: str) -> str:
        return f"{self.prefix}:files:{key}"

    # -- the web chat -----------------------------------------------------------------
    def chat(self, thread: str) -> str:
        return f"{self.prefix}:chat:{thread}"

    def files_sent(self, key: str) -> str:
        return f"{self.prefix}:files-sent:{key}"
