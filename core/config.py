"""Typed settings: ``config.toml`` loaded once into a frozen object, env vars override.

Environment overrides use the prefix ``CARAMBA_`` and ``__`` between nesting levels:
``CARAMBA_LLM__MODEL``, ``CARAMBA_REDIS__URL``, ``CARAMBA_LIMITS__TURNS_PER_AGENT``.
The config file itself is chosen with ``CARAMBA_CONFIG`` (default: ``./config.toml``, then
the one next to the project). Secrets are read only from the environment, by name.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic import ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from core.config_chat import (
    ChatSettings,
    DiscordSettings,
    SlackSettings,
    WebChatSettings,
    with_shared_chat,
)
from core.config_governance import GovernanceSettings
from core.config_observe import TelemetrySettings, WebUISettings
from core.config_redis import RedisSettings, refuse_password_in_file
from core.config_schedules import ScheduleSettings
from core.config_sections import (
    AgentsSettings,
    ApprovalSettings,
    BusSettings,
    CelerySettings,
    HumansSettings,
    LibrarySettings,
    LimitSettings,
    LLMSettings,
    PlanningSettings,
    PromptSettings,
    SchedulerSettings,
)
from core.config_tools import (
    ImageSettings,
    McpSettings,
    SandboxSettings,
    ToolsSettings,
    WebSettings,
    WorkspaceSettings,
)
from core.errors import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parents[1]
_config_file: ContextVar[Path | None] = ContextVar("caramba_config_file", default=None)


class Settings(BaseSettings):
    """Every setting of Caramba. Build it with :func:`load_settings`."""

    model_config = SettingsConfigDict(
        env_prefix="CARAMBA_",
        env_nested_delimiter="__",
        frozen=True,
        extra="forbid",
    )

    llm: LLMSettings = LLMSettings()
    redis: RedisSettings = RedisSettings()
    limits: LimitSettings = LimitSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    celery: CelerySettings = CelerySettings()
    humans: HumansSettings = HumansSettings()
    approval: ApprovalSettings = ApprovalSettings()
    bus: BusSettings = BusSettings()
    agents: AgentsSettings = AgentsSettings()
    prompts: PromptSettings = PromptSettings()
    library: LibrarySettings = LibrarySettings()
    planning: PlanningSettings = PlanningSettings()
    chat: ChatSettings = ChatSettings()
    slack: SlackSettings = SlackSettings()
    discord: DiscordSettings = DiscordSettings()
    web_chat: WebChatSettings = WebChatSettings()
    workspace: WorkspaceSettings = WorkspaceSettings()
    sandbox: SandboxSettings = SandboxSettings()
    web: WebSettings = WebSettings()
    images: ImageSettings = ImageSettings()
    mcp: McpSettings = McpSettings()
    tools: ToolsSettings = ToolsSettings()
    web_ui: WebUISettings = WebUISettings()
    telemetry: TelemetrySettings = TelemetrySettings()
    schedules: ScheduleSettings = ScheduleSettings()
    governance: GovernanceSettings = GovernanceSettings()
    config_file: Path | None = None

    @model_validator(mode="before")
    @classmethod
    def _chat_shared(cls, data: Any) -> Any:
        """[chat] laid under [slack], [discord] and [web_chat] (core.config_chat)."""
        return with_shared_chat(data)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = _config_file.get()
        if path is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    @property
    def prompts_dir(self) -> Path | None:
        """The override folder of prompt templates (``prompts.dir``), or None: the packaged ones.

        A relative ``prompts.dir`` is taken from the config file's folder.
        """
        folder = self.prompts.dir
        return None if folder is None else self.resolve(folder)

    @property
    def workspace_dir(self) -> Path:
        """The local workspace store's root (``workspace.dir``, relative to the config file)."""
        return self.resolve(self.workspace.dir)

    def resolve(self, path: Path) -> Path:
        """``path`` as given if absolute, else taken from the config file's folder."""
        if path.is_absolute():
            return path
        base = self.config_file.parent if self.config_file else PROJECT_ROOT
        return base / path


def find_config_file() -> Path | None:
    """``$CARAMBA_CONFIG``, else ``./config.toml``, else the project's own ``config.toml``."""
    explicit = os.environ.get("CARAMBA_CONFIG")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(
                f"CARAMBA_CONFIG points to {path}, which is not a file",
                hint="set CARAMBA_CONFIG to an existing config.toml or unset it",
            )
        return path.resolve()
    for candidate in (Path.cwd() / "config.toml", PROJECT_ROOT / "config.toml"):
        if candidate.is_file():
            return candidate.resolve()
    return None


def load_settings(path: Path | None = None, **overrides: Any) -> Settings:
    """Load settings once at start-up: overrides > environment > config file > defaults."""
    path = path or find_config_file()
    refuse_password_in_file(path)
    token = _config_file.set(path)
    try:
        return Settings(config_file=path, **overrides)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(
            f"invalid configuration ({path or 'defaults'}): {problems}",
            hint="fix config.toml or the CARAMBA_* environment variable named above",
        ) from exc
    except ValueError as exc:  # malformed TOML, unparsable env value
        raise ConfigError(
            f"cannot read configuration ({path or 'defaults'}): {exc}",
            hint="check the syntax of config.toml and CARAMBA_* variables",
        ) from exc
    finally:
        _config_file.reset(token)
