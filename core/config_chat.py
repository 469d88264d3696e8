"""The chat platforms' sections of the settings (``[slack]``, ``[discord]``); their tokens
come only from the environment. The settings object is :class:`core.config.Settings`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SlackSettings(_Section):
    """The Slack adapter (bots/slack); its tokens come only from SLACK_* variables."""

    api_url: str = "https://slack.com/api/"
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
    # Files attached to a mention, or to a reply in a run's thread, go into the run's
    # workspace under inputs/ (within [workspace]'s caps too): at most this many per
    # message, each at most this big, none whose name ends in a blocked extension.
    attachment_max_files: int = Field(10, ge=0)
    attachment_max_bytes: int = Field(10_485_760, ge=1)
    attachment_blocked: tuple[str, ...] = tuple(
        "exe dll msi bat cmd com scr ps1 vbs jar apk app dmg pkg deb rpm so dylib bin elf".split()
    )
    # The hosts the bot token may be sent to for a file's bytes (and api_url's host).
    file_hosts: tuple[str, ...] = ("files.slack.com",)
    # When a run ends, the files under outputs/ in its workspace are uploaded to its
    # thread: at most this many, and this many bytes in all (a note lists the rest).
    outputs_max_files: int = Field(10, ge=0)
    outputs_max_bytes: int = Field(52_428_800, ge=0)
    # Mentions by bots are ignored (two bots could keep each other planning), but by
    # these bot ids (B…) or bot user ids (U…).
    allow_bots: tuple[str, ...] = ()


class DiscordSettings(_Section):
    """The Discord adapter (bots/discord); its token comes only from DISCORD_BOT_TOKEN."""

    # The REST API `caramba doctor` checks the token against (GET /users/@me).
    api_url: str = "https://discord.com/api/v10"
    # Besides the requester and [approval] approvers: Discord user ids, and roles (by id or
    # name), whose members may approve, edit, reject or cancel any run.
    approvers: tuple[str, ...] = ()
    approver_roles: tuple[str, ...] = ()
    # Bots are ignored, but for these bot user ids.
    allow_bots: tuple[str, ...] = ()
    # The privileged Message Content intent: replies in a run's thread reach its agents
    # without mentioning the bot. Off: only messages that mention the bot are read.
    message_content: bool = True
    # The /caramba command is synced on start (else only with `caramba discord --sync`),
    # to this guild only when set (at once), else globally (Discord may take a while).
    sync_commands: bool = True
    command_guild: str = ""
    # The run's status message is edited at most this often (Discord: ~5 edits per 5 s
    # per channel, shared with the thread's other messages).
    status_interval_s: float = Field(1.5, ge=0)
    # A longer final result is posted as a file with its beginning; shorter ones in
    # messages of at most 2,000 characters.
    result_file_chars: int = Field(6000, ge=2000)
    # As in [slack]: the lease a bot process holds on each run it relays, and the durable
    # outbox's longest wait between tries and how old an undelivered post may get.
    relay_lease_s: float = Field(3.0, ge=0.2, le=3600)
    outbox_retry_max_s: float = Field(60.0, gt=0)
    outbox_max_age_s: float = Field(86_400, gt=0)
    # Files attached to a request or a reply in a run's thread (workspace inputs/).
    attachment_max_files: int = Field(10, ge=0)
    attachment_max_bytes: int = Field(10_485_760, ge=1)
    attachment_blocked: tuple[str, ...] = tuple(
        "exe dll msi bat cmd com scr ps1 vbs jar apk app dmg pkg deb rpm so dylib bin elf".split()
    )
    # The files under outputs/ sent to the thread when a run ends (Discord takes at most
    # 10 files and 10 MiB per message).
    outputs_max_files: int = Field(10, ge=0, le=10)
    outputs_max_bytes: int = Field(10_485_760, ge=0)
