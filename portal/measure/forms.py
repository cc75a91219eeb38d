"""The one validator of measurement parameters, shared by the request page and the API."""

from django import forms
from django.core.exceptions import BadRequest

from . import vantages as presence
from .models import Site, Vantage
from .units import SIZE_PATTERN, format_window, parse_size
from .vocab import MODES, Mode

DURATION_RANGE = (1, 60)
STREAMS_RANGE = (1, 16)
WINDOW_MIN = 4 * 1024
WINDOW_MAX = 16 * 1024 * 1024
DEFAULTS = {"mode": Mode.QUICK.value, "duration_s": 10, "streams": 1}


def parse_window(text):
    """The window field: a size from 4K to 16M; blank means the kernel's default (None).
    Raises ValueError with the reason."""
    if text is None or not str(text).strip():
        return None
    try:
        value = parse_size(text)
    except ValueError:
        raise ValueError(
            f"window {str(text)!r} is not a size: write a whole number of bytes, optionally followed by "
            f"K or M (1024-based), from 4K to 16M, e.g. 256K; or leave it blank for the kernel's default"
        ) from None
    if not WINDOW_MIN <= value <= WINDOW_MAX:
        raise ValueError(
            f"window {str(text).strip()} = {value} bytes is out of range: allowed 4K (4096) to 16M (16777216)"
        )
    return value


# until_converged as JSON (true/false), a form (a checkbox sends "on") or the API's text of them.
UNTIL_CONVERGED_WORDS = {"": False, "false": False, "0": False, "off": False, "true": True, "1": True, "on": True}


def _nul_message(name, field):
    return f"{name} must not contain NUL characters: {field.help_text[0].lower()}{field.help_text[1:]}"


