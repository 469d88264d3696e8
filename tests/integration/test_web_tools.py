"""The web and image tools against real local servers: an aiohttp site on 127.0.0.1
(reachable only through a test allow-list), fakes speaking SearXNG's and Brave's JSON, and
the OpenAI-compatible fake's images endpoint through the real litellm path.

Nothing leaves the machine: the SSRF refusals never connect, and the network guard of
tests/conftest.py fails any lookup of a name other than loopback.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from aiohttp import web

from core.errors import ToolRetry
from core.state import spend as spend_ledger
from core.state.keys import Keys
from core.state.store import Store
from core.tools.images import generate_image
from core.tools.web.fetcher import aclose_clients
from core.tools.web.tools import download, fetch_url, web_search
from core.workspace import Workspace, WorkspaceCaps
from core.workspace.local_store import LocalWorkspace
from tests.conftest import make_settings
from tests.fakes.llm_server import FakeLLMServer

pytestmark = pytest.mark.integration

ARTICLE = """<!DOCTYPE html><html><head><title>Otters of the Rhine</title></head><body>
<nav><a href="/">Home</a> | <a href="/shop">Shop</a></nav><article><h1>Otters of the Rhine</h1>
<p>The Eurasian otter returned to the Rhine in 2019 after decades of absence; the survey
counted three families near Basel and more upstream.</p>
<p>They eat fish, crayfish and frogs, and hunt at night along the banks.</p></article>
<footer>Cookie settings</footer><script>track("visit")</script></body></html>"""

SEARXNG_JSON = {
    "query": "otters",
    "number_of_results": 2,
    "results": [
        {
            "url": "https://en.wikipedia.org/wiki/Eurasian_otter",
            "title": "Eurasian otter - Wikipedia",
            "content": "The <b>Eurasian otter</b> is a semiaquatic mammal &amp; more.",
            "engine": "wikipedia",
            "engines": ["wikipedia", "duckduckgo"],
            "score": 2.0,
            "category": "general",
        },
        {
            "url": "https://otters.example/rhine",
            "title": "Otters back in the Rhine",
            "content": "Three families counted near Basel.",
            "engine": "bing",
            "engines": ["bing"],
            "score": 1.0,
            "category": "general",
        },
    ],
    "answers": [],
    "corrections": [],
    "infoboxes": [],
    "suggestions": ["otter diet"],
    "unresponsive_engines": [],
}

BRAVE_JSON = {
    "type": "search",
    "query": {"original": "otters", "more_results_available": True},
    "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": False}]},
    "web": {
        "type": "search",
        "family_friendly": True,
        "results": [
            {
                "type": "search_result",
                "title": "Eurasian otter - Wikipedia",
                "url": "https://en.wikipedia.org/wiki/Eurasian_otter",
                "description": "The <strong>Eurasian otter</strong> is a semiaquatic mammal.",
                "is_source_local": False,
                "language": "en",
                "profile": {"name": "Wikipedia", "url": "https://en.wikipedia.org"},
            }
        ],
    },
}


class Site:
    """The local test site; ``seen`` records each request's path and query."""

    def __init__(self) -> None:
        self.seen: list[web.Request] = []
        self.base = ""
        self.port = 0
        self.searx_formats: tuple[str, ...] = ("html", "json")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/{name:.*}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(request)
        name = request.match_info["name"]
        if name == "article":
            return web.Response(text=ARTICLE, content_type="text/html")
        if name == "data.json":
            return web.json_response({"otters": 3})
        if name == "long.txt":
            return web.Response(text="".join(f"line {i:04d}\n" for i in range(3000)))
        if name == "report.pdf":
            return web.Response(body=b"%PDF-1.7\n" + b"\x00" * 2000, content_type="application/pdf")
        if name == "big":
            return web.Response(body=b"x" * 3000, content_type="text/plain")
        if name == "drip":  # no Content-Length: the cap must hold while streaming
            response = web.StreamResponse(headers={"Content-Type": "text/plain"})
            await response.prepare(request)
            for _ in range(8):
                await response.write(b"y" * 512)
            await response.write_eof()
            return response
        if name == "slow":
            await asyncio.sleep(3)
            return web.Response(text="too late")
        if name == "redirect":
            raise web.HTTPFound(request.query["to"])
        if name == "loop":
            raise web.HTTPFound("/loop")
        if name == "search":  # SearXNG
            if request.query.get("format") not in self.searx_formats:
                return web.Response(status=403, text="format not allowed")
            return web.json_response(SEARXNG_JSON)
        if name == "res/v1/web/search":  # Brave
            if request.headers.get("X-Subscription-Token") != "brave-test-key":
                return web.json_response({"type": "ErrorResponse"}, status=401)
            return web.json_response(BRAVE_JSON)
        return web.Response(status=404, text="no such page")


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    s = Site()
    runner = web.AppRunner(s.app(), access_log=None, handler_cancellation=True)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    s.port = runner.addresses[0][1]
    s.base = f"http://127.0.0.1:{s.port}"
    yield s
    await aclose_clients()
    await runner.cleanup()


