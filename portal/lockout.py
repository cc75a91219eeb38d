"""Login throttling glue for django-axes: whose address a login comes from, and the page a
locked-out login gets (429 with Retry-After, in the portal's own words)."""

import math

from django.conf import settings
from django.shortcuts import render


def client_ip(request):
    """The client's address: the proxy's header when CLIENT_IP_HEADER names one, else the peer."""
    if settings.CLIENT_IP_HEADER:
        header = "HTTP_" + settings.CLIENT_IP_HEADER.upper().replace("-", "_")
        value = request.META.get(header, "").split(",")[0].strip()
        if value:
            return value
    return request.META.get("REMOTE_ADDR", "")


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
