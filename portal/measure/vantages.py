"""What this host offers as a vantage: its kernel and congestion controls."""
import os

from django.utils import timezone

from .models import Vantage

CONGESTION_CONTROLS_PATH = "/proc/sys/net/ipv4/tcp_available_congestion_control"


def available_congestion_controls(path=CONGESTION_CONTROLS_PATH):
    try:
        with open(path) as f:
            return f.read().split()
    except OSError:
        return []


def register_vantage(name, description=None):
    """Creates or refreshes this host's Vantage; an admin's description and enabled flag stay."""
    defaults = {"kernel": os.uname().release, "congestion_controls": available_congestion_controls(),
                "last_seen": timezone.now()}
    vantage, created = Vantage.objects.update_or_create(name=name, defaults=defaults)
    if created or (description and not vantage.description):
        vantage.description = description or f"prober host {os.uname().nodename}"
        vantage.save(update_fields=["description"])
    return vantage
