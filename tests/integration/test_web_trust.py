"""``caramba web`` trusts names, not sockets: the real server (``caramba web --demo`` in a
child process, on 127.0.0.1) refuses a foreign Host (DNS rebinding), a form from another
site (a rebinding page's Origin) and a request through a proxy without an operator's
link, while its own pages, the operator's link, a configured host name and a configured
proxy still work."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from bots.web.access import OPERATOR, Signer
from tests.integration.processes import Process, free_port, worker_env

pytestmark = pytest.mark.integration

SECRET = "t" * 40


def operator_token() -> str:
    """The operator's link token, made when a test asks (one made at import could expire
    before a long suite reaches these tests)."""
    return Signer(SECRET.encode()).token(OPERATOR, 600)


REBINDING = "http://attacker.example:8400"
TASK = "Compare Postgres, MySQL and SQLite for a web app"


def web(**settings: str) -> Iterator[str]:
    port = free_port()
    env = worker_env(**settings)
    env["CARAMBA_WEB_SECRET"] = SECRET
    args = [sys.executable, "-m", "bots.cli", "web", "--demo", "--pace", "0", "--port", str(port)]
    proc = Process(args, env, "web")
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.returncode is None, proc.tail()
            assert time.monotonic() < deadline, proc.tail()
            time.sleep(0.05)
        yield base
    finally:
        proc.cleanup()


@pytest.fixture
def default_web() -> Iterator[str]:
    yield from web()


@pytest.fixture
def configured_web() -> Iterator[str]:
    yield from web(
        web_ui__allowed_hosts='["caramba.example.com"]',
        web_ui__forwarded_allow_ips='["127.0.0.1"]',
    )


def until(c: httpx.Client, path: str, pattern: str, timeout_s: float = 30) -> str:
    deadline = time.monotonic() + timeout_s
    while not re.search(pattern, html := c.get(path).text):
        assert time.monotonic() < deadline, f"{pattern!r} never showed:\n{html[-2000:]}"
        time.sleep(0.1)
    return html


def test_foreign_host_rebinding_origin_and_proxies_are_refused(default_web: str) -> None:
    here = default_web.removeprefix("http://")
    with httpx.Client(base_url=default_web, timeout=20) as c:
        # (1) A foreign Host (a rebinding page's requests carry its own name): 400, no list.
        foreign = c.get("/", headers={"host": "caramba.attacker.example"})
        assert foreign.status_code == 400 and "/runs/" not in foreign.text
        assert "[web_ui] allowed_hosts" in foreign.text
        assert "CARAMBA_WEB_UI__ALLOWED_HOSTS" in foreign.text
        rebound = c.post(
            "/chat",
            data={"task": TASK},
            headers={"host": "attacker.example:8400", "origin": REBINDING},
        )
        assert rebound.status_code == 400
        # (2) The loopback Host but another site's Origin (or Sec-Fetch-Site): 403.
        for headers in ({"origin": REBINDING}, {"sec-fetch-site": "cross-site"}):
            refused = c.post("/chat", data={"task": TASK}, headers=headers)
            assert refused.status_code == 403 and "another site" in refused.text
        referred = c.post("/chat", data={"task": TASK}, headers={"referer": f"{REBINDING}/x"})
        assert referred.status_code == 403
        assert "/runs/" not in c.get("/").text  # no run was started
        # (3) Through a reverse proxy on this host, without the operator's link: 403.
        for proxied in (
            {"x-forwarded-for": "203.0.113.9"},
            {"x-forwarded-host": here, "x-forwarded-proto": "https"},
            {"forwarded": "for=203.0.113.9"},
        ):
            listed = c.get("/", headers=proxied)
            assert listed.status_code == 403 and "operator's link" in listed.text
            assert c.get("/chat", headers=proxied).status_code == 403
            posted = c.post(
                "/chat", data={"task": TASK}, headers={**proxied, "origin": f"http://{here}"}
            )
            assert posted.status_code == 403
        forwarded = {"x-forwarded-for": "1.2.3.4"}
        assert c.get("/", headers=forwarded, params={"t": operator_token()}).status_code == 200

        # The server's own pages: a request and its approval from this origin work, an
        # approval from the rebinding page does not.
        assert c.get("/").status_code == 200 and c.get("/chat").status_code == 200
        own = {"origin": default_web}
        asked = c.post("/chat", data={"task": TASK}, headers=own)
        assert asked.status_code == 303
        thread = asked.headers["location"]
        until(c, thread, r'value="approve"')
        evil = c.post(f"{thread}/act", data={"action": "approve"}, headers={"origin": REBINDING})
        assert evil.status_code == 403
        assert 'value="approve"' in c.get(thread).text  # still waiting for approval
        # A browser's form under the pages' no-referrer policy: Origin null, same-origin.
        browser = {"origin": "null", "sec-fetch-site": "same-origin"}
        approved = c.post(f"{thread}/act", data={"action": "approve"}, headers=browser)
        assert approved.status_code == 303
        until(c, thread, r'class="msg k-result"', timeout_s=60)
        assert "/runs/" in c.get("/").text
        # [::1] and localhost are loopback names too.
        assert c.get("/", headers={"host": "localhost"}).status_code == 200
        assert c.get("/healthz", headers={"host": "[::1]:8400"}).status_code == 200


def test_a_configured_host_and_proxy_work_with_the_operators_link(configured_web: str) -> None:
    name = "caramba.example.com"
    with httpx.Client(base_url=configured_web, timeout=20) as c:
        assert c.get("/", headers={"host": "other.example.com"}).status_code == 400
        # The configured name is answered, but it is not local: the link is needed.
        assert c.get("/", headers={"host": name}).status_code == 403
        assert c.get("/chat", headers={"host": name}).status_code == 403
        assert c.get("/", headers={"host": name}, params={"t": operator_token()}).status_code == 200
        asked = c.post(
            "/chat",
            params={"t": operator_token()},
            data={"task": "What is 2+2?"},
            headers={"host": name, "origin": f"https://{name}"},
        )
        assert asked.status_code == 303 and "?t=" in asked.headers["location"]
        # Through the configured proxy (127.0.0.1): believed, still not local.
        proxied = {
            "x-forwarded-for": "203.0.113.9",
            "x-forwarded-proto": "https",
            "x-forwarded-host": name,
        }
        assert c.get("/", headers=proxied).status_code == 403
        assert c.get("/", headers=proxied, params={"t": operator_token()}).status_code == 200
        assert c.get("/", headers={"x-forwarded-host": "evil.example"}).status_code == 400
