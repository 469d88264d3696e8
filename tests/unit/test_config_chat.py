"""[chat]: the settings every chat platform shares, laid under [slack], [discord] and
[web_chat], each of which holds only what differs (and may set any shared key again)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bots.chat.ports import Limits
from core.config import load_settings
from core.errors import ConfigError


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_the_shipped_config_keeps_every_platforms_values() -> None:
    s = load_settings()
    assert (s.slack.status_interval_s, s.slack.result_file_chars) == (1.0, 8000)
    assert (s.discord.status_interval_s, s.discord.result_file_chars) == (1.5, 6000)
    assert s.discord.outputs_max_bytes == 10_485_760
    assert s.slack.outputs_max_bytes == 52_428_800
    assert (s.web_chat.status_interval_s, s.web_chat.relay_lease_s) == (0.5, 5.0)
    for section in (s.slack, s.discord, s.web_chat):
        assert section.outbox_max_age_s == 86_400 and section.attachment_max_files == 10


def test_a_chat_key_reaches_every_platform_but_one_that_sets_its_own(tmp_path: Path) -> None:
    path = _toml(
        tmp_path,
        "[chat]\nrelay_lease_s = 7.0\nallow_bots = ['B1']\n"
        "[discord]\nallow_bots = []\n[web_chat]\n",
    )
    s = load_settings(path)
    assert s.slack.relay_lease_s == s.discord.relay_lease_s == s.web_chat.relay_lease_s == 7.0
    assert s.slack.allow_bots == ("B1",) and s.discord.allow_bots == ()


def test_a_platform_section_may_still_set_a_shared_key(tmp_path: Path) -> None:
    s = load_settings(_toml(tmp_path, "[slack]\nstatus_interval_s = 4.0\n"))
    assert s.slack.status_interval_s == 4.0
    assert s.chat.status_interval_s == 1.0 and s.discord.status_interval_s == 1.5


def test_platform_defaults_stand_where_chat_says_nothing(tmp_path: Path) -> None:
    s = load_settings(_toml(tmp_path, "[chat]\noutbox_retry_max_s = 5.0\n"))
    assert s.discord.result_file_chars == 6000 and s.discord.outbox_retry_max_s == 5.0
    assert s.web_chat.status_interval_s == 0.5


def test_environment_overrides_chat_and_a_platform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CARAMBA_CHAT__OUTBOX_MAX_AGE_S", "600")
    monkeypatch.setenv("CARAMBA_DISCORD__OUTBOX_MAX_AGE_S", "900")
    monkeypatch.setenv("CARAMBA_WEB_CHAT__STATUS_INTERVAL_S", "2")
    s = load_settings(_toml(tmp_path, "[chat]\noutbox_max_age_s = 100\n"))
    assert s.chat.outbox_max_age_s == 600 and s.slack.outbox_max_age_s == 600
    assert s.discord.outbox_max_age_s == 900
    assert s.web_chat.status_interval_s == 2 and s.web_chat.outbox_max_age_s == 600


def test_a_shared_value_a_platform_cannot_take_names_the_platform(tmp_path: Path) -> None:
    # Discord sends at most 10 files a message.
    with pytest.raises(ConfigError, match=r"discord\.outputs_max_files"):
        load_settings(_toml(tmp_path, "[chat]\noutputs_max_files = 20\n"))


def test_web_chat_limits_come_from_its_section() -> None:
    limits = Limits.of(load_settings().web_chat, message_chars=4000)
    assert (limits.status_interval_s, limits.relay_lease_s) == (0.5, 5.0)
