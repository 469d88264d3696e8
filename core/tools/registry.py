"""The tool registry: schemas for the model, validated execution, errors fed back."""

from __future__ import annotations

import copy
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from core.agent.context import ToolContext
from core.config_tools import ToolApprovalSettings
from core.errors import ToolRetry
from core.prompts import PromptLibrary
from core.tools._coerce import NotAnObject, coerce, decode_arguments, lone_string, single_kinds
from core.tools._schema import arguments_model, json_schema, parse_docstring
from core.tools.approval import needs_approval
from core.types.chat import ToolCall

ToolFn = Callable[..., Awaitable[Any]]
# A sentence ends at . ! or ? followed by a space and a capital ("e.g. 3" goes on).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


@dataclass(frozen=True)
class Tool:
    """A typed async function the model can call.

    ``read_only`` tools only look things up; side-effecting tools must register intents
    (or act idempotently, like writing a file), so a re-delivered turn never repeats an
    effect. ``category`` groups tools for config (``tools.disabled``) and the planner;
    ``network``, ``runs_code`` and ``server`` (an MCP server's name) are what approvers
    are shown as the tool's risk.
    """

    name: str
    description: str
    fn: ToolFn
    args_model: type[BaseModel]
    read_only: bool
    takes_context: bool
    category: str = "general"
    network: bool = False
    runs_code: bool = False
    server: str = ""
    # Its only effect is written by the turn's save, inside the run (``send_message``):
    # like a read-only tool, it needs no answer kept first (``core.agent.phases.model``).
    in_save: bool = False
    # What an MCP server says of its tool (``destructiveHint``, ``openWorldHint``):
    # it may delete or overwrite things; it reaches outside systems (the internet).
    destructive: bool = False
    open_world: bool = False
    # A JSON schema given as is (an MCP server's tool): ``fn`` then gets the model's
    # arguments as one dict, and the schema is the only description of them.
    parameters: dict[str, Any] | None = None
    # Built once: generating a JSON schema costs more than the rest of a turn's CPU.
    _schema: dict[str, Any] = field(init=False, repr=False, compare=False)
    _openai: dict[str, Any] = field(init=False, repr=False, compare=False)
    # What reading a call's arguments needs of the schema, found once: the only parameter
    # when it is a string, and the one type of each parameter that has one (None: the
    # schema has no properties).
    _lone: str | None = field(init=False, repr=False, compare=False)
    _kinds: dict[str, str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        given = self.parameters
        schema = copy.deepcopy(given) if given is not None else json_schema(self.args_model)
        object.__setattr__(self, "_schema", schema)
        object.__setattr__(self, "_lone", lone_string(schema))
        object.__setattr__(self, "_kinds", single_kinds(schema))
        function = {"name": self.name, "description": self.description, "parameters": schema}
        object.__setattr__(self, "_openai", {"type": "function", "function": function})

    def openai_schema(self) -> dict[str, Any]:
        """The tool as the OpenAI API takes it, built once and shared by every request
        (deep-copying it each turn cost more than the rest of the request): read it, never
        change it (``core.llm.policy.chat_body`` copies it for clients that might)."""
        return self._openai

    def parameters_json(self) -> str:
        return json.dumps(self._schema, separators=(",", ":"))

    @property
    def purpose(self) -> str:
        """The description's first sentence: the one line the planner and the card show."""
        first = _SENTENCE_END.split(self.description, maxsplit=1)[0].strip()
        return first if first.endswith((".", "!", "?")) else f"{first}."

    def risks(self) -> list[str]:
        """What this tool may touch, in plain words (empty: it only looks things up)."""
        out = []
        if self.runs_code:
            out.append("runs code (sandboxed)")
        if self.network or self.open_world:
            out.append("uses the internet")
        if self.server:
            out.append(f"MCP server {self.server}")
        if not self.read_only:
            out.append("may delete or overwrite things" if self.destructive else "changes things")
        return out


def tool(
    fn: ToolFn | None = None,
    *,
    name: str | None = None,
    read_only: bool = True,
    category: str = "general",
    network: bool = False,
    runs_code: bool = False,
    in_save: bool = False,
) -> Any:
    """Decorator turning an async function into a :class:`Tool`.

    The first parameter may be a :class:`ToolContext` (annotated as such); every other
    parameter becomes a validated argument described by the docstring's ``Args:`` section.
    """

    def wrap(f: ToolFn) -> Tool:
        if not inspect.iscoroutinefunction(f):
            raise TypeError(f"tool {f.__name__} must be an async function")
        tool_name = name or f.__name__
        params = list(inspect.signature(f).parameters.values())
        takes_context = bool(params) and params[0].name in ("ctx", "context")
        description, _ = parse_docstring(f.__doc__)
        if not description:
            raise TypeError(f"tool {tool_name} needs a docstring: the model reads it")
        return Tool(
            name=tool_name,
            description=description,
            fn=f,
            args_model=arguments_model(f, tool_name, skip_first=takes_context),
            read_only=read_only,
            takes_context=takes_context,
            category=category,
            network=network,
            runs_code=runs_code,
            in_save=in_save,
        )

    return wrap(fn) if fn is not None else wrap


class RawArguments(BaseModel):
    """The ``args_model`` of a tool with a given JSON schema (``Tool.parameters``): any
    object passes; the tool's own server checks the arguments."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class ToolResult:
    call: ToolCall
    ok: bool
    content: str


class ToolRegistry:
    """Every tool Caramba knows, by name. Agents get a subset (their spec's tool names)."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        # Tools configured or known but not offered: name → why, in plain words.
        self.unavailable: dict[str, str] = {}
        for t in tools:
            self.register(t)

    def register(self, t: Tool) -> None:
        if t.name in self._tools:
            raise ValueError(f"tool {t.name!r} is registered twice")
        self._tools[t.name] = t
        self.unavailable.pop(t.name, None)

    def mark_unavailable(self, name: str, reason: str) -> None:
        """Record why ``name`` cannot be offered (``caramba tools``, the planner's repair)."""
        self._tools.pop(name, None)
        self.unavailable[name] = reason

    def disable(self, names_or_categories: Iterable[str]) -> None:
        """Switch off tools by name or by category (``tools.disabled`` in config)."""
        off = set(names_or_categories)
        for t in list(self._tools.values()):
            if t.name in off or t.category in off:
                self.mark_unavailable(t.name, "switched off in config (tools.disabled)")

    def tools(self) -> list[Tool]:
        return [self._tools[n] for n in sorted(self._tools)]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        return sorted(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def asks(self, name: str, policy: ToolApprovalSettings) -> bool:
        """Whether calls of tool ``name`` wait for a person's approval under ``policy``
        (``core.tools.approval``; asked here by the turn, which sits below the tools)."""
        t = self._tools.get(name)
        return t is not None and needs_approval(policy, t)

    def unknown(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if n not in self._tools]

    def subset(self, names: Iterable[str]) -> list[Tool]:
        return [self._tools[n] for n in names if n in self._tools]

    async def execute(
        self,
        ctx: ToolContext,
        call: ToolCall,
        allowed: list[str],
        prompts: PromptLibrary,
        max_chars: int,
    ) -> ToolResult:
        """Run one tool call. Every failure becomes a result the model can read."""
        t = self._tools.get(call.name) if call.name in allowed else None
        if t is None:
            text = prompts.render("feedback/unknown_tool.j2", name=call.name, tools=allowed)
            return ToolResult(call, False, text)
        parsed = _arguments(t, call)
        if isinstance(parsed, str):
            return self._invalid(t, call, parsed, prompts)
        raw, args = parsed
        kwargs = {k: getattr(args, k) for k in type(args).model_fields}
        given: tuple[Any, ...] = (ctx,) if t.takes_context else ()
        if t.parameters is not None:  # a given JSON schema: the arguments as one dict
            given = (*given, raw)
        try:
            value = await t.fn(*given, **kwargs)
        except ToolRetry as exc:
            return ToolResult(call, False, str(exc))
        except Exception as exc:  # a tool's bug must not crash the agent
            error = f"{type(exc).__name__}: {exc}"
            text = prompts.render(
                "feedback/tool_failed.j2", name=t.name, error=error, tools=allowed
            )
            return ToolResult(call, False, text)
        return ToolResult(call, True, _truncate(_as_text(value), max_chars))

    @staticmethod
    def _invalid(t: Tool, call: ToolCall, problem: str, prompts: PromptLibrary) -> ToolResult:
        text = prompts.render(
            "feedback/invalid_arguments.j2",
            name=t.name,
            problem=problem,
            schema=t.parameters_json(),
        )
        return ToolResult(call, False, text)


def _arguments(t: Tool, call: ToolCall) -> tuple[Any, BaseModel] | str:
    """The call's arguments as decoded (``raw``) and validated, or what is wrong with them."""
    try:
        decoded = decode_arguments(call.arguments, t._lone)
        raw = decoded if t._kinds is None else coerce(decoded, t._schema, t._kinds)
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg} at char {exc.pos})"
    except NotAnObject as exc:
        return str(exc)
    try:
        return raw, t.args_model.model_validate(raw)
    except ValidationError as exc:
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()
        )


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, default=str, ensure_ascii=False)


def _truncate(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[:max_chars] + f"\n[… truncated {len(text) - max_chars} characters]"
