"""Which hosts a site may point at. A portal that sends iperf traffic wherever an admin types
could be aimed at itself, at the cloud's metadata service or at a private network behind it;
a site must resolve only to globally routable addresses unless ALLOW_PRIVATE_SITE_HOSTS says
this deployment tests private networks on purpose (make run's demo site, the tests)."""

import ipaddress
import socket

from django.conf import settings
from django.core.exceptions import ValidationError

# Metadata and host services that are globally routable and so pass the is_global test.
METADATA_ADDRESSES = {
    ipaddress.ip_address("168.63.129.16"),  # Azure's wire server
}


def _kind(address):
    """Why an address is not a fit target, or None if it is."""
    if address.version == 6 and address.ipv4_mapped:
        address = address.ipv4_mapped
    if address in METADATA_ADDRESSES or address == ipaddress.ip_address("169.254.169.254"):
        return "a cloud metadata address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_private:
        return "a private address"
    if address.is_multicast or not address.is_global:
        return "a reserved or non-routable address"
    return None


def resolve(host):
    """Every address `host` resolves to (a literal resolves to itself)."""
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ValidationError(
            f"{host!r} cannot be resolved ({exc}): give a name that resolves, or an address.", code="unresolvable"
        ) from None
    return sorted({ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos}, key=str)


def check_site_host(host):
    """Raises ValidationError unless every address of `host` is allowed as a test target."""
    if settings.ALLOW_PRIVATE_SITE_HOSTS:
        return
    for address in resolve(host):
        kind = _kind(address)
        if kind is not None:
            raise ValidationError(
                f"{host!r} resolves to {address}, {kind}: sites must be publicly routable hosts. "
                "(A deployment that tests private networks on purpose sets ALLOW_PRIVATE_SITE_HOSTS=1.)",
                code="private_host",
            )