class Ctx:
    """What the web tools use of a ToolContext."""

    def __init__(self, workspace: Workspace, **settings: Any) -> None:
        self.workspace = workspace
        self.run_id = "run_web"
        self.settings = make_settings(**settings)
        # Where an image call's cost is counted (the spend ledger, core.state.spend).
        self.store = Store(fakeredis.FakeAsyncRedis(decode_responses=True), Keys("t"), 100)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return LocalWorkspace(tmp_path, WorkspaceCaps(100_000, 1_000_000, 50))


def allowed(workspace: Workspace, **web: Any) -> Ctx:
    return Ctx(workspace, web={"allow": ["127.0.0.1"], **web})


async def test_fetch_url_reads_a_page_as_text(site: Site, workspace: Workspace) -> None:
    out = await fetch_url.fn(allowed(workspace), url=f"{site.base}/article")
    assert out.startswith("Title: Otters of the Rhine\nURL: http://127.0.0.1:")
    assert "returned to the Rhine in 2019" in out
    assert "track(" not in out and "Cookie settings" not in out
    assert site.seen[-1].headers["User-Agent"].startswith("CarambaBot/")
    data = await fetch_url.fn(allowed(workspace), url=f"{site.base}/data.json")
    assert data.endswith('{"otters": 3}')
    pdf = await fetch_url.fn(allowed(workspace), url=f"{site.base}/report.pdf")
    assert "application/pdf" in pdf and "download(url, path)" in pdf


async def test_long_text_comes_in_pages(site: Site, workspace: Workspace) -> None:
    ctx = allowed(workspace, max_chars=5000)
    url = f"{site.base}/long.txt"
    first = await fetch_url.fn(ctx, url=url)
    assert "Page 1 of 6" in first and "line 0000" in first
    assert f'fetch_url(url="{url}", page=2)' in first
    last = await fetch_url.fn(ctx, url=url, page=6)
    assert "line 2999" in last and "more page" not in last
    with pytest.raises(ToolRetry, match="ask for 1–6"):
        await fetch_url.fn(ctx, url=url, page=7)


