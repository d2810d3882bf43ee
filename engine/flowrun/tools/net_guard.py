"""The address guard of the web tools: by default visit_url and web_search reach only public
addresses, so a prompt-injected page cannot make flowrun fetch from the user's machine or
network (server-side request forgery).

Refused: loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16,
fe80::/10, so the cloud metadata service at 169.254.169.254 and fd00:ec2::254 too), CGNAT
(100.64/10), multicast, unspecified, reserved and documentation ranges: everything Python's
`ipaddress` does not count as global; IPv4 addresses inside IPv6 (mapped `::ffff:a.b.c.d`,
6to4, Teredo, NAT64 `64:ff9b::/96`) are judged by the IPv4 address. A host name is judged by
every address it resolves to, and the check is made where the connection is opened (the
transport's network backend), so each redirect hop and a DNS answer that changes between a
check and the connection are covered too.

A tool's config loosens it: `allow_private: true` turns the guard off; `allow_hosts: [...]`
exempts host names (`example.internal`, `*.corp.example`) and addresses or networks
(`127.0.0.1`, `10.0.0.0/8`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
LOOSEN_HINT = "a workflow that needs it can set `allow_private: true` or `allow_hosts` in the tool's config"


class AddressRefused(Exception):
    """The guard refused a host or address; the message says which and why."""


def _embedded_v4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def blocked(ip: IPAddress) -> str | None:
    """Why `ip` is not a public address, or None when it is."""
    inner = _embedded_v4(ip)
    if inner is not None:
        why = blocked(inner)
        return f"{why} (inside the IPv6 address {ip})" if why else None
    for test, why in (
        (ip.is_loopback, "a loopback address"),
        (ip.is_unspecified, "the unspecified address"),
        (ip.is_link_local, "a link-local address (cloud metadata lives there)"),
        (ip.is_multicast, "a multicast address"),
        (ip in CGNAT if isinstance(ip, ipaddress.IPv4Address) else False, "a carrier-grade NAT address"),
        (ip.is_private, "a private address"),
        (not ip.is_global, "not a public address"),
    ):
        if test:
            return why
    return None


@dataclass(frozen=True, slots=True)
class NetPolicy:
    allow_private: bool = False
    allow_hosts: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> NetPolicy:
        hosts = config.get("allow_hosts") or ()
        if isinstance(hosts, str):
            hosts = (hosts,)
        return cls(bool(config.get("allow_private")), tuple(str(h).strip().lower() for h in hosts))

    def host_allowed(self, host: str) -> bool:
        host = host.strip("[]").lower()
        return any(not _is_network(p) and fnmatchcase(host, p) for p in self.allow_hosts)

    def address_allowed(self, ip: IPAddress) -> bool:
        for pattern in self.allow_hosts:
            network = _network(pattern)
            if network is not None and ip.version == network.version and ip in network:
                return True
        return False

    def check_address(self, ip: IPAddress, host: str) -> None:
        if self.allow_private or self.address_allowed(ip):
            return
        why = blocked(ip)
        if why is not None:
            shown = host if host == str(ip) else f"{host} ({ip})"
            raise AddressRefused(f"{shown} is {why}; only public addresses are fetched. {LOOSEN_HINT}")

    async def addresses(self, host: str, port: int) -> list[str]:
        """The addresses of `host` to connect to; AddressRefused if any of them is not allowed
        (a name that also resolves to a private address could be steered to it)."""
        bare = host.strip("[]")
        literal = _address(bare)
        if literal is not None:
            self.check_address(literal, bare)
            return [str(literal)]
        if self.allow_private or self.host_allowed(bare):
            return [bare]
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(bare, port, type=socket.SOCK_STREAM)
        except socket.gaierror as e:
            raise OSError(f"cannot resolve {bare}: {e.strerror or e}") from e
        found: list[str] = []
        for info in infos:
            ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            self.check_address(ip, bare)
            if str(ip) not in found:
                found.append(str(ip))
        return found

    async def check_url(self, url: str) -> None:
        """Refuse an http(s) URL whose host is not allowed (a check before a request made by a
        library whose connections the guard cannot see, e.g. the Tavily SDK)."""
        parts = urlsplit(url)
        if parts.hostname is None:
            raise AddressRefused(f"{url} names no host")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        await self.addresses(parts.hostname, port)


def _address(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _is_network(pattern: str) -> bool:
    return _network(pattern) is not None


def _network(pattern: str) -> IPNetwork | None:
    try:
        return ipaddress.ip_network(pattern, strict=False)
    except ValueError:
        return None