class MeasurementForm(forms.Form):
    site = forms.CharField(
        required=True,
        help_text="The site's slug.",
        error_messages={"required": "site is required: give the slug of a registered site (GET /api/v1/sites)."},
    )
    vantage = forms.CharField(required=False, help_text="The vantage's name; optional when only one is enabled.")
    mode = forms.CharField(required=False, help_text="quick (default), full or validate.")
    duration_s = forms.CharField(
        required=False, help_text="1-60 s (default 10): a full run's length and quick mode's limit."
    )
    streams = forms.CharField(required=False, help_text="Parallel TCP streams, 1-16 (default 1).")
    window = forms.CharField(
        required=False, help_text="Socket buffer, e.g. 256K or 4M (4K-16M); blank: kernel default."
    )
    congestion = forms.CharField(required=False, help_text="Congestion control; blank: the vantage's default.")
    until_converged = forms.BooleanField(
        required=False,
        label="Measure until converged (may run the full -t)",
        help_text="Quick mode: go on to the full -t when the estimate has not converged by its "
        "deadline, instead of answering then with a wider interval (default false).",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Text fields validated by hand (so each message names what is allowed), rendered as
        # selects for the page.
        sites = Site.objects.filter(enabled=True).order_by("name")
        self.fields["site"].widget = forms.Select(
            choices=[("", "choose a site")]
            + [(s.slug, f"{s.name} ({s.location})" if s.location else s.name) for s in sites]
        )
        # Only vantages whose worker heartbeats: a test sent to another would only wait.
        vantages = list(presence.online().order_by("name"))
        self.fields["vantage"].widget = forms.Select(choices=[(v.name, v.name) for v in vantages])
        self.fields["mode"].widget = forms.Select(choices=Mode.choices)
        self.fields["duration_s"].widget = forms.NumberInput(attrs={"min": DURATION_RANGE[0], "max": DURATION_RANGE[1]})
        self.fields["streams"].widget = forms.NumberInput(attrs={"min": STREAMS_RANGE[0], "max": STREAMS_RANGE[1]})
        self.fields["window"].widget = forms.TextInput(attrs={"placeholder": "kernel default", "pattern": SIZE_PATTERN})
        controls = sorted({c for v in vantages for c in (v.congestion_controls or [])})
        self.fields["congestion"].widget = forms.Select(choices=[("", "vantage default")] + [(c, c) for c in controls])
        for name, value in DEFAULTS.items():
            self.fields[name].initial = value
        for name, field in self.fields.items():
            # Django's own text ("Null characters are not allowed.") names neither field nor rule.
            field.error_messages["null_characters_not_allowed"] = _nul_message(name, field)

    @classmethod
    def initial_from(cls, params):
        """Initial values from a link's query string: ?site=<slug> ("Test now"), and the other
        parameters too ("Test this site again" carries the permalink's). Each value the form
        would accept is preselected (an enabled site, an online vantage, a window in range...),
        any other is left at its default. Raises BadRequest for a site that cannot be a slug (a
        NUL byte would reach PostgreSQL, which refuses it)."""
        slug = params.get("site", "")
        if "\x00" in slug:
            raise BadRequest(_nul_message("site", cls.base_fields["site"]))
        given = {name: params.get(name) for name in cls.base_fields if params.get(name)}
        if not given:
            return {}
        trial = MeasurementForm(data=given)
        trial.is_valid()
        initial = {name: given[name] for name in given if name not in trial.errors}
        if "site" in initial:
            initial["site"] = trial.cleaned_data["site"].slug
        if "window" in initial:
            initial["window"] = format_window(trial.cleaned_data["window"])  # 262144 -> 256K
        return initial

    def clean_site(self):
        slug = self.cleaned_data["site"].strip()
        site = Site.objects.filter(slug=slug).first()
        if site is None:
            raise forms.ValidationError(
                f"unknown site {slug!r}: only registered sites can be tested; choose one of the sites listed at /api/v1/sites."
            )
        if not site.enabled:
            raise forms.ValidationError(
                f"site {slug!r} is disabled: an administrator has taken it out of service; choose another site."
            )
        return site

    def clean_vantage(self):
        name = self.cleaned_data["vantage"].strip()
        enabled = presence.online().order_by("name")
        if not name:
            vantages = list(enabled[:2])
            if len(vantages) == 1:
                return vantages[0]
            if not vantages:
                raise forms.ValidationError(
                    "no vantage is online: no prober host's worker is heartbeating, so no test can run right now."
                )
            names = ", ".join(enabled.values_list("name", flat=True))
            raise forms.ValidationError(f"vantage is required when several are enabled: choose one of {names}.")
        vantage = Vantage.objects.filter(name=name).first()
        if vantage is None or not presence.is_online(vantage):
            names = ", ".join(enabled.values_list("name", flat=True)) or "(none)"
            state = (
                "unknown"
                if vantage is None
                else "disabled"
                if not vantage.enabled
                else ("offline (its worker is not heartbeating)")
            )
            raise forms.ValidationError(f"vantage {name!r} is {state}: choose one of {names}.")
        return vantage

    def clean_mode(self):
        mode = self.cleaned_data["mode"].strip() or DEFAULTS["mode"]
        if mode not in MODES:
            raise forms.ValidationError(f"mode {mode!r} is not allowed: choose quick, full or validate.")
        return mode

    def _clean_int(self, field, bounds, unit):
        raw = self.cleaned_data[field]
        raw = raw.strip() if isinstance(raw, str) else raw
        if raw in ("", None):
            return DEFAULTS[field]
        low, high = bounds
        try:
            value = int(raw)
        except (TypeError, ValueError):
            raise forms.ValidationError(
                f"{field} {raw!r} is not a whole number: allowed {low} to {high} {unit}."
            ) from None
        if not low <= value <= high:
            raise forms.ValidationError(f"{field} {value} is out of range: allowed {low} to {high} {unit}.")
        return value

    def clean_duration_s(self):
        return self._clean_int("duration_s", DURATION_RANGE, "seconds")

    def clean_streams(self):
        return self._clean_int("streams", STREAMS_RANGE, "streams")

    def clean_window(self):
        try:
            return parse_window(self.cleaned_data["window"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_until_converged(self):
        # CheckboxInput reads any unknown text ("0", "yes") as checked: the raw value decides.
        raw = self.data.get("until_converged") if hasattr(self.data, "get") else None
        if raw is None or isinstance(raw, bool):
            return bool(raw)
        word = str(raw).strip().lower()
        if word not in UNTIL_CONVERGED_WORDS:
            raise forms.ValidationError(
                f"until_converged {str(raw)[:20]!r} is not a boolean: give true or false "
                "(or leave it out: quick mode answers at its deadline)."
            )
        return UNTIL_CONVERGED_WORDS[word]

    def clean(self):
        cleaned = super().clean()
        congestion = (cleaned.get("congestion") or "").strip()
        cleaned["congestion"] = congestion
        vantage = cleaned.get("vantage")
        if congestion and vantage is not None:
            allowed = list(vantage.congestion_controls or [])
            if congestion not in allowed:
                choices = ", ".join(allowed) or "(none reported)"
                self.add_error(
                    "congestion",
                    f"congestion {congestion!r} is not available on vantage {vantage.name}: "
                    f"choose one of {choices}, or leave it blank for the vantage's default.",
                )
        return cleaned

    def measurement_fields(self):
        """Model field values from a valid form."""
        data = self.cleaned_data
        return {
            "site": data["site"],
            "vantage": data["vantage"],
            "mode": data["mode"],
            "duration_s": data["duration_s"],
            "streams": data["streams"],
            "window_bytes": data["window"],
            "congestion": data["congestion"],
            "until_converged": data["until_converged"],
        }


# The request page speaks to network engineers: iperf's option letters in its labels and in its
# messages, help about the choice rather than the API's parameter. (label, help or None to keep
# the shared one, how a message names the field).
PAGE_FIELDS = {
    "site": ("Site", "Only registered, enabled sites can be tested.", "site"),
    "vantage": ("Vantage", "The prober host the test runs from.", "vantage"),
    "mode": ("Mode", None, "mode"),
    "duration_s": ("Duration (-t)", None, "duration (-t)"),
    "streams": ("Streams (-P)", None, "streams (-P)"),
    "window": ("Window (-w)", None, "window (-w)"),
    "congestion": ("Congestion control (-C)", None, "congestion control (-C)"),
}


def page_words(name, message):
    """A shared message ("duration_s 0 is out of range: ...") naming the field as the page does
    ("duration (-t) 0 is out of range: ..."); the rest of the message is the one validator's."""
    if name in PAGE_FIELDS and message.startswith(f"{name} "):
        return PAGE_FIELDS[name][2] + message[len(name) :]
    return message


class MeasurementPageForm(MeasurementForm):
    """The request page's form: the shared validation, worded for the page. Labels and help are
    set here, before any bound field exists: a bound field copies its label and help when the
    form is first validated, so dressing the form after is_valid() lost them on every error."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, (label, help_text, _) in PAGE_FIELDS.items():
            self.fields[name].label = label
            if help_text:
                self.fields[name].help_text = help_text
        self.fields["site"].error_messages["required"] = "choose a site: only registered, enabled sites can be tested."

    def add_error(self, field, error):
        if field in PAGE_FIELDS:
            error = forms.ValidationError([page_words(field, m) for m in forms.ValidationError(error).messages])
        super().add_error(field, error)
