"""The demo data `make run` (and `manage.py demo_setup`) creates: a site for a local iperf3
server, this host as a vantage, a `demo` user with a password and an API token, and an `admin`
(staff, superuser) for the admin: sites, vantages, sweeps."""

import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model

from .models import ApiToken, Site
from .vantages import register_vantage

DEMO_SITE_SLUG = "local-iperf3"


def setup_demo(iperf_port=5201, password=None):
    """Returns (site, vantage, user, password, token). The password and token are new each
    time: only their hashes are stored, so they can be shown once only."""
    site, _ = Site.objects.update_or_create(
        slug=DEMO_SITE_SLUG,
        defaults={
            "name": "Local iperf3",
            "host": "127.0.0.1",
            "port": iperf_port,
            "protocol": "iperf3",
            "location": "this machine (loopback)",
            "enabled": True,
            "notes": "An iperf3 -s on this machine (make run starts it); loopback, so expect tens of Gbit/s.",
        },
    )
    vantage = register_vantage(settings.VANTAGE_NAME, "this machine")
    user, _ = get_user_model().objects.get_or_create(username="demo")
    password = password or os.environ.get("DEMO_PASSWORD") or secrets.token_urlsafe(9)
    user.set_password(password)
    user.save()
    return site, vantage, user, password, ApiToken.issue(user)


def setup_admin(password=None):
    """The `admin` superuser with a new password each time (or ADMIN_PASSWORD); returns
    (user, password). An existing admin keeps its other fields."""
    user, _ = get_user_model().objects.get_or_create(username="admin")
    password = password or os.environ.get("ADMIN_PASSWORD") or secrets.token_urlsafe(12)
    user.is_staff = user.is_superuser = True
    user.set_password(password)
    user.save()
    return user, password