async def test_redirects_are_followed_and_shown(site: Site, workspace: Workspace) -> None:
    out = await fetch_url.fn(allowed(workspace), url=f"{site.base}/redirect?to=/data.json")
    assert f"URL: {site.base}/data.json (redirected from {site.base}/redirect?to=/data.json)" in out
    with pytest.raises(ToolRetry, match=r"redirected more than 2 times \(web.max_redirects\)"):
        await fetch_url.fn(allowed(workspace, max_redirects=2), url=f"{site.base}/loop")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:{port}/article", "refused: 127.0.0.1 is a loopback address"),
        ("http://[::1]:{port}/article", "refused: ::1 is a loopback address"),
        ("http://10.0.0.1/", "refused: 10.0.0.1 is a private address"),
        ("http://169.254.169.254/latest/meta-data/", "a cloud metadata address"),
        ("http://localhost:{port}/article", "refused: localhost resolves to"),
    ],
)
async def test_local_and_private_addresses_are_refused_by_default(
    site: Site, workspace: Workspace, url: str, expected: str
) -> None:
    ctx = Ctx(workspace)
    for tool in (fetch_url, download):
        with pytest.raises(ToolRetry) as caught:
            await tool.fn(ctx, url=url.format(port=site.port))
        message = str(caught.value)
        assert expected in message
        assert "add the host to web.allow in config.toml" in message
    assert site.seen == []  # refused before any request reached the server


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.2:{port}/article",
        "http://[::1]:{port}/",
        "http://169.254.169.254/",
        "http://10.0.0.1/",
    ],
)
async def test_a_redirect_from_an_allowed_host_to_a_local_one_is_refused(
    site: Site, workspace: Workspace, target: str
) -> None:
    to = target.format(port=site.port)
    with pytest.raises(ToolRetry) as caught:
        await fetch_url.fn(allowed(workspace), url=f"{site.base}/redirect?to={to}")
    message = str(caught.value)
    assert message.startswith("refused: ") and "web.allow" in message
    assert f"reached by a redirect from {site.base}/redirect" in message
    assert [r.path for r in site.seen] == ["/redirect"]  # the target was never requested


async def test_size_cap_holds_with_and_without_content_length(
    site: Site, workspace: Workspace
) -> None:
    ctx = allowed(workspace, max_bytes=2048)
    for name in ("big", "drip"):
        with pytest.raises(ToolRetry, match=r"larger than 2.0 KB \(web.max_bytes\)"):
            await fetch_url.fn(ctx, url=f"{site.base}/{name}")
    with pytest.raises(ToolRetry, match="larger than"):
        await download.fn(ctx, url=f"{site.base}/big", path="big.txt")
    assert await workspace.files("run_web") == []


async def test_a_slow_server_times_out(site: Site, workspace: Workspace) -> None:
    started = asyncio.get_running_loop().time()
    with pytest.raises(ToolRetry, match=r"did not answer within 0.4 s \(web.timeout_s\)"):
        await fetch_url.fn(allowed(workspace, timeout_s=0.4), url=f"{site.base}/slow")
    assert asyncio.get_running_loop().time() - started < 2


async def test_http_errors_are_reported(site: Site, workspace: Workspace) -> None:
    with pytest.raises(ToolRetry, match="answered HTTP 404 Not Found"):
        await fetch_url.fn(allowed(workspace), url=f"{site.base}/missing")


async def test_download_saves_into_the_workspace(site: Site, workspace: Workspace) -> None:
    ctx = allowed(workspace)
    out = await download.fn(ctx, url=f"{site.base}/report.pdf", path="docs/report.pdf")
    assert out.startswith("Saved docs/report.pdf (2.0 KB, application/pdf) from http://127.0.0.1")
    assert (await workspace.read("run_web", "docs/report.pdf")).startswith(b"%PDF-1.7")
    named = await download.fn(ctx, url=f"{site.base}/data.json")
    assert named.startswith("Saved data.json (13 B, application/json)")
    with pytest.raises(ToolRetry, match="leaves the workspace"):
        await download.fn(ctx, url=f"{site.base}/data.json", path="../escape.json")


async def test_searxng_backend_speaks_its_json(site: Site, workspace: Workspace) -> None:
    ctx = Ctx(workspace, web={"search_backend": "searxng", "search_url": site.base})
    out = await web_search.fn(ctx, query="otters")
    assert out.splitlines()[:3] == [
        "Results for 'otters' (searxng):",
        "1. Eurasian otter - Wikipedia — https://en.wikipedia.org/wiki/Eurasian_otter — "
        "The Eurasian otter is a semiaquatic mammal & more.",
        "2. Otters back in the Rhine — https://otters.example/rhine — Three families counted "
        "near Basel.",
    ]
    query = site.seen[-1].query
    assert (query["q"], query["format"]) == ("otters", "json")
    one = Ctx(
        workspace, web={"search_backend": "searxng", "search_url": site.base, "max_results": 1}
    )
    assert "2. " not in await web_search.fn(one, query="otters")


