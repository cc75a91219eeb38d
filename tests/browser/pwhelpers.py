"""Helpers the browser tests import: the page watcher, screenshots and canvas pixel checks."""

import os
import shutil
from pathlib import Path

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# The pictures of docs/screenshots/README.md (the README's tour): tests/browser/test_tour.py
# takes most of them from `make run`'s own pages; test_progress.py the full and failed runs.
TOUR = {
    "sites-overview",
    "request-form",
    "request-form-error",
    "live-progress",
    "permalink-quick",
    "permalink-quick-loopback",
    "permalink-validate",
    "permalink-full-2-streams",
    "permalink-failed",
    "site-history",
}

# Reported by the page itself, so that violations of scripts that never ran are still seen.
CSP_LISTENER = """
document.addEventListener('securitypolicyviolation', (e) => {
  window.__reportCsp(`${e.violatedDirective} blocked ${e.blockedURI || 'inline'} `
                     + `at ${e.sourceFile || e.documentURI}:${e.lineNumber}`);
});
"""


class PageWatch:
    """Collects everything a page complained about, across navigations."""

    def __init__(self, page):
        self.page = page
        self.console_errors = []
        self.page_errors = []
        self.failed_requests = []
        self.bad_responses = []
        self.csp_violations = []
        page.on("console", self._on_console)
        page.on("pageerror", lambda exc: self.page_errors.append(str(exc)))
        page.on("requestfailed", self._on_request_failed)
        page.on("response", self._on_response)
        page.expose_function("__reportCsp", lambda text: self.csp_violations.append(text))
        page.add_init_script(CSP_LISTENER)

    def _on_console(self, msg):
        # Chromium asks for /favicon.ico on its own and logs the 404; not the page's doing.
        if msg.type == "error" and not msg.location.get("url", "").endswith("/favicon.ico"):
            self.console_errors.append(f"{msg.text} ({msg.location.get('url')})")

    def _on_request_failed(self, request):
        # ERR_ABORTED is a request the browser itself cancelled: a download's navigation, or an
        # image a script added just before the test moved to the next page. Failures that
        # matter show as HTTP errors or other net:: codes.
        failure = request.failure or ""
        if "net::ERR_ABORTED" in failure:
            return
        self.failed_requests.append(f"{request.method} {request.url}: {failure}")

    def _on_response(self, response):
        # 286 is htmx's "stop polling"; anything 4xx/5xx on a page we drive is a bug.
        if response.status >= 400 and not response.url.endswith("/favicon.ico"):
            self.bad_responses.append(f"{response.status} {response.request.method} {response.url}")

    def problems(self):
        return {
            name: items
            for name, items in (
                ("console errors", self.console_errors),
                ("uncaught exceptions", self.page_errors),
                ("failed requests", self.failed_requests),
                ("HTTP errors", self.bad_responses),
                ("CSP violations", self.csp_violations),
            )
            if items
        }

    def assert_clean(self):
        problems = self.problems()
        assert not problems, f"the page at {self.page.url} reported problems: {problems}"

    def screenshot(self, name, full_page=True):
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        # `make screenshots` sets SCREENSHOTS_DIR: the tour's pictures (docs/screenshots/) are
        # retaken from the pages as they are today, never copied by hand.
        tour_dir = os.environ.get("SCREENSHOTS_DIR")
        if tour_dir and name in TOUR:
            shutil.copyfile(path, Path(tour_dir) / f"{name}.png")
        return path


def canvas_ink(page, selector):
    """How many pixels of the canvas are not fully transparent (0 for a blank canvas)."""
    return page.eval_on_selector(
        selector,
        """(c) => {
             const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
             let n = 0;
             for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) n++;
             return n;
           }""",
    )


def canvas_colours(page, selector):
    """The distinct opaque RGB colours drawn on the canvas (a chart with lines has several)."""
    return page.eval_on_selector(
        selector,
        """(c) => {
             const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
             const seen = new Set();
             for (let i = 0; i < d.length; i += 4)
               if (d[i + 3] === 255) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
             return seen.size;
           }""",
    )


def chart_summary(page, canvas_id):
    """What Chart.js holds for the chart on this canvas: per dataset its label, number of
    points and colour, plus how many canvas pixels are close to each dataset's colour."""
    return page.evaluate(
        """(id) => {
             const el = document.getElementById(id);
             const chart = el && window.Chart && Chart.getChart(el);
             if (!chart) return null;
             const probe = document.createElement('canvas').getContext('2d');
             const rgb = (css) => {
               probe.fillStyle = '#000'; probe.fillStyle = css;
               const h = probe.fillStyle;  // normalised to #rrggbb or rgba(...)
               if (h[0] === '#') return [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
               return h.match(/[\\d.]+/g).slice(0, 3).map(Number);
             };
             const px = el.getContext('2d').getImageData(0, 0, el.width, el.height).data;
             return chart.data.datasets.map((ds) => {
               const [r, g, b] = rgb(ds.borderColor || ds.backgroundColor);
               let near = 0;
               for (let i = 0; i < px.length; i += 4)
                 if (px[i + 3] > 128 && Math.abs(px[i] - r) + Math.abs(px[i + 1] - g)
                     + Math.abs(px[i + 2] - b) < 60) near++;
               return {label: ds.label, points: ds.data.length, colour: [r, g, b], pixels: near};
             });
           }""",
        canvas_id,
    )


def wait_for_chart(page, canvas_id, timeout=15_000):
    """Waits until Chart.js has drawn something on the canvas; returns chart_summary()."""
    page.wait_for_function(
        """(id) => {
             const el = document.getElementById(id);
             if (!el || !window.Chart || !Chart.getChart(el) || !el.width) return false;
             const d = el.getContext('2d').getImageData(0, 0, el.width, el.height).data;
             for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) return true;
             return false;
           }""",
        arg=canvas_id,
        timeout=timeout,
    )
    return chart_summary(page, canvas_id)


def log_in(page, base_url, next_path, username, password):
    """Opens next_path anonymously, which must bounce to the login page, logs in there and
    lands back on next_path."""
    page.goto(f"{base_url}{next_path}")
    assert page.url.startswith(f"{base_url}/accounts/login/"), page.url
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base_url}{next_path}")


def request_test(page, vantage, mode, duration_s, streams=1, window=""):
    """Fills the request form (already open) and submits it; returns the new permalink slug."""
    import re

    page.select_option("#id_vantage", vantage)
    page.select_option("#id_mode", mode)
    page.fill("#id_duration_s", str(duration_s))
    page.fill("#id_streams", str(streams))
    page.fill("#id_window", window)
    page.get_by_role("button", name="Start test").click()
    page.wait_for_url(re.compile(r"/m/[A-Za-z0-9_-]{12}/$"))
    return page.url.rstrip("/").rsplit("/", 1)[1]


FINISHED = "() => ['done', 'failed'].includes(document.getElementById('status').textContent.trim())"
