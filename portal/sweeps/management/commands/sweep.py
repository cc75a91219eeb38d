import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from portal.measure.models import Site, Vantage
from portal.measure.units import format_bytes
from portal.measure.vocab import CellState, Mode, SweepTrigger
from portal.sweeps import planning, summary
from portal.sweeps.forms import SweepForm
from portal.sweeps.models import Sweep


class Command(BaseCommand):
    help = "Define sweeps (`create`), run one at once (`run`), or list them (`list`)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="define a sweep (the same form as the admin's)")
        create.add_argument("name")
        create.add_argument(
            "--sites",
            default="all",
            help="comma-separated site slugs, or 'all' (default: every enabled site at each run)",
        )
        create.add_argument("--vantages", default="all", help="comma-separated vantage names, or 'all' (default)")
        create.add_argument(
            "--mode", default=Mode.QUICK.value, help="comma-separated: quick, full, validate (default quick)"
        )
        create.add_argument("--windows", default="default", help="e.g. 64K,256K,1M; 'default' is the kernel's")
        create.add_argument("--streams", default="1", help="e.g. 1,4,16 (1-64)")
        create.add_argument("--congestion", default="default", help="e.g. cubic,bbr; 'default' is the vantage's")
        create.add_argument("--duration", default="10", help="seconds, 1-60 (default 10)")
        create.add_argument(
            "--until-converged",
            action="store_true",
            help="quick tests go on to the full duration when not converged by their deadline "
            "(default: they answer at the deadline)",
        )
        when = create.add_mutually_exclusive_group()
        when.add_argument("--every", default="", help="interval, e.g. 6h")
        when.add_argument("--cron", default="", help="crontab line in UTC, e.g. '0 */6 * * *'")
        create.add_argument("--slip", default="0", help="random start offset within each slot, e.g. 10m")
        create.add_argument("--budget", default="", help="daily traffic budget per site, e.g. 10G")
        create.add_argument("--paused", action="store_true", help="define it paused")
        run = sub.add_parser("run", help="run a defined sweep now and print its run page")
        run.add_argument("name")
        run.add_argument("--wait", action="store_true", help="wait until every cell is done, failed or skipped")
        run.add_argument("--timeout", type=float, default=3600.0, help="--wait gives up after this many seconds")
        sub.add_parser("list", help="list the defined sweeps")

    def handle(self, *args, action, **options):
        getattr(self, f"_{action}")(**options)

    def _create(
        self,
        name,
        sites,
        vantages,
        mode,
        windows,
        streams,
        congestion,
        duration,
        until_converged,
        every,
        cron,
        slip,
        budget,
        paused,
        **options,
    ):
        data = {
            "name": name,
            "enabled": not paused,
            "modes_text": mode,
            "windows_text": windows,
            "streams_text": streams,
            "congestion_text": congestion,
            "duration_s": duration,
            "until_converged": until_converged,
            "every_text": every,
            "cron": cron,
            "slip_text": slip,
            "budget_text": budget,
            "all_sites": sites.strip() == "all",
            "all_vantages": vantages.strip() == "all",
            "sites": self._pks(Site, "slug", sites),
            "vantages": self._pks(Vantage, "name", vantages),
        }
        form = SweepForm(data=data)
        if not form.is_valid():
            flags = {
                "modes_text": "--mode",
                "windows_text": "--windows",
                "streams_text": "--streams",
                "congestion_text": "--congestion",
                "duration_s": "--duration",
                "every_text": "--every",
                "cron": "--cron",
                "slip_text": "--slip",
                "budget_text": "--budget",
                "sites": "--sites",
                "vantages": "--vantages",
                "name": "NAME",
            }
            raise CommandError(
                "; ".join(
                    f"{flags.get(field, field)}: {message}"
                    for field, messages in form.errors.items()
                    for message in messages
                )
            )
        sweep = form.save()
        self.stdout.write(
            f"sweep {sweep.name}: {len(sweep.settings_matrix())} setting(s), {sweep.schedule_text}"
            f"{'' if sweep.enabled else ', paused'}"
        )

    @staticmethod
    def _pks(model, field, text):
        if text.strip() == "all":
            return []
        words = [w.strip() for w in text.split(",") if w.strip()]
        found = dict(model.objects.filter(**{f"{field}__in": words}).values_list(field, "pk"))
        unknown = [w for w in words if w not in found]
        if unknown:
            flag = "--sites" if model is Site else "--vantages"
            raise CommandError(f"{flag}: unknown {model._meta.verbose_name} {', '.join(unknown)}")
        return [found[w] for w in words]

    def _run(self, name, wait, timeout, **options):
        sweep = Sweep.objects.filter(name=name).first()
        if sweep is None:
            names = ", ".join(Sweep.objects.values_list("name", flat=True)) or "(none defined)"
            raise CommandError(f"no sweep named {name!r}: defined sweeps are {names}")
        run = planning.fire(sweep.pk, trigger=SweepTrigger.COMMAND)
        self.stdout.write(f"{settings.PORTAL_URL.rstrip('/')}{run.get_absolute_url()}")
        totals = summary.run_totals(run)
        deadline = time.monotonic() + timeout
        while wait and not totals.finished:
            if time.monotonic() > deadline:
                raise CommandError(f"gave up after {timeout:g} s: {self._line(totals)}")
            time.sleep(1)
            totals = summary.run_totals(run)
        self.stdout.write(self._line(totals))

    @staticmethod
    def _line(t):
        order = (CellState.DONE, CellState.FAILED, CellState.SKIPPED, CellState.RUNNING, CellState.QUEUED)
        counts = ", ".join(f"{t.counts[state]} {state.label}" for state in order)
        return f"{t.cells} cells: {counts}; {format_bytes(t.bytes_sent)} sent"

    def _list(self, **options):
        sweeps = list(Sweep.objects.all())
        if not sweeps:
            # Silence reads like a failed query; say there are none and how to make one.
            self.stdout.write("no sweeps defined (create one with `manage.py sweep create NAME --every 1h`)")
        for sweep in sweeps:
            self.stdout.write(
                f"{sweep.name}\t{'enabled' if sweep.enabled else 'paused'}\t{sweep.schedule_text}\t"
                f"{len(sweep.settings_matrix())} setting(s)"
            )