async def test_searxng_without_json_says_what_to_enable(site: Site, workspace: Workspace) -> None:
    site.searx_formats = ("html",)  # SearXNG's default settings.yml: JSON off, 403
    ctx = Ctx(workspace, web={"search_backend": "searxng", "search_url": site.base})
    with pytest.raises(ToolRetry, match=r"add json to search\.formats"):
        await web_search.fn(ctx, query="otters")


async def test_brave_backend_sends_the_key_and_reads_its_json(
    site: Site, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = f"{site.base}/res/v1/web/search"
    web_cfg = {"search_backend": "brave", "search_api_key_env": "CARAMBA_TEST_BRAVE_KEY"}
    monkeypatch.setenv("CARAMBA_TEST_BRAVE_KEY", "brave-test-key")
    ctx = Ctx(workspace, web={**web_cfg, "search_url": endpoint})
    out = await web_search.fn(ctx, query="otters")
    assert (
        "1. Eurasian otter - Wikipedia — https://en.wikipedia.org/wiki/Eurasian_otter — "
        "The Eurasian otter is a semiaquatic mammal." in out
    )
    assert site.seen[-1].query["q"] == "otters" and site.seen[-1].query["count"] == "5"
    monkeypatch.setenv("CARAMBA_TEST_BRAVE_KEY", "wrong")
    with pytest.raises(ToolRetry, match=r"refused the key \(HTTP 401\).*CARAMBA_TEST_BRAVE_KEY"):
        await web_search.fn(ctx, query="otters")


async def test_generate_image_through_litellm_saves_a_png(workspace: Workspace) -> None:
    async with FakeLLMServer() as llm:
        images = {"model": "openai/gpt-image-1", "api_base": llm.base_url, "size": "1024x1024"}
        ctx = Ctx(workspace, images=images)
        out = await generate_image.fn(ctx, prompt="an otter reading a map", path="outputs/otter")
        assert out.startswith("Saved outputs/otter.png (")
        assert "1×1 pixels, made by openai/gpt-image-1 (cost $0.0" in out
        # The call's cost is counted to the run, under the image model, for the ledger.
        counted = await spend_ledger.image_costs(ctx.store, "run_web")  # type: ignore[arg-type]
        assert list(counted) == ["openai/gpt-image-1"] and counted["openai/gpt-image-1"] > 0
        assert f"cost ${counted['openai/gpt-image-1']:.4f}" in out
        data = await workspace.read("run_web", "outputs/otter.png")
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        request = llm.requests[-1]
        assert request["prompt"] == "an otter reading a map" and request["size"] == "1024x1024"

        # A provider answering with a URL: fetched through the guard, so a local address
        # is refused unless allowed.
        llm.image_format = "url"
        with pytest.raises(ToolRetry, match=r"refused: 127\.0\.0\.1 is a loopback address"):
            await generate_image.fn(ctx, prompt="an otter", path="outputs/url.png")
        ctx = Ctx(workspace, images=images, web={"allow": ["127.0.0.1"]})
        out = await generate_image.fn(ctx, prompt="an otter", path="outputs/url.png")
        assert out.startswith("Saved outputs/url.png")
        await aclose_clients()


async def test_image_model_errors_come_back_readable(workspace: Workspace) -> None:
    from tests.fakes.llm_server import FakeFailure

    async with FakeLLMServer() as llm:
        llm.script(FakeFailure(400, "Your request was rejected by the safety system."))
        ctx = Ctx(workspace, images={"model": "openai/gpt-image-1", "api_base": llm.base_url})
        with pytest.raises(ToolRetry, match=r"image model openai/gpt-image-1 failed: .*safety"):
            await generate_image.fn(ctx, prompt="something", path="x.png")


def test_the_site_fixture_serves_real_json() -> None:
    # Guard against the fakes drifting from the documented formats' key fields.
    assert {"url", "title", "content"} <= set(SEARXNG_JSON["results"][0])  # type: ignore[index]
    assert json.loads(json.dumps(BRAVE_JSON))["web"]["results"][0]["description"]
