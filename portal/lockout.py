"""Login throttling glue for django-axes: whose address a login comes from, and the page a
locked-out login gets (429 with Retry-After, in the portal's own words)."""

import ipaddress
import math

from django.conf import settings
from django.shortcuts import render


def client_ip(request):
    """The client's address: the CLIENT_IP_HEADER's when the peer is one of TRUSTED_PROXIES
    (the proxy overwrites it), else the peer's own. Anyone else could send the header too, a
    new address per guess, and never be locked out."""
    peer = request.META.get("REMOTE_ADDR", "")
    if settings.CLIENT_IP_HEADER and _is_trusted_proxy(peer):
        header = "HTTP_" + settings.CLIENT_IP_HEADER.upper().replace("-", "_")
        value = request.META.get(header, "").split(",")[0].strip()
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            pass  # missing or not an address: the proxy's own is the safe answer
    return peer


def _is_trusted_proxy(peer):
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return any(address in network for network in settings.TRUSTED_PROXIES)


def lockout_response(request, original_response=None, credentials=None):
    """The login page again, with the lockout explained and the form disabled."""
    seconds = math.ceil(settings.AXES_COOLOFF_TIME.total_seconds())
    context = {
        "locked_out": True,
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "lockout_minutes": math.ceil(seconds / 60),
    }
    response = render(request, "registration/locked_out.html", context, status=429)
    response["Retry-After"] = str(seconds)
    return response
