"""Settings: config.toml defaults, CARAMBA_* env overrides, errors that say what to fix."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from core.config import PROJECT_ROOT, Settings, find_config_file, load_settings
from core.errors import ConfigError, MissingSecretError

PROJECT_CONFIG = PROJECT_ROOT / "config.toml"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No CARAMBA_* variable from the outside; a cwd without config.toml."""
    for key in list(os.environ):
        if key.startswith("CARAMBA_"):
            monkeypatch.delenv(key)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, "utf-8")
    return path


def test_defaults_come_from_project_config() -> None:
    raw = tomllib.loads(PROJECT_CONFIG.read_text("utf-8"))
    settings = load_settings()
    assert settings.config_file == PROJECT_CONFIG.resolve()
    assert settings.llm.model == raw["llm"]["model"]
    assert settings.llm.max_attempts == raw["llm"]["max_attempts"]
    assert settings.limits.turns_per_agent == raw["limits"]["turns_per_agent"]
    assert settings.limits.tool_result_chars == raw["limits"]["tool_result_chars"]
    assert settings.redis.embedded is (raw["redis"]["url"] == "")
    assert settings.prompts.roles == raw["prompts"]["roles"]
    # config.toml names no prompts folder: the templates shipped in core/prompts/.
    assert raw["prompts"]["dir"] == ""
    assert settings.prompts.dir is None
    assert settings.prompts_dir is None


def test_find_config_file_prefers_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert find_config_file() == PROJECT_CONFIG.resolve()
    local = write_config(tmp_path / "cwd", '[llm]\nmodel = "local/m"\n')
    assert find_config_file() == local.resolve()
    assert load_settings().llm.model == "local/m"


def test_env_overrides_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARAMBA_LLM__MODEL", "openai/env-model")
    monkeypatch.setenv("CARAMBA_LIMITS__TURNS_PER_AGENT", "7")
    settings = load_settings()
    assert settings.llm.model == "openai/env-model"
    assert settings.limits.turns_per_agent == 7
    # Untouched keys of the same sections still come from the file.
    raw = tomllib.loads(PROJECT_CONFIG.read_text("utf-8"))
    assert settings.llm.max_attempts == raw["llm"]["max_attempts"]
    assert settings.limits.tokens_per_agent == raw["limits"]["tokens_per_agent"]


def test_overrides_beat_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARAMBA_LLM__MODEL", "openai/env-model")
    settings = load_settings(llm={"model": "openai/override"})
    assert settings.llm.model == "openai/override"


@pytest.mark.parametrize("value", ["abc", "0"])
def test_invalid_env_value_names_field(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CARAMBA_LIMITS__TURNS_PER_AGENT", value)
    with pytest.raises(ConfigError, match=r"limits\.turns_per_agent"):
        load_settings()


def test_invalid_file_value_names_field(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[llm]\ntemperature = 5.0\n")
    with pytest.raises(ConfigError, match=r"llm\.temperature") as info:
        load_settings(path)
    assert str(path) in str(info.value)


def test_unknown_key_is_rejected(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[llm]\nmodle = 'typo'\n")
    with pytest.raises(ConfigError, match=r"llm\.modle"):
        load_settings(path)


def test_malformed_toml_raises_config_error(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[llm\nmodel = \n")
    with pytest.raises(ConfigError, match="cannot read configuration"):
        load_settings(path)


def test_caramba_config_missing_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    monkeypatch.setenv("CARAMBA_CONFIG", str(missing))
    with pytest.raises(ConfigError, match="CARAMBA_CONFIG") as info:
        load_settings()
    assert str(missing) in str(info.value)


def test_caramba_config_selects_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = write_config(tmp_path, '[llm]\nmodel = "picked/by-env"\n')
    monkeypatch.setenv("CARAMBA_CONFIG", str(path))
    settings = load_settings()
    assert settings.config_file == path.resolve()
    assert settings.llm.model == "picked/by-env"


def test_custom_models_per_role(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        '[llm]\nmodel = "openai/base"\n\n[llm.models]\norchestrator = "openai/big"\n'
        'judge = "anthropic/judge"\n\n[prompts]\ndir = "my_prompts"\n',
    )
    settings = load_settings(path)
    assert settings.llm.model_for("orchestrator") == "openai/big"
    assert settings.llm.model_for("judge") == "anthropic/judge"
    assert settings.llm.model_for("member") == "openai/base"
    # Keys not in the file keep their built-in defaults.
    assert settings.limits.turns_per_agent == 30
    # A relative prompts.dir is taken from the config file's folder.
    assert settings.prompts_dir == path.parent / "my_prompts"


def test_prompts_dir_defaults_to_the_packaged_templates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No [prompts] in the file, and the built-in defaults: no folder, the packaged templates.
    assert load_settings(write_config(tmp_path, '[llm]\nmodel = "m"\n')).prompts_dir is None
    assert Settings().prompts_dir is None
    # An absolute override is kept as it is; the environment can set or clear it.
    absolute = tmp_path / "elsewhere"
    path = write_config(tmp_path, f'[prompts]\ndir = "{absolute.as_posix()}"\n')
    assert load_settings(path).prompts_dir == absolute
    monkeypatch.setenv("CARAMBA_PROMPTS__DIR", "")
    assert load_settings(path).prompts_dir is None
    monkeypatch.setenv("CARAMBA_PROMPTS__DIR", "from_env")
    assert load_settings(path).prompts_dir == tmp_path / "from_env"


def test_settings_are_frozen() -> None:
    settings = load_settings()
    with pytest.raises(ValidationError, match="frozen"):
        settings.llm = settings.llm  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        settings.llm.model = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        settings.limits.turns_per_agent = 1  # type: ignore[misc]
    assert isinstance(settings, Settings)


def test_api_key_missing_names_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_CARAMBA_LLM_KEY", raising=False)
    llm = load_settings(llm={"api_key_env": "TEST_CARAMBA_LLM_KEY"}).llm
    with pytest.raises(MissingSecretError) as info:
        llm.api_key()
    assert info.value.variable == "TEST_CARAMBA_LLM_KEY"
    assert "TEST_CARAMBA_LLM_KEY" in str(info.value)
    assert isinstance(info.value, ConfigError)


def test_api_key_read_from_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    llm = load_settings(llm={"api_key_env": "TEST_CARAMBA_LLM_KEY"}).llm
    monkeypatch.setenv("TEST_CARAMBA_LLM_KEY", "sk-test")
    assert llm.api_key() == "sk-test"
    monkeypatch.setenv("TEST_CARAMBA_LLM_KEY", "")
    with pytest.raises(MissingSecretError):
        llm.api_key()


def test_api_key_none_without_env_name() -> None:
    assert load_settings().llm.api_key() is None


def test_template_for_known_and_unknown_role() -> None:
    prompts = load_settings().prompts
    assert prompts.template_for("solo") == "roles/solo.md.j2"
    with pytest.raises(ConfigError, match="'wizard'") as info:
        prompts.template_for("wizard")
    assert "solo" in str(info.value)  # lists the configured roles
    assert "[prompts.roles]" in info.value.hint
