"""The demo data `make run` (and `manage.py demo_setup`) creates: a site for a local iperf3
server, this host as a vantage, a `demo` user with a password and an API token, and an `admin`
(staff, superuser) for the admin: sites, vantages, sweeps. With root, `make run` also brings up
an emulated WAN path (the path lab) and registers its far end as a second site
(setup_lab_site); its first tests are real ones, through the normal queue (first_tests)."""

import os
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model

from .models import ApiToken, Site
from .vantages import register_vantage

DEMO_SITE_SLUG = "local-iperf3"
LAB_SITE_SLUG = "lab-wan"
LOOPBACK_NOTE = (
    "An iperf3 -s on this machine (make run starts it); loopback, so expect tens of Gbit/s, "
    "at the rate the CPUs give: it moves by tens of % from one second to the next, so a quick "
    "test here answers 4 s after slow-start with a wide interval."
)
# The lab path `make run` brings up (prober/lab/labctl.py PathSpec fields): what a campus user
# meets on a continental research path, with Ethernet frames, so slow-start takes several round
# trips and a one-BDP drop-tail buffer gives the sawtooth that loopback never shows.
DEMO_LAB_PATH = {
    "name": "demo-wan",
    "rate_mbps": 100,
    "rtt_ms": 40,
    "queue_bytes": 500_000,  # one BDP: 100 Mbit/s x 40 ms
    "mtu": 1500,
    "description": "make run's demo WAN path: 100 Mbit/s, 40 ms, a one-BDP drop-tail buffer, MTU 1500",
}


def lab_path_words(path=None):
    """The lab path's parameters in the words the front page shows."""
    p = path or DEMO_LAB_PATH
    return f"{p['rate_mbps']:g} Mbit/s, {p['rtt_ms']:g} ms RTT, {p['queue_bytes'] / 1000:g} kB buffer (one BDP), MTU {p['mtu']}"


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
            "notes": LOOPBACK_NOTE,
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


def setup_lab_site(host, port, lab_unavailable=None):
    """The lab's site (its far namespace's iperf3 -s at host:port), or, when the lab could not
    come up (lab_unavailable: the lab's own reason), no lab site: a lab site left by an earlier
    run with root is disabled, and the loopback site's note says why it is the only one.
    Returns the lab site or None."""
    loopback_note = LOOPBACK_NOTE
    if lab_unavailable:
        loopback_note += (
            f" It is the only demo site: the second one, an emulated WAN path ({lab_path_words()}), needs the path lab, "
            f"and {lab_unavailable}."
        )
    for loopback in Site.objects.filter(slug=DEMO_SITE_SLUG):
        loopback.notes = loopback_note
        loopback.save()  # save(), not update(): the overview's page cache follows a site's saves
    if lab_unavailable:
        for stale in Site.objects.filter(slug=LAB_SITE_SLUG, enabled=True):
            stale.enabled = False
            stale.save()
        return None
    site, _ = Site.objects.update_or_create(
        slug=LAB_SITE_SLUG,
        defaults={
            "name": "Emulated WAN (path lab)",
            "host": host,
            "port": port,
            "protocol": "iperf3",
            "location": f"emulated WAN: {lab_path_words()}",
            "enabled": True,
            "notes": (
                "An iperf3 -s at the far end of a path that make run builds with the path lab "
                "(prober/lab): two network namespaces joined by a userspace delay line. The "
                "vantage's prober reaches it from the lab's near namespace; slow-start, the sawtooth and "
                "quick mode's savings show here, not on loopback."
            ),
        },
    )
    return site


def first_tests(vantage, user, sites):
    """One quick test of each demo site, queued as any request is (dispatch.request_measurement),
    so the first pages show real results, not seeded rows. Returns the measurements."""
    from .dispatch import request_measurement

    return [request_measurement({"site": site.slug, "vantage": vantage.name, "mode": "quick"}, user) for site in sites]
