"""One exception root with three families.

* :class:`UsageError` — configuration or usage mistakes; the message says what to fix.
* :class:`RunError` — something failed while a run was executing.
* :class:`ControlSignal` — not failures: control flow carried as exceptions.
"""

from __future__ import annotations


class CarambaError(Exception):
    """Root of every error Caramba raises on purpose."""


# --- configuration and usage -------------------------------------------------------------


class UsageError(CarambaError):
    """The caller or the configuration is wrong; ``hint`` says how to fix it."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        self.hint = hint
        super().__init__(f"{message} — {hint}" if hint else message)


class ConfigError(UsageError):
    """``config.toml`` or an environment override is invalid or incomplete."""


class MissingSecretError(ConfigError):
    """A secret that must come from the environment is not set."""

    def __init__(self, variable: str, purpose: str) -> None:
        self.variable = variable
        super().__init__(
            f"{purpose} needs the environment variable {variable}",
            hint=f"export {variable}=... (secrets are never read from config.toml)",
        )


class PromptError(UsageError):
    """A prompt template is missing or was rendered without a variable it needs."""

    def __init__(self, template: str, problem: str) -> None:
        self.template = template
        super().__init__(
            f"prompt template {template!r}: {problem}",
            hint="fix the template (core/prompts/, or the prompts.dir folder) or pass the variable",
        )


# --- run failures ------------------------------------------------------------------------


class RunError(CarambaError):
    """A run (or one agent of it) failed."""


class LLMError(RunError):
    """The model could not be called, after retries."""

    def __init__(
        self,
        message: str,
        *,
        model: str,
        status: int | None = None,
        attempts: int = 1,
        retryable: bool = False,
    ) -> None:
        self.model = model
        self.status = status
        self.attempts = attempts
        self.retryable = retryable
        where = f" (HTTP {status})" if status else ""
        super().__init__(
            f"LLM call to {model} failed{where} after {attempts} attempt(s): {message}"
        )


class LLMSetupError(LLMError, ConfigError):
    """The model cannot be called as configured — no key, a refused key, a model the server
    does not know, no server at the address — so no retry helps. A configuration error
    (what to fix is in ``hint``) that is also an :class:`LLMError` (a turn or a planning
    that meets it fails with this one line).

    ``kind``: ``no_key``, ``bad_key``, ``unknown_model`` or ``no_server``; ``variable``: the
    environment variable of the key, when it is about a key.
    """

    def __init__(
        self,
        message: str,
        *,
        model: str,
        kind: str,
        hint: str,
        status: int | None = None,
        attempts: int = 0,
        variable: str = "",
    ) -> None:
        self.model = model
        self.status = status
        self.attempts = attempts
        self.retryable = False
        self.kind = kind
        self.variable = variable
        self.hint = hint
        CarambaError.__init__(self, f"{message} — {hint}")


class WorkspaceError(RunError):
    """A file operation of the run's workspace was refused (a bad path, a missing file,
    a size or count cap); the message says what to do instead."""


class StateConflict(RunError):
    """Another delivery of the same turn saved first; this one must be dropped."""


# --- control flow ------------------------------------------------------------------------


class ControlSignal(CarambaError):
    """Not a failure: a signal that changes the flow of a turn."""


class ToolRetry(ControlSignal):
    """Raised by a tool to send ``message`` back to the model and let it try again."""
