"""Which web and image tools a configuration offers, and why the others are not: the
registry's reasons (shown by `caramba tools`) and `caramba doctor`'s check."""

from __future__ import annotations

from typing import Any

import pytest

from core.process.doctor import Level, _check_web_search
from core.tools.defaults import default_registry
from core.tools.images import png_path
from core.tools.web.search import SearchUnavailable, check_backend, make_backend
from tests.conftest import make_settings


def _registry(**overrides: Any) -> Any:
    return default_registry(make_settings(**overrides))


def test_default_offers_fetch_download_search_and_images() -> None:
    registry = _registry()
    for name in ("fetch_url", "download", "web_search", "generate_image"):
        assert name in registry, registry.unavailable
    fetch = registry.get("fetch_url")
    assert fetch is not None and fetch.category == "web" and fetch.network and fetch.read_only
    down = registry.get("download")
    assert down is not None and not down.read_only
    image = registry.get("generate_image")
    assert image is not None and image.category == "images" and image.network


def test_duckduckgo_backend_is_built_from_ddgs() -> None:
    # Construction only: a real search would need the internet (tests stay offline).
    backend = make_backend(make_settings().web)
    assert backend.name == "duckduckgo"


@pytest.mark.parametrize(
    ("web", "reason"),
    [
        ({"search_backend": "none"}, 'web.search_backend = "none"'),
        ({"search_backend": "searxng"}, "web.search_url is empty"),
        ({"search_backend": "brave"}, "web.search_api_key_env is empty"),
        (
            {"search_backend": "brave", "search_api_key_env": "CARAMBA_TEST_NO_SUCH_KEY"},
            "export CARAMBA_TEST_NO_SUCH_KEY=...",
        ),
    ],
)
def test_misconfigured_search_is_unavailable_with_the_reason(
    web: dict[str, Any], reason: str
) -> None:
    registry = _registry(web=web)
    assert "web_search" not in registry
    assert reason in registry.unavailable["web_search"]
    assert "fetch_url" in registry  # fetching needs no search backend
    with pytest.raises(SearchUnavailable, match="web"):
        check_backend(make_settings(web=web).web)


def test_keyed_backends_are_offered_once_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CARAMBA_TEST_BRAVE_KEY", "k")
    brave = {"search_backend": "brave", "search_api_key_env": "CARAMBA_TEST_BRAVE_KEY"}
    assert "web_search" in _registry(web=brave)
    searx = {"search_backend": "searxng", "search_url": "http://searx.internal:8080"}
    assert "web_search" in _registry(web=searx)


def test_images_unavailable_without_their_key() -> None:
    registry = _registry(images={"api_key_env": "CARAMBA_TEST_NO_IMAGE_KEY"})
    assert "generate_image" not in registry
    assert "CARAMBA_TEST_NO_IMAGE_KEY" in registry.unavailable["generate_image"]
    assert "images.model is empty" in _registry(images={"model": ""}).unavailable["generate_image"]


def test_categories_switch_the_web_and_images_off() -> None:
    registry = _registry(tools={"disabled": ["web", "images"]})
    assert not {"fetch_url", "download", "web_search", "generate_image"} & set(registry.names())
    assert "switched off" in registry.unavailable["fetch_url"]


def test_png_paths() -> None:
    assert png_path("outputs/logo.png") == "outputs/logo.png"
    assert png_path("outputs/logo.jpg") == "outputs/logo.png"
    assert png_path("chart") == "chart.png"
    assert png_path("") == "outputs/image.png"


def test_doctor_says_why_search_is_off() -> None:
    off = _check_web_search(make_settings(web={"search_backend": "searxng"}))
    assert off.name == "web search" and off.level is Level.WARN
    assert "web.search_url is empty" in off.detail
    web = {"search_backend": "searxng", "search_url": "http://searx:8080"}
    on = _check_web_search(make_settings(web=web))
    assert on.level is Level.OK and on.detail == "searxng at http://searx:8080"
