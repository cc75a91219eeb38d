import json

import pytest

from portal.measure.models import ApiToken, Measurement
from tests import factories


def post_json(client, data, **extra):
    return client.post("/api/v1/measurements", data=json.dumps(data), content_type="application/json", **extra)


@pytest.mark.parametrize(
    "method,path",
    [
        ("get", "/api/v1/sites"),
        ("get", "/api/v1/vantages"),
        ("post", "/api/v1/measurements"),
        ("get", "/api/v1/measurements"),
        ("get", "/api/v1/measurements/abc"),
        ("get", "/api/v1/measurements/abc/trace"),
        ("get", "/api/v1/measurements.csv"),
    ],
)
def test_api_no_token_rejected(client, db, method, path):
    response = getattr(client, method)(path)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert response.json() == {
        "errors": {
            "authorization": [
                "missing credentials: send the header 'Authorization: Bearer <token>' (python manage.py issue_token USERNAME)."
            ]
        }
    }


def test_api_bad_token_rejected(client, api_token):
    response = client.get("/api/v1/sites", HTTP_AUTHORIZATION="Bearer " + api_token[:-1] + "x")
    assert response.status_code == 401
    assert response.json()["errors"]["authorization"] == [
        "invalid token: it is unknown, revoked or its user is inactive; issue a new one with manage.py issue_token."
    ]


def test_api_inactive_user_token_rejected(client, user, api_token):
    user.is_active = False
    user.save()
    assert client.get("/api/v1/sites", HTTP_AUTHORIZATION=f"Bearer {api_token}").status_code == 401


def test_api_token_stored_only_as_hash(user, api_token):
    stored = ApiToken.objects.get(user=user)
    assert stored.key_hash == ApiToken.hash_key(api_token) != api_token
    assert api_token not in (stored.key_hash, stored.prefix) and stored.prefix == api_token[:8]


def test_api_sites_lists_enabled_only(api_client, site):
    factories.make_site(slug="off", enabled=False)
    response = api_client.get("/api/v1/sites")
    assert response.status_code == 200
    assert response.json() == {
        "sites": [
            {
                "slug": "loopback",
                "name": "Loopback iperf3",
                "host": "127.0.0.1",
                "port": 5201,
                "protocol": "iperf3",
                "location": "Loopback",
            }
        ]
    }


def test_api_post_measurement_created(api_client, user, site, vantage):
    response = post_json(
        api_client, {"site": "loopback", "mode": "quick", "duration_s": 5, "streams": 2, "window": "1M"}
    )
    assert response.status_code == 201
    body = response.json()
    m = Measurement.objects.get(slug=body["id"])
    assert body == {"id": m.slug, "slug": m.slug, "status": "queued", "permalink": f"http://testserver/m/{m.slug}/"}
    assert response["Location"] == f"/api/v1/measurements/{m.slug}"
    assert (m.site, m.vantage, m.requested_by, m.mode, m.duration_s, m.streams, m.window_bytes, m.congestion) == (
        site,
        vantage,
        user,
        "quick",
        5,
        2,
        1048576,
        "",
    )


def test_api_post_form_encoded_created(api_client, site, vantage):
    response = api_client.post("/api/v1/measurements", {"site": "loopback", "congestion": "reno"})
    assert response.status_code == 201
    assert Measurement.objects.get(slug=response.json()["id"]).congestion == "reno"


def test_api_post_bad_parameters_messages_exact(api_client, site, vantage):
    response = post_json(
        api_client, {"site": "loopback", "duration_s": 0, "streams": 17, "window": "2G", "congestion": "vegas"}
    )
    assert response.status_code == 400
    assert response.json() == {
        "errors": {
            "duration_s": ["duration_s 0 is out of range: allowed 1 to 60 seconds."],
            "streams": ["streams 17 is out of range: allowed 1 to 16 streams."],
            "window": [
                "window '2G' is not a size: write a whole number of bytes, optionally followed by K or M "
                "(1024-based), from 4K to 16M, e.g. 256K; or leave it blank for the kernel's default"
            ],
            "congestion": [
                "congestion 'vegas' is not available on vantage local: choose one of reno, cubic, bbr, "
                "or leave it blank for the vantage's default."
            ],
        }
    }
    assert Measurement.objects.count() == 0


def test_api_post_unknown_site_rejected(api_client, site, vantage):
    response = post_json(api_client, {"site": "10.0.0.1"})
    assert response.status_code == 400
    assert response.json() == {
        "errors": {
            "site": [
                "unknown site '10.0.0.1': only registered sites can be tested; choose one of the sites listed at /api/v1/sites."
            ]
        }
    }


def test_api_post_unknown_parameter_rejected(api_client, site, vantage):
    response = post_json(api_client, {"site": "loopback", "duration": 5})
    assert response.status_code == 400
    assert response.json() == {
        "errors": {
            "duration": [
                "unknown parameter 'duration': allowed are site, vantage, mode, duration_s, streams, window, congestion, "
                "until_converged."
            ]
        }
    }


