"""The JSON API, /api/v1/, on django-ninja. Bearer-token auth (manage.py issue_token USERNAME)
on every endpoint but the OpenAPI schema. A measurement's <id> is its slug, the same
unguessable id as the permalink /m/<slug>/: numeric ids would let anyone count and walk
everyone's results.

The Schemas below are the API's one description: ninja validates requests against them and
generates /api/v1/openapi.json from them. They check shape and types (which parameters exist,
scalars only); the values are checked by MeasurementForm, the one validator shared with the
request page, whose constants (ranges, modes) the Schema's documentation is built from.
Every error, ninja's own included, answers {"errors": {field: [message]}}.
"""

import datetime
import json
import re
from typing import Any, Dict, List, Optional, Union

from django.core.exceptions import SuspiciousOperation
from django.http import Http404, JsonResponse
from django.utils import timezone
from ninja import NinjaAPI, Query, Schema
from ninja import Status as Answer  # status code + body (vocab.Status is a measurement's)
from ninja.errors import HttpError, ValidationError
from ninja.parser import Parser
from ninja.security import HttpBearer
from pydantic import ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, create_model

from . import errors, progress
from .csvexport import PERIOD_PARAMS, BadQuery, measurement_csv_response, parse_period
from .dispatch import QuotaExceeded, request_measurement
from .forms import DEFAULTS, DURATION_RANGE, MODES, SIZE_PATTERN, STREAMS_RANGE, MeasurementForm
from .models import ApiToken, Measurement, MeasurementTrace, Site, Vantage
from .vocab import RESULT_FIELDS, Status

FORM_FIELDS = tuple(MeasurementForm.base_fields)
CSV_PARAMS = ("site",) + PERIOD_PARAMS
BODY_EXAMPLE = '{"site": "<slug>", "mode": "quick"}'
# What a measurement id can be (Django's <slug:> converter; Measurement.slug is token_urlsafe).
SLUG_RE = re.compile(r"[-a-zA-Z0-9_]+")


class ApiError(HttpError):
    """An answer in the API's error shape: status and {field: message}."""

    def __init__(self, status, **fields):
        super().__init__(status, "; ".join(fields.values()))
        self.fields = fields


# --- authentication -------------------------------------------------------------------------

MISSING_TOKEN = (
    "missing credentials: send the header 'Authorization: Bearer <token>' (python manage.py issue_token USERNAME)."
)
INVALID_TOKEN = (
    "invalid token: it is unknown, revoked or its user is inactive; issue a new one with manage.py issue_token."
)


class BearerToken(HttpBearer):
    """An ApiToken in 'Authorization: Bearer <token>'; the two kinds of failure get their own
    message (ninja's HttpBearer alone would say 'Unauthorized' to both)."""

    def __call__(self, request):
        scheme, _, key = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise ApiError(401, authorization=MISSING_TOKEN)
        return self.authenticate(request, key.strip())

    def authenticate(self, request, token):
        row = ApiToken.objects.select_related("user").filter(key_hash=ApiToken.hash_key(token)).first()
        if row is None or not row.user.is_active:
            raise ApiError(401, authorization=INVALID_TOKEN)
        # Written at most once a minute: a busy client must not turn every read into a write.
        if row.last_used is None or timezone.now() - row.last_used > datetime.timedelta(minutes=1):
            ApiToken.objects.filter(pk=row.pk).update(last_used=timezone.now())
        return row.user


# --- request bodies -------------------------------------------------------------------------


class BodyParser(Parser):
    """A JSON object or a form (url-encoded or multipart), like the request page posts."""

    FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")

    def parse_body(self, request):
        if request.content_type in self.FORMS:
            return request.POST.dict()
        if request.content_type != "application/json":
            raise ApiError(
                415,
                body=f"Content-Type {request.content_type or '(none)'!r} is not accepted: send "
                "application/json (or a form, application/x-www-form-urlencoded).",
            )
        try:
            data = json.loads(request.body)
        except RecursionError:
            raise ApiError(
                400, body=f"the body is not valid JSON (nested too deeply); send a flat object such as {BODY_EXAMPLE}."
            ) from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ApiError(
                400, body=f"the body is not valid JSON ({exc}); send an object such as {BODY_EXAMPLE}."
            ) from None
        if not isinstance(data, dict):
            raise ApiError(400, body="the body must be a JSON object of measurement parameters.")
        return data


