"""The one validator of a sweep definition: the admin's add / change form and `manage.py sweep
create` both fill this form and save through it."""

from django import forms

from portal.measure.models import Site, Vantage
from portal.measure.units import format_duration
from portal.measure.vocab import Mode

from . import spec
from .models import Sweep


def _known_congestion_controls():
    controls = set()
    for names in Vantage.objects.filter(enabled=True).values_list("congestion_controls", flat=True):
        controls.update(names or [])
    return controls


class SweepForm(forms.ModelForm):
    modes_text = forms.CharField(
        label="Modes", initial=Mode.QUICK.value, help_text="Comma-separated: quick, full, validate."
    )
    windows_text = forms.CharField(
        label="Windows (-w)",
        required=False,
        initial="default",
        help_text="Comma-separated sizes, 4K-16M (e.g. 64K,256K,1M); 'default' is the kernel's own.",
    )
    streams_text = forms.CharField(
        label="Streams (-P)",
        initial="1",
        help_text=f"Comma-separated, {spec.STREAMS_RANGE[0]}-{spec.STREAMS_RANGE[1]} (e.g. 1,4,16).",
    )
    congestion_text = forms.CharField(
        label="Congestion controls (-C)",
        required=False,
        initial="default",
        help_text="Comma-separated (e.g. cubic,bbr); 'default' is each vantage's own.",
    )
    every_text = forms.CharField(
        label="Every",
        required=False,
        help_text="Interval: a whole number with s, m, h or d (e.g. 6h). Give this or a "
        "crontab, or neither to run only when asked.",
    )
    cron = forms.CharField(
        label="Crontab",
        required=False,
        help_text="Five fields, UTC: minute hour day-of-month month day-of-week (e.g. 0 */6 * * *).",
    )
    slip_text = forms.CharField(
        label="Random start offset",
        required=False,
        initial="0",
        help_text="Each scheduled run starts at a random moment this long after its slot "
        "(pScheduler's sliprand), e.g. 10m; at most 1h and less than the interval.",
    )
    budget_text = forms.CharField(
        label="Daily budget per site",
        required=False,
        help_text="Bytes this sweep may send to one site in 24 h, e.g. 10G (K/M/G/T, 1024-based); blank for no limit.",
    )

    class Meta:
        model = Sweep
        fields = [
            "name",
            "enabled",
            "all_sites",
            "sites",
            "all_vantages",
            "vantages",
            "duration_s",
            "until_converged",
            "cron",
        ]
        labels = {
            "duration_s": "Duration (-t, s)",
            "enabled": "Enabled (off: paused)",
            "until_converged": "Measure until converged",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["sites"].queryset = Site.objects.order_by("name")
        self.fields["vantages"].queryset = Vantage.objects.order_by("name")
        sweep = self.instance
        if sweep.pk:
            self.initial.update(
                {
                    "modes_text": ",".join(sweep.modes),
                    "windows_text": spec.format_windows(sweep.windows),
                    "streams_text": ",".join(str(s) for s in sweep.streams),
                    "congestion_text": ",".join(c or "default" for c in sweep.congestion_controls),
                    "every_text": format_duration(sweep.every_s),
                    "slip_text": format_duration(sweep.slip_s) or "0",
                    "budget_text": spec.format_budget(sweep.daily_budget_bytes),
                }
            )

    def _parsed(self, field, parser, *args):
        try:
            return parser(self.cleaned_data.get(field), *args)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_modes_text(self):
        return self._parsed("modes_text", spec.parse_modes)

    def clean_windows_text(self):
        return self._parsed("windows_text", spec.parse_windows)

    def clean_streams_text(self):
        return self._parsed("streams_text", spec.parse_streams)

    def clean_congestion_text(self):
        return self._parsed("congestion_text", spec.parse_congestion, _known_congestion_controls())

    def clean_every_text(self):
        return self._parsed("every_text", spec.parse_every)

    def clean_cron(self):
        fields = self._parsed("cron", spec.parse_cron)
        return " ".join(fields) if fields else ""

    def clean_slip_text(self):
        return self._parsed("slip_text", spec.parse_slip)

    def clean_budget_text(self):
        return self._parsed("budget_text", spec.parse_budget)

    def clean(self):
        cleaned = super().clean()
        every, cron, slip = cleaned.get("every_text"), cleaned.get("cron"), cleaned.get("slip_text")
        if every and cron:
            self.add_error("cron", "give an interval or a crontab, not both")
        if slip and every and slip >= every:
            self.add_error(
                "slip_text",
                f"random start offset {format_duration(slip)} must be shorter than "
                f"the interval ({format_duration(every)})",
            )
        if not cleaned.get("all_sites") and "sites" in cleaned and not cleaned["sites"]:
            self.add_error("sites", "choose at least one site, or tick 'all sites'")
        if not cleaned.get("all_vantages") and "vantages" in cleaned and not cleaned["vantages"]:
            self.add_error("vantages", "choose at least one vantage, or tick 'all vantages'")
        return cleaned

    def save(self, commit=True):
        data = self.cleaned_data
        sweep = self.instance
        sweep.modes = data["modes_text"]
        sweep.windows = data["windows_text"]
        sweep.streams = data["streams_text"]
        sweep.congestion_controls = data["congestion_text"]
        sweep.every_s = data["every_text"]
        sweep.slip_s = data["slip_text"]
        sweep.daily_budget_bytes = data["budget_text"]
        return super().save(commit=commit)
