"""The vendored libraries are the files VERSIONS.md says they are, and they load in Chromium."""

import hashlib
import re
from pathlib import Path

import pytest

from portal.middleware import POLICY
from tests.browser.pwhelpers import canvas_ink

VENDOR = Path(__file__).resolve().parents[2] / "static" / "vendor"
ROW = re.compile(
    r"^\| `(?P<file>[^`]+)` \| `(?P<package>[^`]+)` \| (?P<version>[0-9.]+)[^|]*\|[^|]*\| `(?P<sha>[0-9a-f]{64})` \|$"
)


def versions_rows():
    rows = [m.groupdict() for m in map(ROW.match, (VENDOR / "VERSIONS.md").read_text().splitlines()) if m]
    assert rows, "VERSIONS.md has no file table rows"
    return rows


def test_vendor_files_match_versions_md_checksums():
    rows = versions_rows()
    listed = {row["file"] for row in rows}
    shipped = {p.name for p in VENDOR.iterdir() if p.is_file() and p.suffix in {".js", ".map"}}
    assert listed == shipped, f"VERSIONS.md lists {sorted(listed)}, static/vendor has {sorted(shipped)}"
    for row in rows:
        digest = hashlib.sha256((VENDOR / row["file"]).read_bytes()).hexdigest()
        assert digest == row["sha"], f"{row['file']}: sha256 {digest}, VERSIONS.md says {row['sha']}"


def test_vendor_files_carry_their_pinned_versions():
    pinned = {row["file"]: row["version"] for row in versions_rows()}
    assert pinned["htmx.min.js"] == "2.0.11"
    assert 'version:"2.0.11"' in (VENDOR / "htmx.min.js").read_text()
    assert "Chart.js v4.6.1" in (VENDOR / "chart.umd.min.js").read_text()[:200]
    assert "chartjs-adapter-date-fns v3.0.0" in (VENDOR / "chartjs-adapter-date-fns.bundle.min.js").read_text()[:200]


@pytest.mark.browser
def test_vendor_libraries_load_together_under_csp(watched_page, live_server):
    """htmx, Chart.js and the adapter load from our static files and draw a time-axis chart
    under the portal's own Content-Security-Policy."""
    page = watched_page.page
    # A static HTML file would not carry a CSP header, so the probe page is answered here.
    page.route(
        f"{live_server.url}/__vendor_probe",
        lambda route: route.fulfill(
            status=200,
            content_type="text/html",
            headers={"Content-Security-Policy": POLICY},
            body=(
                # As in templates/base.html: htmx's default indicator <style> breaks the CSP.
                "<!doctype html><meta name='htmx-config' content='{\"includeIndicatorStyles\": false}'>"
                "<canvas id=c width=300 height=150></canvas>"
                "<script src='/static/vendor/htmx.min.js'></script>"
                "<script src='/static/vendor/chart.umd.min.js'></script>"
                "<script src='/static/vendor/chartjs-adapter-date-fns.bundle.min.js'></script>"
            ),
        ),
    )
    page.goto(f"{live_server.url}/__vendor_probe")
    assert page.evaluate("htmx.version") == "2.0.11"
    assert page.evaluate("Chart.version") == "4.6.1"
    # Without the adapter, Chart.js's date adapter throws "not implemented" on format().
    assert page.evaluate("new Chart._adapters._date().format(Date.UTC(2026, 0, 15, 12), 'yyyy-MM')") == "2026-01"
    assert canvas_ink(page, "#c") == 0
    page.evaluate(
        """() => new Chart(document.getElementById('c'), {
             type: 'line',
             options: {animation: false, responsive: false, scales: {x: {type: 'time'}}},
             data: {datasets: [{data: [{x: 0, y: 1}, {x: 86400000, y: 3}], borderColor: '#c00'}]}})"""
    )
    assert canvas_ink(page, "#c") > 500
    watched_page.assert_clean()
