"""What this host offers as a vantage: its kernel and congestion controls."""
import os

from django.utils import timezone

from .models import Vantage

CONGESTION_CONTROLS_PATH = "/proc/sys/net/ipv4/tcp_available_congestion_control"
# Without CAP_NET_ADMIN a socket may only pick from this subset (plus the default, which the
# kernel always lists here).
ALLOWED_CONGESTION_CONTROLS_PATH = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"


def _read_words(path):
    try:
        with open(path) as f:
            return f.read().split()
    except OSError:
        return []


def _has_net_admin():
    CAP_NET_ADMIN = 12
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) & (1 << CAP_NET_ADMIN))
    except (OSError, ValueError):
        pass
    return os.geteuid() == 0


def available_congestion_controls():
    """The congestion controls the prober, running as this process's user, can set: offering
    one the kernel would refuse would only turn into a failed test."""
    available = _read_words(CONGESTION_CONTROLS_PATH)
    if _has_net_admin():
        return available
    allowed = set(_read_words(ALLOWED_CONGESTION_CONTROLS_PATH))
    return [name for name in available if name in allowed]


def register_vantage(name, description=None):
    """Creates or refreshes this host's Vantage; an admin's description and enabled flag stay."""
    defaults = {"kernel": os.uname().release, "congestion_controls": available_congestion_controls(),
                "last_seen": timezone.now()}
    vantage, created = Vantage.objects.update_or_create(name=name, defaults=defaults)
    if created or (description and not vantage.description):
        vantage.description = description or f"prober host {os.uname().nodename}"
        vantage.save(update_fields=["description"])
    return vantage
