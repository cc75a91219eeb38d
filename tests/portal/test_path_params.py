"""Path parameters PostgreSQL cannot take (a NUL) are unknown ids, 404 on every backend: the
API's /measurements/<id> answered 500 (psycopg.DataError) on PostgreSQL (issue 28, finding 9).
These tests run on the suite's database, PostgreSQL where DATABASE_URL names it (make test)."""

import pytest


@pytest.mark.parametrize("id_", ["%00", "a%00b", "%00%00", "x%00/trace"])
def test_api_measurement_id_with_nul_not_found(api_client, id_):
    response = api_client.get(f"/api/v1/measurements/{id_}")
    assert response.status_code == 404
    [message] = response.json()["errors"]["id"]
    assert message.startswith("no measurement with id ") and "\\x00" in message
    assert message.endswith(": ids are the slugs returned by POST /api/v1/measurements.")


def test_api_measurement_id_not_a_slug_not_found(api_client, done_measurement):
    assert api_client.get(f"/api/v1/measurements/{done_measurement.slug}").status_code == 200
    response = api_client.get(f"/api/v1/measurements/{done_measurement.slug}%20or%201=1")
    assert response.status_code == 404
    assert response.json() == {
        "errors": {
            "id": [
                f"no measurement with id '{done_measurement.slug} or 1=1': ids are the slugs returned by "
                "POST /api/v1/measurements."
            ]
        }
    }


@pytest.mark.parametrize(
    "url",
    [
        "/m/%00/",
        "/m/a%00b/trace.csv",
        "/m/a%00b/trace.json",
        "/sites/%00/",
        "/sites/%00/measurements.csv",
        "/sweeps/%00/",
        "/api/v1/measurements.csv?site=%00",
    ],
)
def test_pages_with_nul_in_path_not_500(api_client, url):
    response = api_client.get(url)
    assert response.status_code in (400, 404), response.content[:300]
