"""The settings of the agents' tools: the run workspace, the code sandbox, the web, image
generation, MCP servers, and which tools are switched off (``[workspace]``, ``[sandbox]``,
``[web]``, ``[images]``, ``[mcp]``, ``[tools]`` in config.toml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

_MB = 1024 * 1024


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class WorkspaceSettings(_Section):
    """Files shared by every agent of a run (core/workspace)."""

    # "auto": in Redis whenever redis.url is set (every worker machine sees the files),
    # else in a local folder (embedded mode).
    backend: Literal["auto", "redis", "local"] = "auto"
    # Root of the local store; relative paths are taken from the config file's folder.
    dir: Path = Path(".caramba/workspaces")
    max_file_bytes: int = Field(10 * _MB, ge=1)
    max_run_bytes: int = Field(50 * _MB, ge=1)
    max_files: int = Field(200, ge=1)
    # A run's files are kept this long after their last change.
    ttl_s: float = Field(7 * 86_400, gt=0)
    # read_file returns a text file in pages of this many characters.
    read_chars: int = Field(6000, ge=200)


class SandboxSettings(_Section):
    """run_code under bubblewrap (core/tools/sandbox): never unsandboxed."""

    enabled: bool = True
    # The bubblewrap binary (Debian package ``bubblewrap``).
    bwrap: str = "bwrap"
    # The interpreter inside the sandbox ("" = the one running Caramba, with its packages:
    # pandas, numpy, matplotlib).
    python: str = ""
    cpu_s: int = Field(30, ge=1)
    memory_mb: int = Field(1024, ge=64)
    processes: int = Field(64, ge=1)
    file_mb: int = Field(50, ge=1)
    timeout_s: float = Field(60.0, gt=0)
    # stdout and stderr are each cut to this many characters.
    output_chars: int = Field(10_000, ge=100)
    # Allow language="bash" besides Python.
    shell: bool = True
    # The sandbox's disk (its working folder, the run's files included, and /tmp): a tmpfs
    # of this size and this many files and folders; a write past either fails (ENOSPC).
    disk_mb: int = Field(100, ge=1)
    max_files: int = Field(1000, ge=10)
    # Sandboxes running at once in one process; a call past that waits for a free one.
    max_concurrent: int = Field(4, ge=1)


class WebSettings(_Section):
    """web_search, fetch_url and download (core/tools/web)."""

    # "duckduckgo": the ddgs library, no key; "none": web_search is unavailable.
    search_backend: Literal["duckduckgo", "searxng", "brave", "none"] = "duckduckgo"
    # The SearXNG instance (its JSON API must be enabled), or another API's base URL.
    search_url: str = ""
    # Name of the environment variable holding the search API's key (brave).
    search_api_key_env: str = ""
    max_results: int = Field(5, ge=1, le=50)
    timeout_s: float = Field(20.0, gt=0)
    max_bytes: int = Field(5 * _MB, ge=1024)
    # fetch_url returns readable text in pages of at most this many characters (and at
    # most limits.tool_result_chars, less room for its header).
    max_chars: int = Field(20_000, ge=500)
    max_redirects: int = Field(5, ge=0, le=20)
    # Hosts, IP addresses or networks (CIDR) that may be fetched although private or
    # loopback (an intranet wiki, a local test server). Empty: only public addresses.
    allow: tuple[str, ...] = ()
    user_agent: str = "CarambaBot/0.1 (+https://github.com/caramba-agents/caramba)"


class ImageSettings(_Section):
    """generate_image through litellm's image generation."""

    model: str = "openai/gpt-image-1"
    api_base: str = ""
    api_key_env: str = ""
    size: str = "1024x1024"
    timeout_s: float = Field(120.0, gt=0)


class McpServer(_Section):
    """One MCP server whose tools join the registry as ``<name>__<tool>``."""

    transport: Literal["stdio", "http"] = "stdio"
    # stdio: the command to start, its arguments and environment (values taken literally;
    # ``env_from`` maps a variable to the name of one of ours holding a secret).
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    env_from: dict[str, str] = Field(default_factory=dict)
    # http (streamable HTTP): the endpoint, and header → name of the variable holding it.
    url: str = ""
    headers_from: dict[str, str] = Field(default_factory=dict)
    # Tools treated as read-only whatever their annotations say ("*": all of them), and
    # tools not offered at all.
    read_only: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    enabled: bool = True

    @model_validator(mode="after")
    def _complete(self) -> McpServer:
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio MCP server needs its command")
        if self.transport == "http" and not self.url.startswith(("http://", "https://")):
            raise ValueError("an http MCP server needs its url (http:// or https://)")
        return self


class McpSettings(_Section):
    connect_timeout_s: float = Field(20.0, gt=0)
    # A call's idle limit: it fails after this long without an answer or a progress
    # notification (each one starts the limit again), and after call_cap_s in all.
    call_timeout_s: float = Field(60.0, gt=0)
    # How long a tool call waits for a person to answer a form its server asks for
    # (elicitation) before it tells the server the form was cancelled.
    elicitation_timeout_s: float = Field(600.0, gt=0)
    call_cap_s: float = Field(600.0, gt=0)
    # A server down at start is tried again in the background: after retry_s, then twice
    # as long each time, at most retry_max_s apart; its tools appear once it is up.
    retry_s: float = Field(5.0, gt=0)
    retry_max_s: float = Field(300.0, gt=0)
    # How often a task-augmented call's task is polled (unless the server asks for less).
    task_poll_s: float = Field(1.0, gt=0)
    # Images a tool returns, at most this big, are shown to a vision-capable model.
    # (Kept in the agent's thread while it lives: keep this small.)
    image_max_bytes: int = Field(1 * _MB, ge=1024)
    servers: dict[str, McpServer] = Field(default_factory=dict)


class ToolApprovalSettings(_Section):
    """Which tool calls wait for a person's click in the run's thread before they run
    (``[tools.approval]``; core/tools/approval.py decides, docs/approvals.md)."""

    # Tool names, categories (files, code, web, images, mcp, people, …) and MCP servers
    # whose every call asks.
    tools: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    servers: tuple[str, ...] = ()
    # By what an MCP server says of its tool (absent hints count as the spec's defaults:
    # destructive and open-world unless the tool is read-only): destructive ones ask by
    # default; open-world ones (they reach the internet) and every tool that is not
    # read-only (built-in ones too) only if switched on.
    destructive: bool = True
    open_world: bool = False
    not_read_only: bool = False
    # Tool names that never ask (wins over everything above).
    never: tuple[str, ...] = ()
    # Nobody decided within this time: the call is not run and the agent reads so.
    timeout_s: float = Field(86_400, gt=0)
    # How much of the call's arguments approvers are shown (secrets masked).
    arguments_chars: int = Field(1500, ge=100)


class ToolsSettings(_Section):
    """Tool names or categories (files, code, web, images, mcp, …) switched off, and which
    calls need a person's approval."""

    disabled: tuple[str, ...] = ()
    approval: ToolApprovalSettings = ToolApprovalSettings()
