"""The web server's trust rules on their own (:mod:`bots.web.guard`): host names with
ports and brackets, wildcards, which requests count as from this site and as local. The
real server is tested end to end in tests/integration/test_web_trust.py."""

from __future__ import annotations

from starlette.datastructures import Headers

from bots.web.guard import allowed_hosts, host_allowed, host_name, is_local, same_site
from tests.conftest import make_settings


def test_host_names_drop_ports_and_brackets() -> None:
    assert host_name("Caramba.Example.com:8400") == "caramba.example.com"
    assert host_name("[::1]:8400") == "::1" and host_name("[::1]") == "::1"
    assert host_name("::1") == "::1" and host_name("localhost") == "localhost"
    assert host_name("") == ""


def test_allowed_hosts_default_to_loopback_plus_base_url() -> None:
    assert allowed_hosts(make_settings().web_ui) == ("127.0.0.1", "localhost", "::1")
    web = make_settings(
        web_ui={
            "base_url": "https://Caramba.example.com/",
            "allowed_hosts": ["ops.example.com:443", "*.internal.example", "[fd00::5]"],
        }
    ).web_ui
    hosts = allowed_hosts(web)
    assert hosts[3:] == ("caramba.example.com", "ops.example.com", "*.internal.example", "fd00::5")
    assert host_allowed("caramba.example.com:443", hosts)
    assert host_allowed("a.internal.example", hosts)
    assert not host_allowed("internal.example.evil", hosts)
    assert not host_allowed("caramba.example.com.attacker.example", hosts)
    assert not host_allowed("", hosts)
    assert host_allowed("anything.example", ("*",))


def test_a_state_change_must_come_from_this_site() -> None:
    def site(**h: str) -> bool:
        return same_site(Headers({"host": "127.0.0.1:8400", **h}))

    assert site(origin="http://127.0.0.1:8400")
    assert not site(origin="http://attacker.example:8400")
    assert not site(origin="http://localhost:3000")  # another site on this machine
    assert site(origin="null", **{"sec-fetch-site": "same-origin"})  # no-referrer forms
    assert not site(origin="null")
    assert not site(**{"sec-fetch-site": "cross-site"})
    assert not site(**{"sec-fetch-site": "same-site"})
    assert site(referer="http://127.0.0.1:8400/chat")
    assert not site(referer="http://attacker.example/")
    assert site()  # not a browser (curl): no other site can drive it
    proxied = Headers({"host": "127.0.0.1:8400", "x-forwarded-host": "caramba.example.com"})
    assert same_site(Headers({**proxied, "origin": "https://caramba.example.com"}))


def test_only_a_direct_loopback_request_naming_loopback_is_local() -> None:
    def scope(peer: str, *headers: tuple[str, str]) -> dict[str, object]:
        raw = [(k.encode(), v.encode()) for k, v in headers]
        return {"type": "http", "client": (peer, 5000), "headers": raw}

    assert is_local(scope("127.0.0.1", ("host", "127.0.0.1:8400")))
    assert is_local(scope("::1", ("host", "[::1]:8400")))
    assert is_local(scope("127.0.0.1", ("host", "localhost")))
    assert not is_local(scope("127.0.0.1", ("host", "caramba.attacker.example")))
    assert not is_local(scope("192.0.2.7", ("host", "127.0.0.1:8400")))
    assert not is_local(scope("127.0.0.1", ("host", "127.0.0.1"), ("x-forwarded-for", "1.2.3.4")))
    assert not is_local(scope("127.0.0.1", ("host", "127.0.0.1"), ("forwarded", "for=1.2.3.4")))
    assert not is_local({"type": "http", "client": None, "headers": []})