# A parameter's value as the form reads it: text or a number (JSON true, objects and lists are
# refused here, with the message in _validation_message).
Scalar = Optional[Union[StrictStr, StrictInt, StrictFloat]]


class MeasurementRequest(Schema):
    model_config = ConfigDict(extra="forbid", title="MeasurementRequest")

    site: Union[StrictStr, StrictInt] = Field(description="Slug of a registered, enabled site (GET /sites).")
    vantage: Scalar = Field(None, description="Vantage name; optional when only one is enabled.")
    mode: Scalar = Field(None, json_schema_extra={"enum": list(MODES), "default": DEFAULTS["mode"]})
    duration_s: Scalar = Field(
        None,
        description="Seconds: a full run's length and quick mode's limit.",
        json_schema_extra={
            "minimum": DURATION_RANGE[0],
            "maximum": DURATION_RANGE[1],
            "default": DEFAULTS["duration_s"],
        },
    )
    streams: Scalar = Field(
        None,
        description="Parallel TCP streams.",
        json_schema_extra={"minimum": STREAMS_RANGE[0], "maximum": STREAMS_RANGE[1], "default": DEFAULTS["streams"]},
    )
    window: Scalar = Field(
        None,
        description="Socket buffer; K/M are 1024-based; 4K to 16M; omit for the kernel default.",
        json_schema_extra={"pattern": f"^{SIZE_PATTERN}$"},
    )
    congestion: Scalar = Field(None, description="One of the vantage's congestion_controls; omit for its default.")
    until_converged: Optional[Union[StrictBool, StrictStr, StrictInt]] = Field(
        None,
        description="Quick mode: go on to the full duration_s when the estimate has not converged by its "
        "deadline, instead of answering then with a wider interval.",
        json_schema_extra={"default": False},
    )


# --- responses ------------------------------------------------------------------------------


class Errors(Schema):
    errors: Dict[str, List[str]] = Field(
        examples=[{"duration_s": ["duration_s 0 is out of range: allowed 1 to 60 seconds."]}]
    )


class SiteOut(Schema):
    slug: str
    name: str
    host: str
    port: int
    protocol: str
    location: str


class SitesOut(Schema):
    sites: List[SiteOut]


class VantageOut(Schema):
    name: str
    description: str
    kernel: str
    congestion_controls: List[str]
    last_seen: Optional[datetime.datetime]


class VantagesOut(Schema):
    vantages: List[VantageOut]


class Created(Schema):
    id: str
    slug: str
    status: str
    permalink: str


# The results object is declared from the one list of result fields (vocab.RESULT_FIELDS), so a
# field added there is in the API and its schema with no change here.
_PYTHON_TYPES = {"float": float, "bigint": int, "int": int, "bool": bool, "str": str}
Results = create_model(
    "Results", __base__=Schema, **{f.name: (Optional[_PYTHON_TYPES[f.kind]], None) for f in RESULT_FIELDS}
)


class Progress(Schema):
    model_config = ConfigDict(extra="allow")
    phase: str
    elapsed_s: float
    samples: List[Dict[str, Any]]


class MeasurementOut(Schema):
    id: str
    slug: str
    status: str
    permalink: str
    site: str
    vantage: str
    mode: str
    duration_s: int
    streams: int
    window_bytes: Optional[int]
    congestion: str
    until_converged: bool
    created_at: str = Field(json_schema_extra={"format": "date-time"})
    started_at: Optional[str] = Field(json_schema_extra={"format": "date-time"})
    finished_at: Optional[str] = Field(json_schema_extra={"format": "date-time"})
    failure_code: str
    failure_reason: str
    headline_bps: Optional[float]
    headline_mark: str = Field(
        description="How headline_bps stands to quick mode, as every page marks it: converged, deadline (answered "
        "at its deadline), estimate (an older prober's answer), fell_back or not_entered (the full run's "
        "average); empty for full and validate tests."
    )
    results: Optional[Results] = Field(description="When status is done; units as in prober/EVENTS.md.")
    progress: Optional[Progress] = Field(description="While queued or running.")


