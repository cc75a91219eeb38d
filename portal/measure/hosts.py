"""Which hosts a site (or an alert webhook) may point at. A portal that sends iperf traffic
wherever an admin types could be aimed at itself, at the cloud's metadata service or at a
private network behind it; a site must resolve only to globally routable addresses unless
ALLOW_PRIVATE_SITE_HOSTS says this deployment tests private networks on purpose (make run's
demo site, the tests).

The check runs twice: when a site is saved (check_site_host, the admin's words) and when its
test starts (vet_target): a name can resolve elsewhere by then, so the worker resolves it once,
judges every address and hands the prober the numeric address it judged."""

import ipaddress
import socket
import threading

from django.conf import settings
from django.core.exceptions import ValidationError

# Metadata and host services that are globally routable and so pass the is_global test.
METADATA_ADDRESSES = {
    ipaddress.ip_address("169.254.169.254"),
    ipaddress.ip_address("168.63.129.16"),  # Azure's wire server
}
# IETF protocol assignments (RFC 6890): DS-Lite, NAT64 discovery, PCP/TURN anycast. Python
# calls parts of it global; none of it is a throughput-test server.
IETF_PROTOCOL_ASSIGNMENTS = ipaddress.ip_network("192.0.0.0/24")
NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
# RFC 8215's local-use NAT64 prefix: the translator's prefix length (/48../96) decides where
# the IPv4 address sits, so every RFC 6052 layout is judged.
NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
# The prober's own deadline for resolving a name (its default --connect-timeout).
RESOLVE_TIMEOUT_S = 5.0

# The resolver, a module attribute so that a test can make a name resolve one way when the
# site is saved and another when its test runs, without real DNS.
getaddrinfo = socket.getaddrinfo


class Unresolvable(Exception):
    """The name does not resolve (in time); the message says which and why."""


class Refused(Exception):
    """An address of the host is not an allowed target; the message names it (for staff and
    logs only: whoever only requested the test learns the code, not what was found)."""


def _rfc6052(address, prefix_len):
    """The IPv4 address embedded after a NAT64 prefix of prefix_len bits (RFC 6052 2.2: bits
    64-71 are the reserved u octet, skipped)."""
    raw = address.packed
    if prefix_len == 96:
        return ipaddress.IPv4Address(raw[12:16])
    return ipaddress.IPv4Address((raw[prefix_len // 8 : 8] + raw[9:16])[:4])


def embedded_ipv4(address):
    """The IPv4 addresses an IPv6 address carries, by which it is judged: IPv4-mapped and
    -compatible, NAT64 (64:ff9b::/96, 64:ff9b:1::/48), 6to4 (2002::/16), Teredo (2001::/32:
    server and client). Empty for an IPv4 address or a plain IPv6 one."""
    if address.version != 6:
        return []
    if address.ipv4_mapped:
        return [address.ipv4_mapped]
    if address in IPV4_COMPATIBLE and int(address) > 1:  # :: and ::1 are IPv6's own
        return [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)]
    if address in NAT64_WELL_KNOWN:
        return [_rfc6052(address, 96)]
    if address in NAT64_LOCAL_USE:
        return [_rfc6052(address, bits) for bits in (48, 56, 64, 96)]
    if address.sixtofour:
        return [address.sixtofour]
    if address.teredo:
        return list(address.teredo)
    return []


def _kind_of(address):
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_private:
        return "a private address"
    if address.version == 4 and address in IETF_PROTOCOL_ASSIGNMENTS:
        return "a reserved or non-routable address"
    if address.is_multicast or not address.is_global:
        return "a reserved or non-routable address"
    return None


def _kind(address):
    """Why an address is not a fit target, or None if it is. An IPv6 address that embeds an
    IPv4 one reaches that address wherever the network translates it: it is judged by it."""
    embedded = embedded_ipv4(address)
    if not embedded:
        return _kind_of(address)
    for inner in embedded:
        kind = _kind_of(inner)
        if kind is not None:
            return kind if address.ipv4_mapped else f"an IPv6 form of {inner}, {kind}"
    return None


def resolve(host, timeout_s=None):
    """Every address `host` resolves to (a literal resolves to itself), in the resolver's order.
    Raises Unresolvable. With timeout_s, a resolver that does not answer in time counts as
    unresolvable (glibc's has no deadline of its own; the lookup thread is left to finish)."""
    result = {}

    def lookup():
        try:
            result["infos"] = getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            result["error"] = exc

    if timeout_s is None:
        lookup()
    else:
        thread = threading.Thread(target=lookup, name=f"resolve {host}", daemon=True)
        thread.start()
        thread.join(timeout_s)
        if thread.is_alive():
            raise Unresolvable(f"cannot resolve {host!r}: no answer from the resolver within {timeout_s:g} s")
    if "error" in result:
        raise Unresolvable(f"{host!r} cannot be resolved ({result['error']})")
    addresses = []
    for info in result["infos"]:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise Unresolvable(f"{host!r} cannot be resolved (no address)")
    return addresses


def vet(host, timeout_s=None, allow_private=None):
    """Resolves `host` once and returns its addresses if every one is an allowed target;
    raises Unresolvable or Refused (naming the first refused address)."""
    if allow_private is None:
        allow_private = settings.ALLOW_PRIVATE_SITE_HOSTS
    addresses = resolve(host, timeout_s)
    if not allow_private:
        for address in addresses:
            kind = _kind(address)
            if kind is not None:
                raise Refused(f"{host!r} resolves to {address}, {kind}")
    return addresses


def vet_target(host):
    """The addresses a test of `host` may connect to, resolved now (see the module's doc)."""
    return vet(host, timeout_s=RESOLVE_TIMEOUT_S)


def check_site_host(host):
    """Raises ValidationError unless every address of `host` is allowed as a test target."""
    if settings.ALLOW_PRIVATE_SITE_HOSTS:
        return
    try:
        vet(host, allow_private=False)
    except Unresolvable as exc:
        raise ValidationError(f"{exc}: give a name that resolves, or an address.", code="unresolvable") from None
    except Refused as exc:
        raise ValidationError(
            f"{exc}: sites must be publicly routable hosts. "
            "(A deployment that tests private networks on purpose sets ALLOW_PRIVATE_SITE_HOSTS=1.)",
            code="private_host",
        ) from None
