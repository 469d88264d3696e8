"""The links chat threads carry to the inspector (``run_link``), and ``caramba doctor``'s
check of the key that signs them. No Redis needed."""

from __future__ import annotations

import time

import pytest

from bots.web.access import OPERATOR, Signer, operator_link, run_link, run_scope, signer
from core.errors import ConfigError, MissingSecretError
from core.process.doctor_types import Level
from core.process.doctor_web import check_web_ui
from tests.conftest import make_settings

KEY = "k" * 40


def test_run_link_opens_its_run_until_it_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARAMBA_WEB_SECRET", KEY)
    settings = make_settings(web_ui={"base_url": "https://caramba.example.com/"})
    link = run_link(settings, "run_abc")
    assert link is not None and link.startswith("https://caramba.example.com/runs/run_abc?t=")
    token = link.split("?t=", 1)[1]
    sign = Signer(KEY.encode())
    assert sign.opens_run(token, "run_abc") and not sign.opens_run(token, "run_xyz")
    assert not sign.is_operator(token)
    later = time.time() + settings.web_ui.link_ttl_s + 5
    assert sign.scope(token, now=later) is None
    assert sign.scope(token) == run_scope("run_abc")
    assert Signer(b"another key, long enough to count as one").scope(token) is None


def test_no_link_without_base_url_or_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CARAMBA_WEB_SECRET", raising=False)
    assert run_link(make_settings(), "run_abc") is None
    assert run_link(make_settings(web_ui={"base_url": "https://x.example"}), "run_abc") is None
    monkeypatch.setenv("CARAMBA_WEB_SECRET", "short")
    assert run_link(make_settings(web_ui={"base_url": "https://x.example"}), "run_abc") is None


def test_operator_link(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARAMBA_WEB_SECRET", KEY)
    settings = make_settings(web_ui={"base_url": "https://caramba.example.com"})
    link = operator_link(settings)
    assert link.startswith("https://caramba.example.com/?t=")
    assert Signer(KEY.encode()).scope(link.split("?t=", 1)[1]) == OPERATOR


def test_signer_refuses_missing_and_short_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CARAMBA_WEB_SECRET", raising=False)
    with pytest.raises(MissingSecretError):
        signer(make_settings())
    monkeypatch.setenv("CARAMBA_WEB_SECRET", "too short")
    with pytest.raises(ConfigError, match="32 or more"):
        signer(make_settings())


def test_doctor_checks_the_key_once_links_are_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CARAMBA_WEB_SECRET", raising=False)
    assert check_web_ui(make_settings()) == []  # no base_url: nothing links to it
    configured = make_settings(web_ui={"base_url": "https://caramba.example.com"})
    missing, _trust = check_web_ui(configured)
    assert missing.level is Level.FAIL and "CARAMBA_WEB_SECRET" in missing.detail
    assert "export CARAMBA_WEB_SECRET" in missing.fix
    monkeypatch.setenv("CARAMBA_WEB_SECRET", "short")
    short, _trust = check_web_ui(configured)
    assert short.level is Level.FAIL and "openssl rand" in short.fix
    monkeypatch.setenv("CARAMBA_WEB_SECRET", KEY)
    ok, trust = check_web_ui(configured)
    assert ok.level is Level.OK and KEY not in ok.detail
    # The web row also says what the server trusts: its host names and its proxies.
    assert trust.level is Level.OK and "caramba.example.com" in trust.detail
    assert "localhost" in trust.detail and "proxies trusted: none" in trust.detail


def test_doctor_says_what_the_web_server_trusts() -> None:
    assert check_web_ui(make_settings()) == []  # nothing configured: nothing to say
    (trust,) = check_web_ui(
        make_settings(
            web_ui={"allowed_hosts": ["Ops.Example.com"], "forwarded_allow_ips": ["10.0.0.5"]}
        )
    )
    assert trust.level is Level.OK and "ops.example.com" in trust.detail
    assert "proxies trusted: 10.0.0.5" in trust.detail
    (anything,) = check_web_ui(make_settings(web_ui={"allowed_hosts": ["*"]}))
    assert anything.level is Level.WARN and "DNS rebinding" in anything.detail
    assert "allowed_hosts" in anything.fix