def test_api_post_bad_json_rejected(api_client, site, vantage):
    response = api_client.post("/api/v1/measurements", data="{site:", content_type="application/json")
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["body"]
    assert response.json()["errors"]["body"][0].startswith("the body is not valid JSON")
    response = post_json(api_client, ["loopback"])
    assert response.json() == {"errors": {"body": ["the body must be a JSON object of measurement parameters."]}}


def test_api_post_boolean_rejected(api_client, site, vantage):
    response = post_json(api_client, {"site": "loopback", "streams": True})
    assert response.json() == {"errors": {"streams": ["streams must be a string or a number."]}}


def test_api_get_measurement_queued_shape(api_client, measurement):
    response = api_client.get(f"/api/v1/measurements/{measurement.slug}")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == measurement.slug and body["status"] == "queued"
    assert body["results"] is None and body["headline_bps"] is None
    assert body["progress"] == {"phase": "queued", "elapsed_s": 0.0, "samples": []}
    assert body["site"] == "loopback" and body["vantage"] == "local"


def test_api_get_measurement_done_results(api_client, done_measurement):
    body = api_client.get(f"/api/v1/measurements/{done_measurement.slug}").json()
    assert body["status"] == "done" and body["progress"] is None
    assert body["headline_bps"] == 9.3e9
    assert body["results"]["quick_bps"] == 9.3e9
    assert body["results"]["window_given_bytes"] == 2626560
    assert body["results"]["rule"] == "paper_cwnd_stable"
    assert body["permalink"] == f"http://testserver/m/{done_measurement.slug}/"