Series = List[Optional[Union[int, float]]]


class TraceStream(Schema):
    model_config = ConfigDict(extra="allow")
    id: int
    cwnd_bytes: Series
    ssthresh_bytes: Series
    rtt_us: Series
    bytes_acked: Series
    total_retrans: Series


class Trace(Schema):
    model_config = ConfigDict(extra="allow")
    t: Series
    inst_bps: Series
    cumu_bps: Series
    cwnd_bytes: Series
    streams: List[TraceStream]
    slow_start_end_s: Optional[float] = None


class CsvQuery(Schema):
    site: Optional[str] = Field(None, description="A site slug (GET /sites).")
    since: Optional[str] = Field(
        None, description="YYYY-MM-DD (from that day's start, UTC) or ISO 8601 datetime (inclusive)."
    )
    until: Optional[str] = Field(
        None, description="YYYY-MM-DD (through the end of that day, UTC) or ISO 8601 datetime (inclusive)."
    )


# --- the API --------------------------------------------------------------------------------


class PortalAPI(NinjaAPI):
    _schema = None

    def get_openapi_schema(self, *, path_prefix=None, path_params=None):
        # Paths relative to the server URL /api/v1, as the schema has always listed them. Built
        # once per process: generating it takes ~70 ms and it changes only with the code.
        if self._schema is None:
            self._schema = super().get_openapi_schema(path_prefix="", path_params=path_params)
        return self._schema


api = PortalAPI(
    title="quickprobe portal API",
    version="1",
    urls_namespace="api",
    auth=BearerToken(),
    parser=BodyParser(),
    description="Achievable TCP throughput tests against registered iperf servers. "
    "Authenticate with 'Authorization: Bearer <token>' (python manage.py issue_token USERNAME).",
    servers=[{"url": "/api/v1"}],
    docs_url=None,  # no docs page: Swagger UI needs scripts our CSP refuses
)
UNAUTHORIZED = {401: Errors}


@api.get("/sites", response={200: SitesOut, **UNAUTHORIZED}, summary="Registered, enabled sites")
def sites(request):
    rows = (
        Site.objects.filter(enabled=True)
        .order_by("slug")
        .values("slug", "name", "host", "port", "protocol", "location")
    )
    return {"sites": list(rows)}


@api.get("/vantages", response={200: VantagesOut, **UNAUTHORIZED}, summary="Enabled vantages (prober hosts)")
def vantages(request):
    rows = (
        Vantage.objects.filter(enabled=True)
        .order_by("name")
        .values("name", "description", "kernel", "congestion_controls", "last_seen")
    )
    return {"vantages": list(rows)}


@api.post(
    "/measurements",
    response={201: Created, 400: Errors, 413: Errors, 415: Errors, 429: Errors, **UNAUTHORIZED},
    summary="Request a measurement",
    openapi_extra={
        "requestBody": {
            "content": {
                "application/x-www-form-urlencoded": {"schema": {"$ref": "#/components/schemas/MeasurementRequest"}}
            }
        }
    },
)
def measurements(request, payload: MeasurementRequest):
    data = payload.model_dump(exclude_unset=True)
    # One creation path: the same form and service as the request page.
    form = MeasurementForm(data={name: "" if value is None else str(value) for name, value in data.items()})
    if not form.is_valid():
        return Answer(
            400,
            {"errors": {field: [e["message"] for e in errs] for field, errs in form.errors.get_json_data().items()}},
        )
    m = request_measurement(form, request.auth)
    response = JsonResponse(
        {
            "id": m.slug,
            "slug": m.slug,
            "status": m.status,
            "permalink": request.build_absolute_uri(m.get_absolute_url()),
        },
        status=201,
    )
    response["Location"] = f"/api/v1/measurements/{m.slug}"
    return response


