"""The sections of the settings (``[llm]``, ``[limits]``, …), one frozen model each; the
settings object that holds them is :class:`core.config.Settings`. Where Redis is
(``[redis]``) is :mod:`core.config_redis`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from core.errors import ConfigError, MissingSecretError


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelPrice(_Section):
    input_per_mtok: float = Field(0.0, ge=0)
    output_per_mtok: float = Field(0.0, ge=0)


class LLMSettings(_Section):
    model: str = "openai/gpt-4o-mini"
    api_base: str = ""
    api_key_env: str = ""
    timeout_s: float = Field(60.0, gt=0)
    max_attempts: int = Field(4, ge=1, le=20)
    backoff_initial_s: float = Field(0.5, ge=0)
    backoff_max_s: float = Field(8.0, ge=0)
    # A rate-limited answer's Retry-After is waited for up to this long; longer ends the
    # call with an error saying so.
    retry_after_max_s: float = Field(60.0, ge=0)
    max_output_tokens: int = Field(2048, ge=1)
    temperature: float = Field(0.2, ge=0, le=2)
    # HTTP connections one process keeps open to the model's server (the direct client):
    # calls beyond them wait for a free one. At least the calls a process makes at once
    # (celery.concurrency, llm.keeper_concurrency, scheduler.inline_concurrency).
    max_connections: int = Field(1000, ge=1, le=100_000)
    # "openai_compat" (default): OpenAI-compatible models (openai/…, hosted_vllm/…, any with
    # api_base) through the direct aiohttp client, the rest through litellm (imported only
    # then); "litellm": every model through litellm.
    client: Literal["litellm", "openai_compat"] = "openai_compat"
    # Models always called through litellm, even when OpenAI-compatible (core/llm/routes.py).
    litellm_models: tuple[str, ...] = ()
    models: dict[str, str] = Field(default_factory=dict)
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    # The call keeper: `caramba keeper` processes make the workers' turns' calls, so an
    # answer in flight outlives a killed worker (agent/keeper_client). None alive: direct.
    keeper: bool = True
    # Model calls one keeper process makes at once.
    keeper_concurrency: int = Field(256, ge=1, le=10_000)
    # A dead keeper's calls are taken over by another keeper after this long.
    keeper_claim_idle_s: float = Field(10.0, ge=0.5)

    def model_for(self, role: str) -> str:
        """The model a role uses: its own entry in ``[llm.models]``, else ``llm.model``."""
        return self.models.get(role) or self.model

    def api_key(self) -> str | None:
        """The API key from the variable named by ``api_key_env``; None means provider default.

        Raises MissingSecretError when a variable is named but not set.
        """
        if not self.api_key_env:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise MissingSecretError(self.api_key_env, f"the LLM model {self.model}")
        return value


class LimitSettings(_Section):
    turns_per_agent: int = Field(30, ge=1)
    tokens_per_agent: int = Field(200_000, ge=1)
    tokens_per_run: int = Field(1_000_000, ge=1)
    cost_per_run_usd: float = Field(5.0, ge=0)
    wall_clock_s: float = Field(1800, gt=0)
    stall_repeats: int = Field(3, ge=2)
    tool_result_chars: int = Field(8000, ge=200)
    max_deliveries: int = Field(5, ge=1)
    max_crashes: int = Field(20, ge=1)


class BusSettings(_Section):
    stream_maxlen: int = Field(10000, ge=100)
    drain_max: int = Field(50, ge=1, le=1000)
    wake_ttl_s: int = Field(60, ge=1)


class AgentsSettings(_Section):
    per_run: int = Field(40, ge=1)
    max_depth: int = Field(3, ge=0)
    children_per_agent: int = Field(8, ge=0)
    base_tools: tuple[str, ...] = ("send_message", "roster", "wait_for_messages", "finish")
    discussion_rounds: int = Field(3, ge=1, le=20)
    text_reply: Literal["finish", "nudge"] = "finish"
    text_nudges: int = Field(1, ge=0, le=10)


class SchedulerSettings(_Section):
    inline_concurrency: int = Field(16, ge=1, le=10_000)
    # The event loop a turn-running process runs its turns on (a worker, `caramba run`, the
    # bots and the web chat): "uvloop" (libuv), "asyncio" (the standard library's), or
    # "auto": uvloop where it is installed, else asyncio's (core.process.event_loop).
    event_loop: Literal["auto", "uvloop", "asyncio"] = "auto"
    # The background loop (due timers, intents left over, ended runs, the watchdog): a
    # tick every background_interval_s while ticks find work; after background_idle_ticks
    # empty ticks in a row, every background_idle_s. Timers fire when due at either pace.
    background_interval_s: float = Field(0.2, gt=0, le=60)
    background_idle_ticks: int = Field(5, ge=1, le=1000)
    background_idle_s: float = Field(2.0, gt=0, le=60)
    # Work of a tick that can wait (ended runs into the library, their cost into the spend
    # ledger) is held back while this process runs turns, at most this long (0 = never).
    background_defer_s: float = Field(5.0, ge=0, le=3600)
    # An intent claimed by a worker that died is taken over after this long.
    intent_claim_idle_s: float = Field(30.0, gt=0)
    # How often one process checks the runs under way for a run nothing can move on.
    watchdog_s: float = Field(10.0, gt=0, le=3600)
    # A running run whose ready/running agents made no progress (no event) for
    # stall_periods × stall_period_s, with nobody holding their turn's lease, has those
    # turns submitted again by the watchdog (a turn lost everywhere), at most once per agent
    # per that span. A duplicate is dropped by the turn's start check.
    stall_period_s: float = Field(5.0, gt=0, le=3600)
    stall_periods: int = Field(3, ge=1, le=1000)


class CelerySettings(_Section):
    """The production scheduler: agent turns as Celery tasks on a Redis broker."""

    # "" = the same Redis as redis.url.
    broker_url: str = ""
    queue: str = "caramba-turns"
    # Worker processes per host (0 = one per CPU core) and turn slots (threads) per process.
    processes: int = Field(0, ge=0, le=256)
    concurrency: int = Field(200, ge=1, le=2000)
    # Broker redelivers a task not acknowledged within this time: keep it above the
    # longest turn (llm.timeout_s × llm.max_attempts plus tools).
    visibility_timeout_s: float = Field(3600, gt=0)
    # A worker renews the lease of the turns it runs every lease_s / 3; a turn whose
    # lease lapsed (its worker died) is published again by the other workers.
    lease_s: float = Field(10, gt=0, le=300)
    # A single turn running longer than this inside a worker is abandoned (and retried).
    turn_timeout_s: float = Field(900, gt=0)
    # An agent's next turn runs in the same task (no new broker message) up to this many
    # times and for at most chain_s seconds; 0 = every turn is its own message.
    chain_turns: int = Field(20, ge=0, le=1000)
    chain_s: float = Field(60, gt=0)
    # The other turns a chained turn schedules in its run start on the same worker (held
    # in the ledger like a chained turn) while fewer than this many of them run there and
    # it has a free slot; the rest are published. 0 = publish them all.
    local_turns: int = Field(32, ge=0, le=2000)
    # Celery's remote control (celery inspect / control: a PSUBSCRIBE on the worker's
    # pidbox channel, an extra ACL rule). Caramba needs none; benches and tests may.
    remote_control: bool = False
    # How a worker runs a received turn: "thread" holds one pool thread per turn in
    # flight (Celery's own strategy); "loop" hands it to the worker's event loop and keeps
    # only the message until the turn ended (tasks.dispatch; less memory per turn).
    turn_dispatch: Literal["thread", "loop"] = "loop"
    # With "loop": the worker takes fewer turns while its event loop wakes more than
    # intake_lag_high_s late (never fewer than intake_floor in flight), more again once
    # it wakes less than intake_lag_low_s late (tasks.intake).
    intake_lag_high_s: float = Field(0.2, gt=0, le=60)
    intake_lag_low_s: float = Field(0.05, gt=0, le=60)
    intake_floor: int = Field(32, ge=1, le=2000)

    @model_validator(mode="after")
    def _intake_lags(self) -> CelerySettings:
        if self.intake_lag_low_s >= self.intake_lag_high_s:
            raise ValueError(
                f"celery.intake_lag_low_s ({self.intake_lag_low_s:g}) must be below "
                f"celery.intake_lag_high_s ({self.intake_lag_high_s:g})"
            )
        return self


class ApprovalSettings(_Section):
    """Who may decide about proposals, and for how long a proposal stands."""

    # Besides the requester: user ids (as the chat adapter reports them) allowed to
    # approve, edit or reject any proposal. Empty: only the requester.
    approvers: tuple[str, ...] = ()
    expire_s: float = Field(86_400, gt=0)


class HumansSettings(_Section):
    """Agents asking people, and people extending budgets."""

    # An unanswered ask_user question is closed after this long; the agent goes on.
    question_timeout_s: float = Field(3600, gt=0)
    # Default extension offered when a run reaches its budget or deadline.
    extend_tokens: int = Field(200_000, ge=0)
    extend_cost_usd: float = Field(2.0, ge=0)
    extend_wall_clock_s: float = Field(900, ge=0)


class PromptSettings(_Section):
    """Prompt templates: the ones shipped in ``core/prompts/``, or an override folder."""

    # None (``dir = ""`` in config.toml): the packaged templates. A folder replaces them;
    # relative paths are taken from the config file's folder.
    dir: Path | None = None
    roles: dict[str, str] = Field(default_factory=dict)

    @field_validator("dir", mode="before")
    @classmethod
    def _empty_means_packaged(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    def template_for(self, role: str) -> str:
        try:
            return self.roles[role]
        except KeyError:
            known = ", ".join(sorted(self.roles)) or "none"
            raise ConfigError(
                f"no prompt template configured for role {role!r} (configured: {known})",
                hint=f'add `{role} = "roles/{role}.md.j2"` under [prompts.roles] in config.toml',
            ) from None


class LibrarySettings(_Section):
    """The agent library (core/library): backend, embedder, ranking, reuse; see config.toml."""

    backend: Literal["local", "pinecone"] = "local"
    embedder: Literal["onnx", "litellm", "hashing"] = "onnx"
    # Relative paths are taken from the config file's folder.
    index_dir: Path = Path(".caramba/library")
    top_k: int = Field(5, ge=1, le=100)
    # Fields' cosines (weighted mean or best) fused with BM25: core/library/search.py.
    field_scoring: Literal["weighted", "max"] = "weighted"
    weight_description: float = Field(0.3, ge=0)
    weight_prompt: float = Field(0.6, ge=0)
    weight_name: float = Field(0.1, ge=0)
    lexical_weight: float = Field(0.25, ge=0, le=1)
    # Direct reuse of a cohort: its similarity at least reuse_threshold, at least
    # reuse_margin above the runner-up's, its record quality at least reuse_min_quality.
    reuse_threshold: float = Field(0.51, ge=-1, le=1)
    reuse_margin: float = Field(0.18, ge=0, le=2)
    reuse_min_quality: float = Field(0.6, ge=0, le=1)
    # Ranking formula: core/library/records.py.
    record_weight: float = Field(0.5, ge=0, le=1)
    prior_mean: float = Field(0.5, ge=0, le=1)
    prior_weight: float = Field(2.0, gt=0)
    pinecone_index: str = "caramba-library"
    pinecone_namespace: str = "caramba"
    pinecone_host: str = ""
    embedding_model: str = "openai/text-embedding-3-small"
    embedding_api_base: str = ""
    embedding_api_key_env: str = ""
    embedding_dim: int = Field(1536, ge=1)

    @field_validator("weight_name")
    @classmethod
    def _some_weight(cls, value: float, info: ValidationInfo) -> float:
        if value + info.data.get("weight_description", 0) + info.data.get("weight_prompt", 0) <= 0:
            raise ValueError("at least one of library.weight_* must be above 0")
        return value


class PlanningSettings(_Section):
    """Router, planner and prompt creator (core/planning); see config.toml."""

    router_attempts: int = Field(3, ge=1, le=10)
    planner_attempts: int = Field(3, ge=1, le=10)
    reflection_rounds: int = Field(1, ge=0, le=5)
    prompt_concurrency: int = Field(4, ge=1, le=64)
    library_top_k: int = Field(8, ge=0, le=20)
    timeout_s: float = Field(300.0, gt=0, le=3600)
    # How long a request may wait for a worker to start planning it.
    pickup_s: float = Field(60.0, ge=0, le=3600)