def test_api_get_measurement_other_users_readable(client, other_user, done_measurement):
    token = ApiToken.issue(other_user)
    response = client.get(f"/api/v1/measurements/{done_measurement.slug}", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200  # results are public by unguessable id, like permalinks


def test_api_get_measurement_unknown_404(api_client, done_measurement):
    response = api_client.get(f"/api/v1/measurements/{done_measurement.pk}")
    assert response.status_code == 404
    assert response.json() == {
        "errors": {
            "id": [
                f"no measurement with id '{done_measurement.pk}': ids are the slugs returned by POST /api/v1/measurements."
            ]
        }
    }


def test_api_trace_exact(api_client, done_measurement):
    response = api_client.get(f"/api/v1/measurements/{done_measurement.slug}/trace")
    assert response.status_code == 200
    assert response.json() == factories.sample_trace_dict()


def test_api_trace_missing_while_queued_404(api_client, measurement):
    response = api_client.get(f"/api/v1/measurements/{measurement.slug}/trace")
    assert response.status_code == 404
    assert response.json() == {
        "errors": {
            "trace": [
                f"measurement {measurement.slug} has no trace: its status is queued; a trace exists once the status is done."
            ]
        }
    }


def test_api_openapi_schema_public(client, db):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert set(schema["paths"]) == {
        "/sites",
        "/vantages",
        "/measurements",
        "/measurements/{id}",
        "/measurements/{id}/trace",
        "/measurements.csv",
    }
    assert schema["components"]["schemas"]["MeasurementRequest"]["properties"]["duration_s"]["maximum"] == 60


def test_issue_token_command_creates_user_and_prints_token(db, capsys):
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("issue_token", "carol")
    token = capsys.readouterr().out.strip()
    user = get_user_model().objects.get(username="carol")
    assert not user.has_usable_password()
    assert ApiToken.objects.get(user=user).key_hash == ApiToken.hash_key(token)
    call_command("issue_token", "carol")
    assert ApiToken.objects.filter(user=user).count() == 2


def test_api_schema_generated_from_the_declarations(client, db):
    from portal.measure.units import SIZE_PATTERN
    from portal.measure.vocab import RESULT_FIELDS

    schemas = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    request = schemas["MeasurementRequest"]
    assert request["required"] == ["site"] and request["additionalProperties"] is False
    assert set(request["properties"]) == {
        "site",
        "vantage",
        "mode",
        "duration_s",
        "streams",
        "window",
        "congestion",
        "until_converged",
    }
    assert request["properties"]["mode"]["enum"] == ["quick", "full", "validate"]
    assert request["properties"]["window"]["pattern"] == f"^{SIZE_PATTERN}$"
    assert list(schemas["Results"]["properties"]) == [f.name for f in RESULT_FIELDS]
    assert schemas["Errors"]["properties"]["errors"]["additionalProperties"] == {
        "items": {"type": "string"},
        "type": "array",
    }


def test_api_results_carry_every_declared_result_field(api_client, done_measurement):
    from portal.measure.vocab import RESULT_FIELDS

    results = api_client.get(f"/api/v1/measurements/{done_measurement.slug}").json()["results"]
    assert list(results) == [f.name for f in RESULT_FIELDS]
    assert results["full_bytes_estimate"] == 11625000000 and results["congestion_used"] == "bbr"


def test_api_post_goes_through_the_form_and_service(api_client, site, vantage, monkeypatch):
    from portal.measure import api, dispatch

    seen = []
    real = dispatch.request_measurement
    monkeypatch.setattr(api, "request_measurement", lambda form, user: seen.append(form) or real(form, user))
    assert post_json(api_client, {"site": "loopback", "window": "64K"}).status_code == 201
    assert type(seen[0]).__name__ == "MeasurementForm" and seen[0].cleaned_data["window"] == 65536


def test_api_post_over_quota_429_with_retry_after(api_client, settings, measurement):
    settings.QUOTA_MAX_PENDING = 1  # `measurement` is alice's, still queued
    response = post_json(api_client, {"site": "loopback"})
    assert response.status_code == 429
    assert response["Retry-After"] == str(settings.QUOTA_PENDING_RETRY_S)
    assert response.json() == {
        "errors": {
            "quota": [
                "You have 1 tests queued or running, the most allowed at once: wait for one to finish, then ask again."
            ]
        }
    }
    assert Measurement.objects.count() == 1


@pytest.mark.parametrize(
    "reader, shown",
    [
        ("owner", "connect to 10.1.2.3 port 5201: refused"),
        ("other", "nothing listens on the site's port"),
    ],
)
def test_api_failure_reason_in_full_only_for_the_requester(client, user, other_user, site, vantage, reader, shown):
    m = factories.make_measurement(
        site=site,
        vantage=vantage,
        requested_by=user,
        status="failed",
        failure_code="connect_refused",
        failure_reason="connect to 10.1.2.3 port 5201: refused",
    )
    token = ApiToken.issue(user if reader == "owner" else other_user)
    body = client.get(f"/api/v1/measurements/{m.slug}", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert (body["failure_code"], body["failure_reason"]) == ("connect_refused", shown)


def _list(client, **params):
    response = client.get("/api/v1/measurements", params)
    return response.status_code, response.json()


def test_api_list_measurements_oldest_first_paged(api_client, site, vantage):
    made = [factories.make_done_measurement(site=site, vantage=vantage) for _ in range(3)]
    status, body = _list(api_client, limit=2)
    assert status == 200
    assert (body["count"], body["limit"], body["offset"]) == (3, 2, 0)
    assert [m["id"] for m in body["measurements"]] == [made[0].slug, made[1].slug]
    assert body["next"] == "http://testserver/api/v1/measurements?limit=2&offset=2"
    # Each item is what GET /measurements/{id} answers.
    assert body["measurements"][0] == api_client.get(f"/api/v1/measurements/{made[0].slug}").json()
    status, page2 = _list(api_client, limit=2, offset=2)
    assert [m["id"] for m in page2["measurements"]] == [made[2].slug] and page2["next"] is None


def test_api_list_measurements_csv_filters(api_client, site, vantage):
    other = factories.make_site(slug="other", host="127.0.0.2")
    old = factories.make_measurement(site=site, vantage=vantage)
    Measurement.objects.filter(pk=old.pk).update(created_at="2026-01-01T12:00:00Z")
    new = factories.make_measurement(site=site, vantage=vantage)
    factories.make_measurement(site=other, vantage=vantage)
    status, body = _list(api_client, site="loopback", since="2026-02-01")
    assert status == 200 and body["count"] == 1
    assert [m["id"] for m in body["measurements"]] == [new.slug]
    status, body = _list(api_client, until="2026-01-01")
    assert [m["id"] for m in body["measurements"]] == [old.slug]
    # A queued test's progress is there, without samples (GET /measurements/{id} has them).
    assert body["measurements"][0]["progress"] == {"phase": "queued", "elapsed_s": 0.0, "samples": []}


def test_api_list_measurements_bad_query_messages(api_client, site, vantage):
    status, body = _list(api_client, site="nope", since="yesterday", page="2")
    assert status == 400
    assert body == {
        "errors": {
            "page": ["unknown parameter 'page': allowed are site, since, until, limit, offset."],
            "site": ["unknown site 'nope': use a slug from /api/v1/sites."],
            "since": [
                "since 'yesterday' is not a date: use YYYY-MM-DD or an ISO 8601 datetime such as 2026-11-22T08:00:00Z."
            ],
        }
    }
    status, body = _list(api_client, limit=501)
    assert status == 400
    assert body == {"errors": {"limit": ["limit: Input should be less than or equal to 500"]}}


def test_api_list_measurements_in_schema(client, db):
    schema = client.get("/api/v1/openapi.json").json()
    listing = schema["paths"]["/measurements"]["get"]
    assert [p["name"] for p in listing["parameters"]] == ["site", "since", "until", "limit", "offset"]
    page = listing["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert page == "#/components/schemas/MeasurementPage"
    assert "post" in schema["paths"]["/measurements"]
