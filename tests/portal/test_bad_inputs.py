"""Every bad input answered clearly (issue 9 item 4): a catalogue of requests a careless client or
an attacker sends, over the API, the request form, the CSV query strings, permalinks and login.

Each case goes through the real stack (the Django test client, every middleware, PostgreSQL)
and asserts a 4xx, a message that names the field and what is allowed (JSON
{"errors": {field: [...]}} on every API path, a page elsewhere, plain text from the site CSV),
and that nothing stored changed. The seven inputs that answered 500 are marked "was 500".
"""

import dataclasses
import json

import pytest
from django.test import Client

from portal.measure.models import ApiToken, Measurement, Site, Vantage
from tests.portal.views_support import isolated_cache  # noqa: F401 (autouse fixture)

TEN_MB = 10 * 1024 * 1024
NESTED = '{"site": ' + "[" * 100_000 + "]" * 100_000 + "}"
RANGE = "allowed 1970-01-01 to 2999-12-31"
NOT_A_DATE = "is not a date: use YYYY-MM-DD or an ISO 8601 datetime such as 2026-11-22T08:00:00Z."
FIELDS = "allowed are site, vantage, mode, duration_s, streams, window, congestion, until_converged."


@dataclasses.dataclass
class Case:
    id: str
    method: str
    path: str
    status: int
    field: str | None  # the JSON errors key; None for pages and plain text
    says: tuple  # fragments the message must contain (the field and what is allowed)
    # token: the API's bearer; anonymous / login: a browser-like client that checks CSRF
    # (anonymous, or logged in as `user`); plain / plain-login: the same without CSRF checks, to
    # reach what the CSRF check would otherwise answer first (a 405, say).
    who: str = "token"
    body: object = None  # a dict (JSON), bytes / str (raw), or ("form", dict) / ("raw", ctype, data)
    headers: dict = dataclasses.field(default_factory=dict)


def post_json(path, data, status, field, *says):
    return Case(f"{path} {json.dumps(data)[:40]}", "post", path, status, field, says, body=data)


API = "/api/v1/measurements"
CSV = "/api/v1/measurements.csv"
SITE_CSV = "/sites/loopback/measurements.csv"

