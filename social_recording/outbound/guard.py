"""The public-address and scheme guard every followed redirect (and every shortener hop) passes.

Why one guard: a redirect is the provider, the shortener or a hostile page choosing where our next
request goes. Without a check, `Location: http://169.254.169.254/…` or `http://127.0.0.1:6379/` turns
our own worker into a client of the cloud metadata service or the lock server (SSRF). The shortlink
resolver, the provider clients and RDAP (which redirects by design) must refuse exactly the same
targets, so the rule lives here once.

The rule for a target URL:
- the scheme is http or https;
- a literal IP host — including legacy IPv4 spellings resolvers accept (`2130706433`, `0x7f.1`) — must
  be public; IPv4-mapped, 6to4, Teredo and NAT64-embedded IPv4 are unwrapped and checked as IPv4;
- a `localhost` name (RFC 6761) is loopback by definition;
- any other name is resolved (when a resolver is given) and EVERY address must be public.

Known gap (accepted): DNS rebinding between this check and the connect. The transport resolves the
name again, so a hostile DNS server answering a public address to us and a private one to the socket
would slip through. Closing it needs a transport that connects to the checked address with the
original SNI/Host.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
ResolveHost = Callable[[str], Sequence[str]]
"""host name -> every address it resolves to (the system resolver, or the sandbox's fake DNS)."""

ALLOWED_SCHEMES = frozenset({"http", "https"})

_LEGACY_IPV4 = re.compile(r"[0-9a-fx.]+")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_HOST_CHARS = 100


class UnsafeTarget(Exception):
    """The target must not be contacted. `reason` names the target (scheme, address or host) as a noun
    phrase fit for "refused redirect to <reason>"; it never carries a URL's path or query."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UnresolvedHost(Exception):
    """The host name could not be resolved, so it could not be checked: nothing was sent. Unlike
    UnsafeTarget this is a network condition a later attempt may not meet."""

    def __init__(self, host: str, detail: str) -> None:
        super().__init__(f"cannot resolve host {_shown(host)}: {detail}")
        self.host = host
        self.detail = detail


def wire_host(url: httpx.URL) -> str:
    """The host as it goes on the wire: ASCII, punycode kept (`xn--ls8h.la`). httpx's `.host` decodes
    punycode with IDNA 2008, which refuses labels such as emoji that browsers and registries accept."""
    return url.raw_host.decode("ascii").lower()


def default_resolve_host(host: str) -> list[str]:
    """Every address the system resolver gives for `host` (all of them are checked)."""
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    out: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in out:
            out.append(address)
    return out


def blocked_reason(ip: IPAddress) -> str | None:
    """Why an address must not be contacted (SSRF), or None when it is a public address."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            inner = blocked_reason(embedded)
            # A mapped address written the same on every Python (3.13 changed its str()).
            shown = f"::ffff:{ip.ipv4_mapped}" if ip.ipv4_mapped else str(ip)
            return None if inner is None else f"{inner} (embedded in {shown})"
    for name in ("loopback", "private", "link_local", "multicast", "reserved", "unspecified"):
        if getattr(ip, f"is_{name}"):
            return f"{name.replace('_', '-')} address {ip}"
    if not ip.is_global:
        return f"non-global address {ip}"
    return None


def literal_ip(host: str) -> IPAddress | None:
    """The address when `host` is an IP literal, including legacy IPv4 spellings that resolvers accept
    (`2130706433`, `0x7f.1`, `127.1`); None for a name."""
    bare = host.strip("[]").lower()
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if _LEGACY_IPV4.fullmatch(bare):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(bare))
        except OSError:
            return None
    return None


def is_local_name(host: str) -> bool:
    """`localhost` and any `*.localhost` name: loopback by definition (RFC 6761), never resolved."""
    name = host.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


def check_host(host: str, resolve_host: ResolveHost | None) -> None:
    """Refuse a non-public host: literal IPs and local names always; a name is resolved with
    `resolve_host` and refused if ANY address is not public (None: names are not resolved — for a
    target that is named but never requested). Raises UnsafeTarget or UnresolvedHost."""
    ip = literal_ip(host)
    if ip is not None:
        reason = blocked_reason(ip)
        if reason is not None:
            raise UnsafeTarget(reason)
        return
    if is_local_name(host):
        raise UnsafeTarget(f"local host name {_shown(host)}")
    if resolve_host is None:
        return
    try:
        addresses = list(resolve_host(host))
    except (OSError, UnicodeError) as exc:
        raise UnresolvedHost(host, type(exc).__name__) from None
    if not addresses:
        raise UnresolvedHost(host, "resolved to no address")
    for address in addresses:
        try:
            resolved = ipaddress.ip_address(address)
        except ValueError:
            raise UnsafeTarget(
                f"host {_shown(host)} (resolved to unparseable address {_shown(address)})"
            ) from None
        reason = blocked_reason(resolved)
        if reason is not None:
            raise UnsafeTarget(f"host {_shown(host)} (it resolves to {reason})")


def check_target(url: str, resolve_host: ResolveHost | None) -> None:
    """Refuse a URL whose scheme is not http(s) or whose host is not public (see `check_host`).
    Raises UnsafeTarget (also for a URL without a host or with a junk port) or UnresolvedHost."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        _ = parts.port  # raises for a junk port
    except ValueError:
        raise UnsafeTarget("an unparseable URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise UnsafeTarget(f"scheme {scheme or '(none)'!r} (only http and https are followed)")
    if not host:
        raise UnsafeTarget("a URL without a host")
    check_host(host, resolve_host)


def _shown(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= _HOST_CHARS else shown[:_HOST_CHARS] + "…'"
