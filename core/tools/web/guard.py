"""The SSRF guard: which addresses an agent's fetch may reach.

An agent chooses the URLs it fetches, and a page it reads may ask it to fetch others, so
every outbound request (and every redirect hop) is checked against the addresses it will
actually connect to: loopback, private, link-local, carrier-grade NAT, multicast, reserved
and unspecified addresses, and the cloud metadata endpoints, are refused unless the host,
the address or its network is listed in ``web.allow``. IPv6 forms that carry an IPv4
address (IPv4-mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``,
Teredo) are judged by the IPv4 address inside them too.

A host name is resolved with the event loop's ``getaddrinfo`` and *every* address it
resolves to must pass: a name that mixes public and private addresses is refused whole.
The check runs inside the connection itself (:mod:`core.tools.web.transport`), on the
address the socket then connects to, so a name cannot resolve to a public address for the
check and a private one for the connection (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_METADATA = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack, …
    ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
}
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_ALLOW_HINT = (
    "fetching private or local addresses is off (add the host to web.allow in config.toml "
    "to allow it)"
)


class WebError(Exception):
    """A fetch that cannot be done; the message says why and what to do instead."""


class Refused(WebError):
    """The guard refused a URL or an address."""


def address_kind(ip: IPAddress) -> str | None:
    """What makes ``ip`` off-limits, in plain words ("a loopback address"), or None for a
    public internet address."""
    if ip in _METADATA:
        return "a cloud metadata address"
    inner = embedded_ipv4(ip)
    if inner is not None and (kind := address_kind(inner)) is not None:
        return f"an IPv6 form of {inner}, {kind}"
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip in _CGNAT:
        return "a carrier-grade NAT (shared) address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_reserved:
        return "a reserved address"
    if ip.is_private:
        return "a private address"
    if not ip.is_global:
        return "not a public internet address"
    return None


def embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4, Teredo), if any."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if any(ip in net for net in _NAT64):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


@dataclass(frozen=True)
class Policy:
    """``web.allow`` parsed: host names, and addresses or networks (CIDR)."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_allow(cls, allow: tuple[str, ...] | list[str]) -> Policy:
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        for entry in allow:
            raw = entry.strip().strip("[]").lower()
            if not raw:
                continue
            try:
                networks.append(ipaddress.ip_network(raw, strict=False))
            except ValueError:
                hosts.add(raw.rstrip("."))
        return cls(frozenset(hosts), tuple(networks))

    def host_allowed(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.hosts

    def ip_allowed(self, ip: IPAddress) -> bool:
        forms = [ip] + ([inner] if (inner := embedded_ipv4(ip)) is not None else [])
        return any(form in net for form in forms for net in self.networks)

    def refusal(self, host: str, ip: IPAddress) -> str | None:
        """Why connecting to ``ip`` (for ``host``) is refused, or None if it may be."""
        if self.host_allowed(host) or self.ip_allowed(ip):
            return None
        kind = address_kind(ip)
        if kind is None:
            return None
        subject = f"{ip} is" if _same(host, ip) else f"{host} resolves to {ip},"
        return f"refused: {subject} {kind}; {_ALLOW_HINT}"


def parse_ip(host: str) -> IPAddress | None:
    """``host`` as an IP address (brackets and an IPv6 zone stripped), or None for a name."""
    raw = host.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(raw)
    except ValueError:
        return None


def check_literal(policy: Policy, host: str) -> None:
    """Refuse at once a host written as a forbidden IP address (no lookup needed)."""
    ip = parse_ip(host)
    if ip is not None and (reason := policy.refusal(host, ip)) is not None:
        raise Refused(reason)


async def resolve_checked(policy: Policy, host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, each one checked; ``Refused`` if any is not
    allowed, ``OSError`` (``socket.gaierror``) if the name does not resolve."""
    ip = parse_ip(host)
    if ip is not None:
        addresses = [ip]
    else:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )
        addresses = []
        for info in infos:
            found = parse_ip(str(info[4][0]))
            if found is not None and found not in addresses:
                addresses.append(found)
        if not addresses:
            raise socket.gaierror(f"{host} resolves to no address")
    for address in addresses:
        reason = policy.refusal(host, address)
        if reason is not None:
            raise Refused(reason)
    return [str(a) for a in addresses]


def _same(host: str, ip: IPAddress) -> bool:
    found = parse_ip(host)
    return found is not None and found == ip