CASES = [
    # --- API: measurement parameters, each checked by the one form --------------------------
    post_json(API, {"site": "loopback", "duration_s": 0}, 400, "duration_s", "duration_s 0", "allowed 1 to 60 seconds"),
    post_json(API, {"site": "loopback", "duration_s": 61}, 400, "duration_s", "allowed 1 to 60 seconds"),
    post_json(API, {"site": "loopback", "duration_s": -1}, 400, "duration_s", "allowed 1 to 60 seconds"),
    post_json(API, {"site": "loopback", "duration_s": "ten"}, 400, "duration_s", "not a whole number", "1 to 60"),
    post_json(API, {"site": "loopback", "duration_s": 5.5}, 400, "duration_s", "not a whole number", "1 to 60"),
    post_json(API, {"site": "loopback", "duration_s": 10**30}, 400, "duration_s", "out of range", "1 to 60"),
    post_json(API, {"site": "loopback", "duration_s": "1e3"}, 400, "duration_s", "not a whole number"),
    post_json(API, {"site": "loopback", "streams": 0}, 400, "streams", "allowed 1 to 16 streams"),
    post_json(API, {"site": "loopback", "streams": 17}, 400, "streams", "allowed 1 to 16 streams"),
    post_json(API, {"site": "loopback", "streams": "four"}, 400, "streams", "not a whole number", "1 to 16"),
    post_json(API, {"site": "loopback", "window": "2G"}, 400, "window", "not a size", "from 4K to 16M"),
    post_json(API, {"site": "loopback", "window": "1K"}, 400, "window", "out of range", "allowed 4K (4096) to 16M"),
    post_json(API, {"site": "loopback", "window": "32M"}, 400, "window", "out of range", "16M (16777216)"),
    post_json(API, {"site": "loopback", "window": "-4K"}, 400, "window", "not a size", "K or M (1024-based)"),
    post_json(API, {"site": "loopback", "window": "4KB"}, 400, "window", "not a size"),
    post_json(API, {"site": "loopback", "window": "1.5M"}, 400, "window", "not a size", "whole number of bytes"),
    post_json(API, {"site": "loopback", "mode": "slow"}, 400, "mode", "mode 'slow'", "quick, full or validate"),
    post_json(API, {"site": "loopback", "mode": 5}, 400, "mode", "quick, full or validate"),
    post_json(API, {"site": "loopback", "congestion": "vegas"}, 400, "congestion", "choose one of reno, cubic, bbr"),
    post_json(
        API, {"site": "loopback", "vantage": "nowhere"}, 400, "vantage", "'nowhere' is unknown", "choose one of local"
    ),
    post_json(API, {"site": "nowhere"}, 400, "site", "unknown site 'nowhere'", "/api/v1/sites"),
    post_json(API, {"site": "retired"}, 400, "site", "'retired' is disabled", "choose another site"),
    post_json(API, {}, 400, "site", "site is required", "slug of a registered site"),
    post_json(API, {"site": ""}, 400, "site", "site is required"),
    post_json(API, {"site": "   "}, 400, "site", "site is required"),
    post_json(API, {"site": None}, 400, "site", "site must be a string or a number"),
    post_json(API, {"site": "loop\x00back"}, 400, "site", "site must not contain NUL", "slug"),
    post_json(API, {"site": "loopback", "congestion": "bbr\x00"}, 400, "congestion", "congestion must not contain NUL"),
    post_json(API, {"site": "x" * 5000}, 400, "site", "unknown site", "/api/v1/sites"),
    post_json(API, {"site": "loopback", "streams": True}, 400, "streams", "streams must be a string or a number"),
    post_json(API, {"site": "loopback", "streams": {"n": 1}}, 400, "streams", "must be a string or a number"),
    post_json(API, {"site": "loopback", "window": [64, "K"]}, 400, "window", "must be a string or a number"),
    post_json(API, {"site": "loopback", "duration": 5}, 400, "duration", "unknown parameter 'duration'", FIELDS),
    post_json(
        API, {"site": "loopback", **{f"f{i}": i for i in range(2000)}}, 400, "f1999", "unknown parameter", FIELDS
    ),
    # --- API: bodies ------------------------------------------------------------------------
    Case(
        "nested JSON (was 500: RecursionError)",
        "post",
        API,
        400,
        "body",
        ("not valid JSON", "nested too deeply"),
        body=("raw", "application/json", NESTED),
    ),
    Case(
        "broken JSON",
        "post",
        API,
        400,
        "body",
        ("not valid JSON", '{"site": "<slug>"'),
        body=("raw", "application/json", "{site:"),
    ),
    Case("JSON array", "post", API, 400, "body", ("must be a JSON object",), body=["loopback"]),
    Case("JSON string", "post", API, 400, "body", ("must be a JSON object",), body="loopback"),
    Case("JSON number", "post", API, 400, "body", ("must be a JSON object",), body=5),
    Case(
        "JSON not UTF-8",
        "post",
        API,
        400,
        "body",
        ("not valid JSON",),
        body=("raw", "application/json", b'{"site": "\xff\xfe"}'),
    ),
    Case("empty JSON body", "post", API, 400, "site", ("site is required",), body=("raw", "application/json", b"")),
    Case(
        "JSON as text/plain",
        "post",
        API,
        415,
        "body",
        ("'text/plain' is not accepted", "application/json"),
        body=("raw", "text/plain", '{"site": "loopback"}'),
    ),
    Case(
        "JSON as XML",
        "post",
        API,
        415,
        "body",
        ("'application/xml' is not accepted", "application/json"),
        body=("raw", "application/xml", "<site>loopback</site>"),
    ),
    Case(
        "no content type",
        "post",
        API,
        415,
        "body",
        ("is not accepted", "application/json"),
        body=("raw", "", '{"site": "loopback"}'),
    ),
    Case(
        "10 MB JSON body",
        "post",
        API,
        413,
        "body",
        ("at most 2621440 bytes",),
        body=("raw", "application/json", '{"site": "' + "x" * TEN_MB + '"}'),
    ),
    Case(
        "10 MB form body",
        "post",
        API,
        413,
        "body",
        ("at most 2621440 bytes",),
        body=("raw", "application/x-www-form-urlencoded", "site=" + "x" * TEN_MB),
    ),
    Case(
        "2,000 form fields",
        "post",
        API,
        400,
        "body",
        ("too many fields", "at most 1000"),
        body=("raw", "application/x-www-form-urlencoded", "&".join(f"f{i}=1" for i in range(2000))),
    ),
    Case(
        "form, bad streams",
        "post",
        API,
        400,
        "streams",
        ("allowed 1 to 16 streams",),
        body=("form", {"site": "loopback", "streams": "99"}),
    ),
    Case(
        "form, unknown field",
        "post",
        API,
        400,
        "duration",
        ("unknown parameter 'duration'",),
        body=("form", {"site": "loopback", "duration": "5"}),
    ),
    # --- API: methods, credentials, ids -----------------------------------------------------
    Case("PUT measurements", "put", API, 405, "method", ("PUT is not allowed", "allowed are GET, POST")),
    Case(
        "DELETE a measurement",
        "delete",
        "/api/v1/measurements/{slug}",
        405,
        "method",
        ("DELETE is not allowed", "allowed are GET"),
    ),
    Case(
        "POST sites",
        "post",
        "/api/v1/sites",
        405,
        "method",
        ("POST is not allowed", "allowed are GET"),
        body={"slug": "mine"},
    ),
    Case("PATCH CSV", "patch", CSV, 405, "method", ("PATCH is not allowed", "allowed are GET")),
    Case(
        "no token",
        "get",
        "/api/v1/sites",
        401,
        "authorization",
        ("missing credentials", "Bearer <token>"),
        who="anonymous",
    ),
    Case(
        "Basic instead of Bearer",
        "get",
        "/api/v1/sites",
        401,
        "authorization",
        ("Bearer <token>",),
        who="anonymous",
        headers={"HTTP_AUTHORIZATION": "Basic YWxpY2U6cHc="},
    ),
    Case(
        "empty bearer",
        "get",
        "/api/v1/sites",
        401,
        "authorization",
        ("missing credentials",),
        who="anonymous",
        headers={"HTTP_AUTHORIZATION": "Bearer "},
    ),
    Case(
        "unknown token",
        "get",
        "/api/v1/sites",
        401,
        "authorization",
        ("invalid token", "issue_token"),
        who="anonymous",
        headers={"HTTP_AUTHORIZATION": "Bearer not-a-token"},
    ),
    Case(
        "token with NUL",
        "post",
        API,
        401,
        "authorization",
        ("invalid token",),
        who="anonymous",
        headers={"HTTP_AUTHORIZATION": "Bearer abc\x00def"},
        body={"site": "loopback"},
    ),
    Case(
        "unknown id",
        "get",
        "/api/v1/measurements/nope",
        404,
        "id",
        ("no measurement with id 'nope'", "slugs returned by POST"),
    ),
    Case(
        "trace while queued",
        "get",
        "/api/v1/measurements/{slug}/trace",
        404,
        "trace",
        ("its status is queued", "once the status is done"),
    ),
    Case("unknown API path", "get", "/api/v1/nope", 404, "path", ("nothing at /api/v1/nope", "openapi.json")),
    Case("API root", "get", "/api/v1/", 404, "path", ("nothing at /api/v1/", "openapi.json")),
    Case("API path under a measurement", "get", "/api/v1/measurements/{slug}/nope", 404, "path", ("openapi.json",)),
    # --- API CSV query strings --------------------------------------------------------------
    Case("CSV since=yesterday", "get", CSV + "?since=yesterday", 400, "since", ("since 'yesterday'", NOT_A_DATE)),
    Case("CSV until=2026-13-01", "get", CSV + "?until=2026-13-01", 400, "until", ("until '2026-13-01'", NOT_A_DATE)),
    Case(
        "CSV until=9999-12-31 (was 500: OverflowError)",
        "get",
        CSV + "?until=9999-12-31",
        400,
        "until",
        ("until '9999-12-31' is out of range", RANGE),
    ),
    Case("CSV since=0001-01-01", "get", CSV + "?since=0001-01-01", 400, "since", (RANGE,)),
    Case("CSV hour 25 in words", "get", CSV + "?since=2026-11-22T25:00:00Z", 400, "since", (NOT_A_DATE,)),
    Case("CSV 30 February", "get", CSV + "?until=2026-02-30", 400, "until", (NOT_A_DATE,)),
    Case("CSV compact date", "get", CSV + "?since=20260301", 400, "since", (NOT_A_DATE,)),
    Case("CSV week date", "get", CSV + "?since=2026-W09-1", 400, "since", (NOT_A_DATE,)),
    Case("CSV NUL in since", "get", CSV + "?since=2026-03-01%00", 400, "since", (NOT_A_DATE,)),
    Case(
        "CSV since after until",
        "get",
        CSV + "?since=2026-11-12&until=2026-11-10",
        400,
        "until",
        ("until must be later than since",),
    ),
    Case("CSV site=%00 (was 500: DataError)", "get", CSV + "?site=%00", 400, "site", ("unknown site", "/api/v1/sites")),
    Case("CSV unknown site", "get", CSV + "?site=nowhere", 400, "site", ("unknown site 'nowhere'",)),
    Case(
        "CSV unknown parameter",
        "get",
        CSV + "?sight=loopback",
        400,
        "sight",
        ("unknown parameter 'sight'", "allowed are site, since, until"),
    ),
    # --- site CSV query strings (plain text) ------------------------------------------------
    Case(
        "site CSV since=yesterday",
        "get",
        SITE_CSV + "?since=yesterday",
        400,
        None,
        ("since 'yesterday'", NOT_A_DATE),
        who="anonymous",
    ),
    Case(
        "site CSV until=9999-12-31 (was 500: OverflowError)",
        "get",
        SITE_CSV + "?until=9999-12-31",
        400,
        None,
        ("until '9999-12-31' is out of range", RANGE),
        who="anonymous",
    ),
    Case(
        "site CSV hour 25 in words",
        "get",
        SITE_CSV + "?since=2026-11-22T25:00",
        400,
        None,
        (NOT_A_DATE,),
        who="anonymous",
    ),
    Case(
        "site CSV since after until",
        "get",
        SITE_CSV + "?since=2026-03-05&until=2026-03-01",
        400,
        None,
        ("until must be later than since",),
        who="anonymous",
    ),
    Case("site CSV NUL", "get", SITE_CSV + "?since=%00", 400, None, (NOT_A_DATE,), who="anonymous"),
    Case(
        "site CSV of no site", "get", "/sites/nope/measurements.csv", 404, None, ("No Site matches",), who="anonymous"
    ),
    # --- pages: permalinks, site pages, 404s, methods ---------------------------------------
    Case("unknown permalink", "get", "/m/nope/", 404, None, ("No Measurement matches",), who="anonymous"),
    Case("unknown page", "get", "/nope", 404, None, ("There is nothing at /nope.",), who="anonymous"),
    Case("unknown nested page", "get", "/m/a/b/c", 404, None, ("There is nothing at /m/a/b/c.",), who="anonymous"),
    Case(
        "trace CSV while queued",
        "get",
        "/m/{slug}/trace.csv",
        404,
        None,
        ("has no stored trace", "queued"),
        who="anonymous",
    ),
    Case(
        "trace JSON while queued", "get", "/m/{slug}/trace.json", 404, None, ("has no stored trace",), who="anonymous"
    ),
    Case(
        "POST a site page",
        "post",
        "/sites/loopback/",
        405,
        None,
        ("POST is not allowed", "allowed are GET"),
        who="plain",
    ),
    Case(
        "DELETE a permalink",
        "delete",
        "/m/{slug}/",
        405,
        None,
        ("DELETE is not allowed", "allowed are GET"),
        who="plain",
    ),
    Case("PUT the overview", "put", "/", 405, None, ("PUT is not allowed", "allowed are GET"), who="plain"),
    Case(
        "PUT the request form", "put", "/measure/new", 405, None, ("PUT is not allowed", "GET, POST"), who="plain-login"
    ),
    Case("POST healthz", "post", "/healthz", 405, None, ("POST is not allowed",), who="plain"),
    Case(
        "page beyond bigint (was 500: DataError)",
        "get",
        "/sites/loopback/?page=99999999999999999999999",
        400,
        None,
        ("page 99999999999999999999999 is out of range", "allowed 1 to 1000000"),
        who="anonymous",
    ),
    Case(
        "page at bigint's edge (was 500)",
        "get",
        "/sites/loopback/?page=9223372036854775807",
        400,
        None,
        ("allowed 1 to 1000000",),
        who="anonymous",
    ),
    # --- the request form (logged in) -------------------------------------------------------
    Case(
        "new form ?site=%00 (was 500: DataError)",
        "get",
        "/measure/new?site=%00",
        400,
        None,
        ("site must not contain NUL characters", "slug"),
        who="login",
    ),
    Case(
        "form duration 0",
        "post",
        "/measure/new",
        400,
        None,
        # The page names the knob by its label and flag (issue 27); the API keeps duration_s.
        ("duration (-t) 0 is out of range: allowed 1 to 60",),
        who="plain-login",
        body=("form", {"site": "loopback", "duration_s": "0"}),
    ),
    Case(
        "form unknown site",
        "post",
        "/measure/new",
        400,
        None,
        ("unknown site &#x27;nowhere&#x27;",),
        who="plain-login",
        body=("form", {"site": "nowhere"}),
    ),
    Case(
        "form NUL in site",
        "post",
        "/measure/new",
        400,
        None,
        ("site must not contain NUL characters",),
        who="plain-login",
        body=("form", {"site": "loop\x00back"}),
    ),
    Case(
        "form window 2G",
        "post",
        "/measure/new",
        400,
        None,
        ("not a size", "from 4K to 16M"),
        who="plain-login",
        body=("form", {"site": "loopback", "window": "2G"}),
    ),
    Case(
        "form no site",
        "post",
        "/measure/new",
        400,
        None,
        ("choose a site: only registered, enabled sites can be tested.",),
        who="plain-login",
        body=("form", {"mode": "quick"}),
    ),
    Case(
        "form without CSRF token",
        "post",
        "/measure/new",
        403,
        None,
        ("CSRF",),
        who="login",
        body=("form", {"site": "loopback"}),
    ),
    Case(
        "form 10 MB",
        "post",
        "/measure/new",
        413,
        None,
        ("at most 2621440 bytes",),
        who="plain-login",
        body=("raw", "application/x-www-form-urlencoded", "site=" + "x" * TEN_MB),
    ),
    Case(
        "form 2,000 fields",
        "post",
        "/measure/new",
        400,
        None,
        ("too many fields", "at most 1000"),
        who="plain-login",
        body=("raw", "application/x-www-form-urlencoded", "&".join(f"f{i}=1" for i in range(2000))),
    ),
    # --- login --------------------------------------------------------------------------------
    Case(
        "logout by GET",
        "get",
        "/accounts/logout/",
        405,
        None,
        ("GET is not allowed", "allowed are OPTIONS, POST"),
        who="login",
    ),
    Case(
        "login 10 MB",
        "post",
        "/accounts/login/",
        413,
        None,
        ("at most 2621440 bytes",),
        who="plain",
        body=("raw", "application/x-www-form-urlencoded", "username=" + "x" * TEN_MB),
    ),
    Case(
        "login 2,000 fields",
        "post",
        "/accounts/login/",
        400,
        None,
        ("too many fields",),
        who="plain",
        body=("raw", "application/x-www-form-urlencoded", "&".join(f"f{i}=1" for i in range(2000))),
    ),
    Case(
        "login without CSRF token",
        "post",
        "/accounts/login/",
        403,
        None,
        ("CSRF",),
        who="anonymous",
        body=("form", {"username": "alice", "password": "x"}),
    ),
]


