"""The chat settings: ``[chat]``, what every chat platform shares, and the platforms'
own sections (``[slack]``, ``[discord]``, ``[web_chat]``) holding only what differs.

A platform section is ``[chat]`` with the platform's own values laid over it
(:func:`with_shared_chat`, run on the raw settings before they are validated): a key set
in a platform's section (in config.toml or ``CARAMBA_SLACK__…``) wins, else the key set
in ``[chat]`` (config.toml or ``CARAMBA_CHAT__…``), else the platform's default (where
its limits differ: Discord's 2,000-character messages, 10 files of 10 MiB), else
``[chat]``'s. Every shared key may still be set in a platform's section, as before
``[chat]`` existed. The web chat's section is ``[web_chat]`` (``[web]`` is the web
tools'). Tokens come only from the environment. The settings object is
:class:`core.config.Settings`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# The sections laid over [chat], by their name in Settings.
CHAT_PLATFORMS = ("slack", "discord", "web_chat")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ChatSettings(_Section):
    """``[chat]``: how the chat layer (bots/chat) paces, relays and delivers on every
    platform; each platform's section may set any of these again."""

    # The run's status message is edited at most this often.
    status_interval_s: float = Field(1.0, ge=0)
    # A longer final result is posted cut short and uploaded whole as a file.
    result_file_chars: int = Field(8000, ge=1000)
    # A bot process holds each run it relays for this long, renewed while it lives; a run
    # whose holder died is taken over by another bot process after it lapses.
    relay_lease_s: float = Field(3.0, ge=0.2, le=3600)
    # Every post and update goes through a durable outbox in Redis: retried with back-off
    # (up to outbox_retry_max_s between tries) until it succeeds or is this old.
    outbox_max_age_s: float = Field(86_400, gt=0)
    outbox_retry_max_s: float = Field(60.0, gt=0)
    # Files attached to a request, or to a reply in a run's thread, go into the run's
    # workspace under inputs/ (within [workspace]'s caps too): at most this many per
    # message, each at most this big, none whose name ends in a blocked extension.
    attachment_max_files: int = Field(10, ge=0)
    attachment_max_bytes: int = Field(10_485_760, ge=1)
    attachment_blocked: tuple[str, ...] = tuple(
        "exe dll msi bat cmd com scr ps1 vbs jar apk app dmg pkg deb rpm so dylib bin elf".split()
    )
    # When a run ends, the files under outputs/ in its workspace are sent to its thread:
    # at most this many, and this many bytes in all (a note lists the rest).
    outputs_max_files: int = Field(10, ge=0)
    outputs_max_bytes: int = Field(52_428_800, ge=0)
    # Requests by bots are ignored (two bots could keep each other planning), but by
    # these bot ids (Slack: B… or U…; Discord: bot user ids).
    allow_bots: tuple[str, ...] = ()


class SlackSettings(ChatSettings):
    """The Slack adapter (bots/slack); its tokens come only from SLACK_* variables."""

    api_url: str = "https://slack.com/api/"
    # The hosts the bot token may be sent to for a file's bytes (and api_url's host).
    file_hosts: tuple[str, ...] = ("files.slack.com",)


class DiscordSettings(ChatSettings):
    """The Discord adapter (bots/discord); its token comes only from DISCORD_BOT_TOKEN."""

    # The REST API `caramba doctor` checks the token against (GET /users/@me).
    api_url: str = "https://discord.com/api/v10"
    # Besides the requester and [approval] approvers: Discord user ids, and roles (by id or
    # name), whose members may approve, edit, reject or cancel any run.
    approvers: tuple[str, ...] = ()
    approver_roles: tuple[str, ...] = ()
    # The privileged Message Content intent: replies in a run's thread reach its agents
    # without mentioning the bot. Off: only messages that mention the bot are read.
    message_content: bool = True
    # The /caramba command is synced on start (else only with `caramba discord --sync`),
    # to this guild only when set (at once), else globally (Discord may take a while).
    sync_commands: bool = True
    command_guild: str = ""
    # What differs from [chat]: ~5 edits per 5 s per channel, shared with the thread's
    # other messages; messages of at most 2,000 characters; at most 10 files and 10 MiB
    # per message.
    status_interval_s: float = Field(1.5, ge=0)
    result_file_chars: int = Field(6000, ge=2000)
    outputs_max_files: int = Field(10, ge=0, le=10)
    outputs_max_bytes: int = Field(10_485_760, ge=0)


class WebChatSettings(ChatSettings):
    """The web chat of ``caramba web`` (bots/web/chat): the status edits cost a Redis
    write only, and a web process may pause longer than a bot (a slow page render)."""

    status_interval_s: float = Field(0.5, ge=0)
    relay_lease_s: float = Field(5.0, ge=0.2, le=3600)


def with_shared_chat(data: Any) -> Any:
    """The raw settings ``data`` with ``[chat]``'s keys laid under each platform's section
    (a key the platform's section sets wins)."""
    if not isinstance(data, dict) or "chat" not in data:
        return data
    shared = _set_keys(data["chat"])
    if not shared:
        return data
    out = dict(data)
    for platform in CHAT_PLATFORMS:
        out[platform] = {**shared, **_set_keys(data.get(platform))}
    return out


def _set_keys(section: Any) -> dict[str, Any]:
    """The keys a section sets: a table as read, or a model's explicitly set fields."""
    if isinstance(section, BaseModel):
        return section.model_dump(exclude_unset=True)
    return dict(section) if isinstance(section, dict) else {}