def _get_measurement(slug):
    # Only a slug can be an id: anything else (a NUL, which PostgreSQL refuses in a query and
    # answered 500 with) is an unknown id on every backend, without asking the database.
    m = (
        Measurement.objects.select_related("site", "vantage").defer("result").filter(slug=slug).first()
        if SLUG_RE.fullmatch(slug)
        else None
    )
    if m is None:
        raise ApiError(
            404, id=f"no measurement with id {slug!r}: ids are the slugs returned by POST /api/v1/measurements."
        )
    return m


def _iso(value):
    return value.isoformat() if value else None


def measurement_json(request, m):
    return {
        "id": m.slug,
        "slug": m.slug,
        "status": m.status,
        "permalink": request.build_absolute_uri(m.get_absolute_url()),
        "site": m.site.slug,
        "vantage": m.vantage.name,
        "mode": m.mode,
        "duration_s": m.duration_s,
        "streams": m.streams,
        "window_bytes": m.window_bytes,
        "congestion": m.congestion,
        "until_converged": m.until_converged,
        "created_at": _iso(m.created_at),
        "started_at": _iso(m.started_at),
        "finished_at": _iso(m.finished_at),
        "failure_code": m.failure_code,
        # The stored reason (prober stderr, host:port, an admin's name) only for staff and the requester.
        "failure_reason": m.failure_reason if m.failure_detail_visible_to(request.auth) else m.public_failure_reason,
        "headline_bps": m.headline_bps,
        "headline_mark": m.quick_mark if m.status == Status.DONE else "",
        "results": {f.name: getattr(m, f.name) for f in RESULT_FIELDS} if m.status == Status.DONE else None,
        "progress": progress.read(m.pk) if not m.is_finished else None,
    }


@api.get(
    "/measurements/{id}",
    response={200: MeasurementOut, 404: Errors, **UNAUTHORIZED},
    summary="Status and results",
    url_name="measurement",
)
def measurement_detail(request, id: str):
    return measurement_json(request, _get_measurement(id))


@api.get(
    "/measurements/{id}/trace",
    response={200: Trace, 404: Errors, **UNAUTHORIZED},
    summary="The per-sample trace (once done)",
    url_name="trace",
    exclude_unset=True,
)
def measurement_trace(request, id: str):
    m = _get_measurement(id)
    trace = MeasurementTrace.objects.filter(pk=m.pk).first()
    if trace is None:
        raise ApiError(
            404,
            trace=f"measurement {m.slug} has no trace: its status is {m.status}; "
            "a trace exists once the status is done.",
        )
    return trace.to_dict()


@api.get(
    "/measurements.csv",
    response={200: str, 400: Errors, **UNAUTHORIZED},
    summary="Measurements as CSV, oldest first, streamed",
    url_name="measurements_csv",
    openapi_extra={"responses": {"200": {"content": {"text/csv": {"schema": {"type": "string"}}}}}},
)
def measurements_csv(request, filters: Query[CsvQuery]):
    """All measurements (oldest first) as CSV, optionally of one site and within [since, until]."""
    queryset, period, site_slug, problems = _export_filters(request, filters, CSV_PARAMS, Measurement.objects.all())
    if problems:
        return Answer(400, {"errors": problems})
    name = f"measurements-{site_slug}.csv" if site_slug else "measurements.csv"
    return measurement_csv_response(queryset, period, name)


def _export_filters(request, filters, allowed, queryset):
    """The CSV export's filters (site, since, until) on queryset: (queryset of the site, the
    period, the site's slug, problems), problems naming every parameter not in `allowed` and
    every value that is wrong (period None then)."""
    problems = {
        name: [f"unknown parameter {name!r}: allowed are {', '.join(allowed)}."]
        for name in sorted(set(request.GET) - set(allowed))
    }
    site_slug = (filters.site or "").strip()
    if site_slug:
        site = Site.objects.filter(slug=site_slug).first() if "\x00" not in site_slug else None
        if site is None:
            problems["site"] = [f"unknown site {site_slug[:64]!r}: use a slug from /api/v1/sites."]
        queryset = queryset.filter(site=site)
    period = None
    try:
        period = parse_period(request.GET)
    except BadQuery as exc:
        problems.update(exc.errors)
    return queryset, period, site_slug, problems


LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX = 100, 500
LIST_PARAMS = CSV_PARAMS + ("limit", "offset")


