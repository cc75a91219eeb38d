"""The JSON API, /api/v1/. Bearer-token auth (manage.py issue_token USERNAME) on every endpoint
but the OpenAPI schema. A measurement's <id> is its slug, the same unguessable id as the
permalink /m/<slug>/: numeric ids would let anyone count and walk everyone's results."""
import datetime
import functools
import json

from django.core.exceptions import ValidationError
from django.http import JsonResponse
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from . import progress
from .csvexport import csv_response, measurement_csv_rows
from .forms import MeasurementForm
from .models import ApiToken, Measurement, MeasurementTrace, Site, Vantage
from .services import request_measurement

FORM_FIELDS = tuple(MeasurementForm.base_fields)
RESULT_FIELDS = (
    "quick_mode_entered", "quick_bps", "cumulative_bps", "full_bps", "bytes_sent", "server_bytes", "elapsed_s",
    "slow_start_end_s", "rule", "retransmits", "rtt_us", "min_rtt_us", "mss_bytes", "window_requested_bytes",
    "window_given_bytes", "congestion_used", "time_saved_pct", "traffic_saved_pct", "full_time_s",
    "full_bytes_estimate", "validate_quick_bps", "validate_error_pct",
)


def errors(status, **fields):
    return JsonResponse({"errors": {name: [message] for name, message in fields.items()}}, status=status)


def _authenticate(request):
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        return None, "missing credentials: send the header 'Authorization: Bearer <token>' (python manage.py issue_token USERNAME)."
    token = ApiToken.objects.select_related("user").filter(key_hash=ApiToken.hash_key(key.strip())).first()
    if token is None or not token.user.is_active:
        return None, "invalid token: it is unknown, revoked or its user is inactive; issue a new one with manage.py issue_token."
    if token.last_used is None or timezone.now() - token.last_used > datetime.timedelta(minutes=1):
        ApiToken.objects.filter(pk=token.pk).update(last_used=timezone.now())
    return token.user, None


def token_required(view):
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        user, problem = _authenticate(request)
        if user is None:
            response = errors(401, authorization=problem)
            response["WWW-Authenticate"] = 'Bearer realm="api"'
            return response
        request.user = user
        return view(request, *args, **kwargs)

    return csrf_exempt(wrapper)


def _get_measurement(slug):
    return Measurement.objects.select_related("site", "vantage").defer("result").filter(slug=slug).first()


def _not_found(slug):
    return errors(404, id=f"no measurement with id {slug!r}: ids are the slugs returned by POST /api/v1/measurements.")


def _iso(value):
    return value.isoformat() if value else None


def measurement_json(request, m):
    data = {
        "id": m.slug, "slug": m.slug, "status": m.status,
        "permalink": request.build_absolute_uri(m.get_absolute_url()),
        "site": m.site.slug, "vantage": m.vantage.name, "mode": m.mode, "duration_s": m.duration_s,
        "streams": m.streams, "window_bytes": m.window_bytes, "congestion": m.congestion,
        "created_at": _iso(m.created_at), "started_at": _iso(m.started_at), "finished_at": _iso(m.finished_at),
        "failure_code": m.failure_code, "failure_reason": m.failure_reason,
        "headline_bps": m.headline_bps,
        "results": {name: getattr(m, name) for name in RESULT_FIELDS} if m.status == "done" else None,
        "progress": progress.read(m.pk) if not m.is_finished else None,
    }
    return data


@require_GET
@token_required
def sites(request):
    rows = Site.objects.filter(enabled=True).order_by("slug").values("slug", "name", "host", "port", "protocol", "location")
    return JsonResponse({"sites": list(rows)})


@require_GET
@token_required
def vantages(request):
    rows = Vantage.objects.filter(enabled=True).order_by("name").values("name", "description", "kernel",
                                                                        "congestion_controls", "last_seen")
    return JsonResponse({"vantages": list(rows)})


def _request_data(request):
    """The POST body as a flat dict: JSON object or form-encoded. Raises ValueError."""
    if request.content_type == "application/json":
        try:
            data = json.loads(request.body or b"{}")
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"the body is not valid JSON ({exc}); send an object such as "
                             '{"site": "<slug>", "mode": "quick"}.') from None
        if not isinstance(data, dict):
            raise ValueError("the body must be a JSON object of measurement parameters.")
        return data
    return request.POST.dict()


