"""The SSRF guard's pure parts: which addresses are refused and how it says so, what
web.allow lets through, the URL checks before any connection, and that the transport
really connects through the guard."""

from __future__ import annotations

import ipaddress

import httpcore
import pytest

from core.config_tools import WebSettings
from core.tools.web.fetcher import Fetcher, FetchError, start_url
from core.tools.web.guard import (
    Policy,
    Refused,
    address_kind,
    check_literal,
    embedded_ipv4,
    resolve_checked,
)
from core.tools.web.transport import GuardedBackend, GuardedTransport

NO_ALLOW = Policy.from_allow(())


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.8.9.10", "a loopback address"),
        ("::1", "a loopback address"),
        ("10.0.0.1", "a private address"),
        ("172.16.5.4", "a private address"),
        ("192.168.1.1", "a private address"),
        ("fc00::1", "a private address"),
        ("169.254.169.254", "a cloud metadata address"),
        ("fd00:ec2::254", "a cloud metadata address"),
        ("169.254.1.1", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("100.64.0.1", "a carrier-grade NAT (shared) address"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("0.0.0.0", "an unspecified address"),
        ("::", "an unspecified address"),
        ("240.0.0.1", "a reserved address"),
        ("::ffff:127.0.0.1", "an IPv6 form of 127.0.0.1, a loopback address"),
        ("::ffff:169.254.169.254", "an IPv6 form of 169.254.169.254, a cloud metadata address"),
        ("64:ff9b::a00:1", "an IPv6 form of 10.0.0.1, a private address"),
        ("2002:7f00:1::", "an IPv6 form of 127.0.0.1, a loopback address"),
    ],
)
def test_non_public_addresses_are_named(address: str, kind: str) -> None:
    assert address_kind(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert address_kind(ipaddress.ip_address(address)) is None
    check_literal(NO_ALLOW, address)


def test_embedded_ipv4_forms() -> None:
    assert str(embedded_ipv4(ipaddress.ip_address("::ffff:10.1.2.3"))) == "10.1.2.3"
    assert embedded_ipv4(ipaddress.ip_address("2606:4700::1111")) is None
    assert embedded_ipv4(ipaddress.ip_address("10.1.2.3")) is None


def test_refusal_says_what_and_how_to_allow() -> None:
    with pytest.raises(Refused) as caught:
        check_literal(NO_ALLOW, "127.0.0.1")
    assert str(caught.value) == (
        "refused: 127.0.0.1 is a loopback address; fetching private or local addresses is "
        "off (add the host to web.allow in config.toml to allow it)"
    )
    reason = NO_ALLOW.refusal("intranet.example", ipaddress.ip_address("10.0.0.7"))
    assert reason is not None
    assert reason.startswith("refused: intranet.example resolves to 10.0.0.7, a private address")


def test_allow_list_takes_hosts_addresses_and_networks() -> None:
    policy = Policy.from_allow(["Wiki.Internal.", "10.20.0.0/16", "127.0.0.1", "[::1]", " "])
    assert policy.hosts == frozenset({"wiki.internal"})
    assert policy.refusal("wiki.internal", ipaddress.ip_address("10.9.9.9")) is None
    assert policy.refusal("x", ipaddress.ip_address("10.20.3.4")) is None
    assert policy.refusal("x", ipaddress.ip_address("10.21.3.4")) is not None
    assert policy.refusal("x", ipaddress.ip_address("127.0.0.1")) is None
    assert policy.refusal("x", ipaddress.ip_address("127.0.0.2")) is not None
    assert policy.refusal("x", ipaddress.ip_address("::1")) is None
    # The IPv4-mapped form of an allowed address is the same host.
    assert policy.refusal("x", ipaddress.ip_address("::ffff:127.0.0.1")) is None
    # An allowed network never lets the metadata address through by accident.
    assert NO_ALLOW.refusal("x", ipaddress.ip_address("169.254.169.254")) is not None


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
        ("http://[::1]:8080/x", "::1 is a loopback address"),
        ("https://10.0.0.1/admin", "10.0.0.1 is a private address"),
        ("http://169.254.169.254/latest/meta-data/", "a cloud metadata address"),
        ("http://[fd00:ec2::254]/", "a cloud metadata address"),
        ("http://[::ffff:7f00:1]/", "an IPv6 form of 127.0.0.1"),
        ("file:///etc/passwd", "uses file; only http and https URLs are fetched"),
        ("gopher://example.org/", "uses gopher"),
        ("example.org/page", "uses no scheme"),
    ],
)
def test_urls_refused_before_connecting(url: str, expected: str) -> None:
    with pytest.raises(Refused, match="refused: ") as caught:
        start_url(url, NO_ALLOW)
    assert expected in str(caught.value)


def test_url_without_host_is_an_error_not_a_crash() -> None:
    with pytest.raises(FetchError, match="no host"):
        start_url("http:///path", NO_ALLOW)


async def test_a_name_resolving_to_loopback_is_refused() -> None:
    with pytest.raises(Refused, match=r"localhost resolves to (127\.0\.0\.1|::1), a loopback"):
        await resolve_checked(NO_ALLOW, "localhost", 80)
    allowed = await resolve_checked(Policy.from_allow(["localhost"]), "localhost", 80)
    assert "127.0.0.1" in allowed or "::1" in allowed


async def test_fetcher_refuses_literal_addresses_without_connecting() -> None:
    fetcher = Fetcher(WebSettings())
    try:
        for url in ("http://127.0.0.1:9/", "http://[::1]:9/", "http://10.0.0.1/"):
            with pytest.raises(Refused, match=r"web\.allow"):
                await fetcher.get(url)
    finally:
        await fetcher.aclose()


def test_transport_connects_through_the_guard() -> None:
    # httpx takes no network backend; GuardedTransport replaces its pool. If an httpx
    # upgrade renamed that attribute, requests would bypass the guard: fail here instead.
    transport = GuardedTransport(NO_ALLOW)
    pool = transport._pool
    assert isinstance(pool, httpcore.AsyncConnectionPool)
    assert isinstance(pool._network_backend, GuardedBackend)
