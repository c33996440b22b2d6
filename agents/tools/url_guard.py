"""The SSRF guard of `web_fetch`: which URLs a model may have opened, and the address to open.

A URL passes when its scheme is http(s), it carries no credentials, and every address its host
resolves to is public (not loopback, private, link-local, the cloud metadata address, unspecified,
multicast or reserved), unless the host, host:port or a CIDR holding the address is listed in
WEB_FETCH_ALLOW. The check returns a `Target`: the address that was checked, to which the
connection then goes, so nothing resolves the name a second time (see `Target`).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass

import httpx
from django.conf import settings
from django.utils.translation import gettext as _

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

SCHEMES = ("http", "https")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # IPv4 addresses reached through a NAT64 gateway


class UrlRefused(Exception):
    """The URL may not be fetched; the message says why, for the model and the user."""


@dataclass(frozen=True)
class Target:
    """A URL cleared for fetching, pinned to the address that was checked.

    Why pinning: resolving the name once to check it and again to connect leaves a window in
    which a hostile DNS server answers a public address first and 127.0.0.1 next (DNS
    rebinding). The connection goes to `address` itself (`connect_url`), and the server still
    sees its own name: in the Host header and, for https, as the TLS SNI name and the name the
    certificate is verified against (httpx's `sni_hostname` request extension). Re-checking the
    peer address after connecting would also work, but would need the socket from httpcore's
    internals, and the request would already be on its way."""

    url: httpx.URL  # as asked, without its fragment
    host: str  # the name (ASCII, IDNA-encoded) for the Host header and TLS
    address: str  # the checked IP the connection goes to

    @property
    def connect_url(self) -> httpx.URL:
        """The URL with the checked address in place of the name."""
        return self.url.copy_with(host=self.address)

    @property
    def host_header(self) -> str:
        """The Host header: the name, with the port when it is not the scheme's default."""
        default = 443 if self.url.scheme == "https" else 80
        name = f"[{self.host}]" if ":" in self.host else self.host
        port = self.url.port
        return name if port in (None, default) else f"{name}:{port}"


def url_target(raw: str | httpx.URL, *, resolve: Resolver | None = None) -> Target:
    """Check a URL and every address its host resolves to; the target to connect to, or
    UrlRefused."""
    url = _parsed(raw)
    host = url.raw_host.decode("ascii").lower()
    port = url.port or (443 if url.scheme == "https" else 80)
    addresses = (resolve or _resolve)(host, port)
    if not addresses:
        raise UrlRefused(_("The address of %(host)s could not be found.") % {"host": host})
    for address in addresses:
        if not _allowed(host, port, address) and address_forbidden(address):
            raise UrlRefused(
                _(
                    "%(host)s is a local or private address (%(address)s); web_fetch opens only "
                    "public pages unless an admin lists it in WEB_FETCH_ALLOW."
                )
                % {"host": host, "address": address}
            )
    return Target(url=url, host=host, address=addresses[0])


def _parsed(raw: str | httpx.URL) -> httpx.URL:
    """The URL, if it is an absolute http(s) URL without credentials (fragment dropped)."""
    try:
        url = httpx.URL(raw) if isinstance(raw, str) else raw
    except httpx.InvalidURL as exc:
        raise UrlRefused(_("%(url)s is not a valid URL.") % {"url": raw}) from exc
    if url.scheme not in SCHEMES or not url.raw_host:
        raise UrlRefused(_("Only http and https URLs can be fetched, not %(url)s.") % {"url": raw})
    if url.userinfo:
        raise UrlRefused(_("URLs with a user name or password are not fetched."))
    return url.copy_with(fragment=None)


def _resolve(host: str, port: int) -> list[str]:
    """Every address of the host (an IP literal is its own), in the resolver's order."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UrlRefused(_("The address of %(host)s could not be found.") % {"host": host}) from exc
    # An IPv6 link-local answer may carry a zone ("fe80::1%eth0"); the zone is not the address.
    return list(dict.fromkeys(str(info[4][0]).split("%", 1)[0] for info in found))


def address_forbidden(address: str) -> bool:
    """Whether the address is one a fetch must not reach: anything but a public unicast one."""
    ip: IPAddress = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        # An IPv6 spelling of an IPv4 address is judged as that IPv4 address.
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip in _NAT64:
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local  # 169.254/16 (the metadata address 169.254.169.254), fe80::/10
        or ip.is_unspecified
        or ip.is_multicast
        or ip.is_reserved
        or not ip.is_global  # the rest of IANA's special-purpose ranges (e.g. 100.64/10)
    )


def _allowed(host: str, port: int, address: str) -> bool:
    """Whether WEB_FETCH_ALLOW lists the host, the host on this port, or the address."""
    ip = ipaddress.ip_address(address)
    for entry in settings.WEB_FETCH_ALLOW:
        entry = entry.strip().lower()
        if "/" in entry:
            if _in_network(ip, entry):
                return True
            continue
        name, listed_port = _host_port(entry)
        if listed_port is not None and listed_port != port:
            continue
        if name in (host, address) or _same_address(name, ip):
            return True
    return False


def _in_network(ip: IPAddress, entry: str) -> bool:
    """Whether the address is inside the CIDR `entry` (a malformed entry holds nothing)."""
    try:
        return ip in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False


def _host_port(entry: str) -> tuple[str, int | None]:
    """An allow entry as (host, port or None): "host", "host:8080", "[::1]:8080", "::1"."""
    if entry.startswith("["):
        name, _sep, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif entry.count(":") == 1:
        name, _sep, port = entry.partition(":")
    else:
        name, port = entry, ""
    if not port:
        return name, None
    # A port that is not a number matches no port, so a typo never opens every port.
    return name, int(port) if port.isdigit() else -1


def _same_address(name: str, ip: IPAddress) -> bool:
    """Whether an allow entry is an IP literal equal to the address (e.g. "::1" and "0::1")."""
    try:
        return ipaddress.ip_address(name) == ip
    except ValueError:
        return False