@require_http_methods(["POST"])
@token_required
def measurements(request):
    try:
        data = _request_data(request)
    except ValueError as exc:
        return errors(400, body=str(exc))
    unknown = sorted(set(data) - set(FORM_FIELDS))
    if unknown:
        allowed = ", ".join(FORM_FIELDS)
        return JsonResponse({"errors": {name: [f"unknown parameter {name!r}: allowed are {allowed}."] for name in unknown}},
                            status=400)
    bad_types = [name for name, value in data.items() if isinstance(value, (dict, list, bool))]
    if bad_types:
        return JsonResponse({"errors": {name: [f"{name} must be a string or a number."] for name in bad_types}}, status=400)
    form = MeasurementForm(data={k: "" if v is None else str(v) for k, v in data.items()})
    if not form.is_valid():
        return JsonResponse({"errors": {field: [e["message"] for e in errs] for field, errs in form.errors.get_json_data().items()}},
                            status=400)
    try:
        m = request_measurement(form, request.user)
    except ValidationError as exc:  # only if the data changed between the two validations
        return JsonResponse({"errors": exc.message_dict}, status=400)
    response = JsonResponse({"id": m.slug, "slug": m.slug, "status": m.status,
                             "permalink": request.build_absolute_uri(m.get_absolute_url())}, status=201)
    response["Location"] = f"/api/v1/measurements/{m.slug}"
    return response


@require_GET
@token_required
def measurement_detail(request, slug):
    m = _get_measurement(slug)
    if m is None:
        return _not_found(slug)
    return JsonResponse(measurement_json(request, m))


@require_GET
@token_required
def measurement_trace(request, slug):
    m = _get_measurement(slug)
    if m is None:
        return _not_found(slug)
    trace = MeasurementTrace.objects.filter(pk=m.pk).first()
    if trace is None:
        return errors(404, trace=f"measurement {slug} has no trace: its status is {m.status}; "
                                 "a trace exists once the status is done.")
    return JsonResponse(trace.to_dict())


def _parse_bound(name, value):
    """(moment, lookup) for a CSV date filter. A date (YYYY-MM-DD) means whole UTC days, both
    ends inclusive: since from its midnight, until up to the next midnight (exclusive). An ISO
    8601 datetime is inclusive at both ends; naive means UTC."""
    value = value.strip()
    moment = parse_datetime(value) if "T" in value or " " in value else None
    if moment is not None:
        lookup = "gte" if name == "since" else "lte"
    else:
        try:
            day = parse_date(value)
        except ValueError:
            day = None
        if day is None:
            raise ValueError(f"{name} {value!r} is not a date: use YYYY-MM-DD or an ISO 8601 datetime "
                             "such as 2026-11-22T08:00:00Z.")
        if name == "until":
            day += datetime.timedelta(days=1)
        moment = datetime.datetime.combine(day, datetime.time.min)
        lookup = "gte" if name == "since" else "lt"
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, datetime.timezone.utc)
    return moment, lookup


@require_GET
@token_required
def measurements_csv(request):
    """All measurements (oldest first) as CSV, optionally of one site and within [since, until].
    until given as a date includes that whole day. Streams rows from a server-side cursor."""
    allowed = {"site", "since", "until"}
    problems = {name: [f"unknown parameter {name!r}: allowed are site, since, until."]
                for name in sorted(set(request.GET) - allowed)}
    queryset = Measurement.objects.order_by("created_at", "pk")
    site_slug = request.GET.get("site", "").strip()
    if site_slug:
        site = Site.objects.filter(slug=site_slug).first()
        if site is None:
            problems["site"] = [f"unknown site {site_slug!r}: use a slug from /api/v1/sites."]
        queryset = queryset.filter(site=site)
    bounds = {}
    for name in ("since", "until"):
        if request.GET.get(name, "").strip():
            try:
                bounds[name] = _parse_bound(name, request.GET[name])
            except ValueError as exc:
                problems[name] = [str(exc)]
    if "since" in bounds and "until" in bounds and bounds["since"][0] >= bounds["until"][0]:
        problems["until"] = ["until must be later than since."]
    if problems:
        return JsonResponse({"errors": problems}, status=400)
    for moment, lookup in bounds.values():
        queryset = queryset.filter(**{f"created_at__{lookup}": moment})
    name = f"measurements-{site_slug}.csv" if site_slug else "measurements.csv"
    return csv_response(measurement_csv_rows(queryset), name)


@require_GET
def openapi(request):
    from .openapi import schema

    return JsonResponse(schema())