def _stored():
    """Everything a bad request could change (token last_used is bookkeeping, not data)."""
    return (
        list(Measurement.objects.order_by("pk").values()),
        list(Site.objects.order_by("pk").values()),
        list(Vantage.objects.order_by("pk").values()),
        list(ApiToken.objects.order_by("pk").values_list("key_hash")),
    )


@pytest.fixture
def world(site, vantage, measurement, make_site):
    make_site(name="Retired", slug="retired", enabled=False)
    return measurement


def _client(case, user, api_token):
    if case.who == "token":
        return Client(HTTP_AUTHORIZATION=f"Bearer {api_token}")
    client = Client(enforce_csrf_checks=not case.who.startswith("plain"))
    if case.who.endswith("login"):
        client.force_login(user)
    return client


def _send(client, case, path):
    body, kwargs = case.body, dict(case.headers)
    if isinstance(body, tuple) and body[0] == "form":
        kwargs["data"] = body[1]
    elif isinstance(body, tuple) and body[0] == "raw":
        kwargs.update(content_type=body[1], data=body[2])
    elif body is not None:
        kwargs.update(content_type="application/json", data=json.dumps(body))
    return getattr(client, case.method)(path, **kwargs)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_answered_clearly_and_nothing_stored(case, world, user, api_token):
    path = case.path.replace("{slug}", world.slug)
    before = _stored()
    response = _send(_client(case, user, api_token), case, path)
    assert response.status_code == case.status, response.content[:500]
    assert _stored() == before
    if case.method == "head":
        assert response.content == b""
        return
    text = response.content.decode()
    assert "Traceback" not in text and "Resolver404" not in text
    if case.field is not None:
        assert response["Content-Type"].startswith("application/json")
        errors = response.json()["errors"]
        assert case.field in errors, errors
        message = " ".join(errors[case.field])
    elif ".csv" in case.path and case.status == 400:
        assert response["Content-Type"] == "text/plain; charset=utf-8"
        message = text
    else:
        assert response["Content-Type"].startswith("text/html")
        message = text
    for fragment in case.says:
        assert fragment in message, message[:2000]


def test_catalogue_is_at_least_80_cases():
    assert len(CASES) >= 80


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/sites/loopback/",
        "/m/{slug}/",
        "/m/{done}/trace.csv",
        "/healthz",
        "/accounts/login/",
        "/api/v1/openapi.json",
    ],
)
def test_head_answered_like_get_without_body(client, world, done_measurement, path):
    path = path.replace("{slug}", world.slug).replace("{done}", done_measurement.slug)
    got, head = client.get(path), client.head(path)
    assert (head.status_code, head["Content-Type"]) == (got.status_code, got["Content-Type"])
    assert got.status_code == 200
    assert b"".join(head.streaming_content if head.streaming else [head.content]) == b""


def test_head_on_api_answered_like_get(api_client, world):
    assert api_client.head("/api/v1/sites").status_code == 200
    assert api_client.head(f"/api/v1/measurements/{world.slug}").status_code == 200


def test_405_names_allowed_methods_in_allow_header(api_client, world):
    # GET lists measurements since issue 27; PUT is still refused.
    response = api_client.put(API)
    assert response["Allow"] == "GET, POST"
    assert response.json() == {
        "errors": {"method": ["PUT is not allowed on /api/v1/measurements: allowed are GET, POST."]}
    }
