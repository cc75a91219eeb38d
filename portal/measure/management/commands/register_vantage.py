"""manage.py register_vantage [NAME]: registers this host as a vantage by hand (workers do it
when they start: vantages.VantagePresence)."""

from django.conf import settings
from django.core.management.base import BaseCommand

from portal.measure.vantages import register_vantage


class Command(BaseCommand):
    help = "Register or refresh this host as a vantage (kernel, congestion controls, last seen)."

    def add_arguments(self, parser):
        parser.add_argument("name", nargs="?", default=None, help="vantage name (default: VANTAGE_NAME setting)")
        parser.add_argument("--description", default=None)

    def handle(self, *args, name=None, description=None, **options):
        vantage = register_vantage(name or settings.VANTAGE_NAME, description)
        self.stdout.write(
            f"vantage {vantage.name}: kernel {vantage.kernel}, "
            f"congestion controls {' '.join(vantage.congestion_controls) or '(none)'}"
        )
