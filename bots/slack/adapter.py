"""Slack as the chat layer sees it (``bots.chat.ports.Adapter``): its renderer, its
transport over the bot's Web API client, and its limits from ``[slack]`` over ``[chat]``.
What it keeps is in the chat layer's store, under ``{redis.key_prefix}:slack:``."""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient

from bots.chat.outbox import Outbox
from bots.chat.ports import Adapter, Limits
from bots.chat.store import ChatStore
from bots.chat.threads import Threads
from bots.slack.assistant import AssistantStatus
from bots.slack.file_upload import FileSender
from bots.slack.render import SlackRenderer
from bots.slack.stream import SlackStreamer
from bots.slack.text import SECTION_LIMIT
from bots.slack.transport import SlackTransport
from core.config import SlackSettings
from core.services import Services

PLATFORM = "slack"


def slack_limits(section: SlackSettings) -> Limits:
    """The limits set in ``[slack]`` (over ``[chat]``); a message holds one section
    (3,000 characters)."""
    return Limits.of(section, message_chars=SECTION_LIMIT)


def slack_threads(svc: Services) -> Threads:
    return Threads(ChatStore.of(svc, PLATFORM))


def slack_assistant(svc: Services, client: AsyncWebClient) -> AssistantStatus:
    """The threads' assistant status over ``client`` (bots.slack.assistant)."""
    return AssistantStatus(client, ChatStore.of(svc, PLATFORM))


def slack_adapter(
    svc: Services,
    client: AsyncWebClient,
    files: FileSender | None = None,
    assistant: AssistantStatus | None = None,
) -> Adapter:
    """Slack over ``client``; ``files`` uploads the runs' own files and ``assistant``
    sets the threads' assistant status (each made here if not given); results are
    streamed where Slack lets them (``bots.slack.stream``)."""
    limits = slack_limits(svc.settings.slack)
    outbox = Outbox(ChatStore.of(svc, PLATFORM))
    if files is None:
        files = FileSender(outbox, client, svc.workspace, limits.outbox_max_age_s)
    assistant = assistant if assistant is not None else slack_assistant(svc, client)
    keep_s = limits.outbox_max_age_s
    streamer = SlackStreamer(client, outbox.store, svc.store, keep_s)
    transport = SlackTransport(client, files, assistant, streamer)
    return Adapter(PLATFORM, "Slack", SlackRenderer(), transport, limits)