class ListQuery(CsvQuery):
    limit: int = Field(LIST_LIMIT_DEFAULT, ge=1, le=LIST_LIMIT_MAX, description="Measurements per page.")
    offset: int = Field(0, ge=0, description="Measurements to skip (the previous page's offset + limit).")


class MeasurementPage(Schema):
    count: int = Field(description="Measurements matching the filters, on all pages.")
    limit: int
    offset: int
    next: Optional[str] = Field(description="The next page's URL; null on the last page.")
    measurements: List[MeasurementOut]


@api.get(
    "/measurements",
    response={200: MeasurementPage, 400: Errors, **UNAUTHORIZED},
    summary="Measurements as JSON, oldest first, paged (the CSV export's filters)",
    url_name="measurements",
)
def measurement_list(request, filters: Query[ListQuery]):
    """The rows /measurements.csv exports (same site, since and until), oldest first so a page
    stays the same while new tests arrive; each as GET /measurements/{id} gives it, except
    that a running test's progress leaves out its samples (read those one test at a time)."""
    queryset, period, _, problems = _export_filters(
        request, filters, LIST_PARAMS, Measurement.objects.select_related("site", "vantage").defer("result")
    )
    if problems:
        return Answer(400, {"errors": problems})
    queryset = period.filter(queryset)
    count = queryset.count()
    rows = queryset.order_by("created_at", "pk")[filters.offset : filters.offset + filters.limit]
    items = [measurement_json(request, m) for m in rows]
    for item in items:
        if item["progress"]:
            item["progress"] = dict(item["progress"], samples=[])
    following = filters.offset + filters.limit
    query = request.GET.copy()
    query["offset"] = str(following)
    return {
        "count": count,
        "limit": filters.limit,
        "offset": filters.offset,
        "next": request.build_absolute_uri(f"{request.path}?{query.urlencode()}") if following < count else None,
        "measurements": items,
    }


# --- errors: every answer in the one shape --------------------------------------------------


def _error_response(status, errors):
    return api.create_response(None, {"errors": errors}, status=status)


def _api_error(request, exc):
    response = _error_response(exc.status_code, {name: [message] for name, message in exc.fields.items()})
    if exc.status_code == 401:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


def _http_error(request, exc):
    # ninja wraps whatever the body parser raised into HttpError(400, "Cannot parse request body").
    cause = exc.__cause__
    if isinstance(cause, ApiError):
        return _api_error(request, cause)
    if isinstance(cause, SuspiciousOperation):
        return errors.bad_request(request, cause)
    return _error_response(exc.status_code, {"request": [str(exc)]})


def _validation_message(error):
    kind, loc = error["type"], error["loc"]
    field = str(loc[2]) if loc[:1] == ("body",) and len(loc) > 2 else str(loc[-1])
    if kind == "extra_forbidden":
        return field, f"unknown parameter {field!r}: allowed are {', '.join(FORM_FIELDS)}."
    if kind == "missing" and field in ("payload", "site"):
        return "site", MeasurementForm.base_fields["site"].error_messages["required"]
    if loc[:1] == ("body",) and field == "until_converged":
        return field, "until_converged must be true or false."
    if loc[:1] == ("body",):
        return field, f"{field} must be a string or a number."
    return field, f"{field}: {error['msg']}"


def _validation_error(request, exc):
    errors = {}
    for error in exc.errors:
        field, message = _validation_message(error)
        if message not in errors.setdefault(field, []):
            errors[field].append(message)
    return _error_response(400, errors)


def _over_quota(request, exc):
    response = _error_response(429, {"quota": [exc.message]})
    response["Retry-After"] = str(exc.retry_after_s)
    return response


api.add_exception_handler(ApiError, _api_error)
api.add_exception_handler(HttpError, _http_error)
api.add_exception_handler(ValidationError, _validation_error)
# Body too large, too many fields, unknown paths: worded once, in errors.py, for pages and API.
api.add_exception_handler(SuspiciousOperation, errors.bad_request)
api.add_exception_handler(Http404, errors.page_not_found)
api.add_exception_handler(QuotaExceeded, _over_quota)
