from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from portal.measure.sweeps import sweep


class Command(BaseCommand):
    help = "Queue one measurement of every enabled site from every enabled vantage (a sweep)."

    def add_arguments(self, parser):
        parser.add_argument("--mode", default="quick", help="quick (default), full or validate")
        parser.add_argument("--duration", type=int, default=10, help="seconds, 1-60 (default 10)")
        parser.add_argument("--streams", type=int, default=1, help="parallel streams, 1-16 (default 1)")
        parser.add_argument("--site", action="append", help="only this site slug (repeatable)")
        parser.add_argument("--vantage", action="append", help="only this vantage (repeatable)")

    def handle(self, *args, mode, duration, streams, site, vantage, **options):
        try:
            queued = sweep(mode=mode, duration_s=duration, streams=streams, sites=site, vantages=vantage)
        except ValidationError as exc:
            raise CommandError("; ".join(m for messages in exc.message_dict.values() for m in messages)) from None
        for m in queued:
            self.stdout.write(f"{m.slug} {m.site.slug} from {m.vantage.name}")
        self.stdout.write(f"{len(queued)} measurement(s) queued")
