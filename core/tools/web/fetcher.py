"""GET a URL the way every agent-facing fetch must: guarded, capped, redirects checked.

:class:`Fetcher` wraps one ``httpx.AsyncClient`` over the guarded transport
(:mod:`core.tools.web.transport`) and follows redirects itself, up to
``web.max_redirects``, checking each target's scheme and address before following it. The
whole fetch (redirects and body included) must finish within ``web.timeout_s``, and the
body is read as a stream and abandoned as soon as it passes ``web.max_bytes`` (counted
after decompression, so a small gzip bomb cannot blow up either).

Clients are reused: one per event loop and settings (:func:`fetcher_for`), since a client
per call costs seconds of CPU and hundreds of MB under load, and an httpx client belongs to
the loop that first used it. :func:`api_client_for` gives the plain client used for the
search APIs named in config (the operator's endpoints, not URLs an agent chose).
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass

import httpx

from core.config_tools import WebSettings
from core.tools.web.guard import Policy, Refused, WebError, check_literal
from core.tools.web.transport import GuardedTransport
from core.workspace.base import human_size

_REDIRECTS = {301, 302, 303, 307, 308}


class FetchError(WebError):
    """The URL could not be fetched (HTTP error, too large, too slow, unreachable)."""


@dataclass(frozen=True)
class Fetched:
    """A fetched resource: the final URL (after redirects), its media type and bytes."""

    url: str
    status: int
    content_type: str
    charset: str | None
    data: bytes
    redirects: tuple[str, ...] = ()


class Fetcher:
    """Guarded GETs with the caps of ``[web]``."""

    def __init__(self, web: WebSettings) -> None:
        self.web = web
        self.policy = Policy.from_allow(web.allow)
        self.client = httpx.AsyncClient(
            transport=GuardedTransport(self.policy),
            timeout=httpx.Timeout(web.timeout_s),
            follow_redirects=False,
            trust_env=False,
            headers={"User-Agent": web.user_agent},
        )

    async def get(self, url: str, *, accept: str = "*/*", max_bytes: int | None = None) -> Fetched:
        """Fetch ``url``; ``Refused`` or :class:`FetchError` with a message for the model."""
        web = self.web
        try:
            async with asyncio.timeout(web.timeout_s):
                return await self._get(url, accept, max_bytes or web.max_bytes)
        except (TimeoutError, httpx.TimeoutException):
            raise FetchError(
                f"{url} did not answer within {web.timeout_s:g} s (web.timeout_s); try again "
                "later or use another source"
            ) from None
        except httpx.HTTPError as exc:
            detail = str(exc) or type(exc).__name__
            raise FetchError(f"could not fetch {url}: {detail}") from None

    async def _get(self, url: str, accept: str, cap: int) -> Fetched:
        current = start_url(url, self.policy)
        hops: list[str] = []
        for _ in range(self.web.max_redirects + 1):
            request = self.client.build_request("GET", current, headers={"Accept": accept})
            try:
                response = await self.client.send(request, stream=True)
            except Refused as exc:
                raise Refused(_via(str(exc), hops, str(current))) from None
            try:
                location = response.headers.get("location")
                if response.status_code in _REDIRECTS and location:
                    hops.append(str(current))
                    try:
                        current = start_url(str(response.url.join(location)), self.policy)
                    except Refused as exc:
                        raise Refused(_via(str(exc), hops, location)) from None
                    continue
                if response.status_code >= 400:
                    raise FetchError(
                        f"{current} answered HTTP {response.status_code} "
                        f"{response.reason_phrase}".rstrip()
                    )
                data = await _read_capped(response, cap, str(current))
                media = response.headers.get("content-type", "").split(";")[0].strip().lower()
                return Fetched(
                    url=str(response.url),
                    status=response.status_code,
                    content_type=media,
                    charset=response.charset_encoding,
                    data=data,
                    redirects=tuple(hops),
                )
            finally:
                await response.aclose()
        raise FetchError(
            f"{url} redirected more than {self.web.max_redirects} times (web.max_redirects); "
            "give the final address instead"
        )

    async def aclose(self) -> None:
        await self.client.aclose()


def start_url(url: str, policy: Policy) -> httpx.URL:
    """``url`` parsed and checked before any connection: http(s), a host, and not a
    forbidden IP address written out (names are checked when connecting)."""
    try:
        parsed = httpx.URL(url.strip())
    except httpx.InvalidURL as exc:
        raise FetchError(f"{url!r} is not a valid URL ({exc}); give a full http(s) URL") from None
    if parsed.scheme not in ("http", "https"):
        scheme = parsed.scheme or "no scheme"
        raise Refused(
            f"refused: {url} uses {scheme}; only http and https URLs are fetched, such as "
            "'https://example.org/page'"
        )
    if not parsed.host:
        raise FetchError(f"{url!r} has no host; give a full URL such as 'https://example.org/'")
    check_literal(policy, parsed.host)
    return parsed


def _via(reason: str, hops: list[str], target: str) -> str:
    if not hops:
        return reason
    return f"{reason} (reached by a redirect from {hops[-1]} to {target})"


async def _read_capped(response: httpx.Response, cap: int, url: str) -> bytes:
    too_big = (
        f"{url} is larger than {human_size(cap)} (web.max_bytes); it was not read. Look for "
        "a smaller file, a summary page, or an API that returns less"
    )
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise FetchError(too_big)
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) > cap:
            raise FetchError(too_big)
    return bytes(data)


_fetchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[WebSettings, Fetcher]] = (
    weakref.WeakKeyDictionary()
)
_ApiKey = tuple[float, str]
_api_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_ApiKey, httpx.AsyncClient]]
_api_clients = weakref.WeakKeyDictionary()


def fetcher_for(web: WebSettings) -> Fetcher:
    """The running loop's :class:`Fetcher` for these settings (made on first use)."""
    per_loop = _fetchers.setdefault(asyncio.get_running_loop(), {})
    fetcher = per_loop.get(web)
    if fetcher is None or fetcher.client.is_closed:
        fetcher = per_loop[web] = Fetcher(web)
    return fetcher


def api_client_for(web: WebSettings) -> httpx.AsyncClient:
    """The running loop's plain client for configured search APIs."""
    per_loop = _api_clients.setdefault(asyncio.get_running_loop(), {})
    key = (web.timeout_s, web.user_agent)
    client = per_loop.get(key)
    if client is None or client.is_closed:
        client = per_loop[key] = httpx.AsyncClient(
            timeout=httpx.Timeout(web.timeout_s), headers={"User-Agent": web.user_agent}
        )
    return client


async def aclose_clients() -> None:
    """Close the running loop's clients (tests, and a process shutting down its loop)."""
    loop = asyncio.get_running_loop()
    for fetcher in _fetchers.pop(loop, {}).values():
        await fetcher.aclose()
    for client in _api_clients.pop(loop, {}).values():
        await client.aclose()
