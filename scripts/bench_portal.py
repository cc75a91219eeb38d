#!/usr/bin/env python3
"""bench-portal: are the portal's pages and CSV export cheap at a year of data?

Run as `make bench-portal` (DATABASE_URL points at the PostgreSQL server; REDIS_URL optional).
The benchmark creates its own database (portal_bench_<pid> on the same server), never touches
the test or dev databases, and drops it at the end unless --keep-db is given.

1. COPY 100,000 measurements of one site (a year, mixed modes and outcomes, each with a full
   `result` event) plus one measurement carrying a 20 s trace at 20 ms with 4 streams.
2. Time, interleaved in one loop through Django's test Client (in-process: the whole
   middleware stack, templates and queries, no HTTP socket), the site history page, the
   permalink page and the trivial view /healthz. Report medians and page/trivial ratios
   (target <= 3x), the query count of each page, and a profile of any page that misses.
3. Grow the site to 1,000,000 measurements and stream its CSV export in a fresh subprocess,
   consuming the response chunk by chunk, and report the process's peak RSS (target < 200 MB).

A table goes to stdout and to docs/bench-portal.md.
"""
import argparse
import cProfile
import datetime as dt
import io
import json
import os
import platform
import pstats
import random
import resource
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# One database per run: two people running the benchmark at once must not drop each other's.
BENCH_DB = f"portal_bench_{os.getpid()}"
PAGE_RATIO_TARGET = 3.0
CSV_PEAK_TARGET_MB = 200.0
SITE_SLUG = "bench-site"
TRIVIAL = "/healthz (trivial)"
FLOOR = "login page (reference: template only)"


# --- database lifecycle ------------------------------------------------------------------

def bench_url(url):
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql"}:
        sys.exit(f"bench-portal needs PostgreSQL: DATABASE_URL={url!r} is not postgres://...")
    return urlunsplit(parts._replace(path="/" + BENCH_DB))


def admin_connect(url):
    import psycopg

    parts = urlsplit(url)
    return psycopg.connect(
        host=parts.hostname or "127.0.0.1", port=parts.port or 5432, user=parts.username or "postgres",
        password=parts.password or None, dbname="postgres", autocommit=True,
    )


def recreate_database(url):
    with admin_connect(url) as conn:
        # A killed run leaves its database behind: drop those whose process is gone.
        for (name,) in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'portal\\_bench\\_%'"):
            pid = name.rsplit("_", 1)[1]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{BENCH_DB}"')


def drop_database(url):
    from django.db import connections

    connections.close_all()
    with admin_connect(url) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{BENCH_DB}" WITH (FORCE)')


def setup_django(db_url):
    os.environ["DATABASE_URL"] = db_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    # Keeps the benchmark's cache entries apart from a dev server sharing the Redis.
    os.environ["CACHE_KEY_PREFIX"] = "portal-bench"
    os.environ["DEBUG"] = "0"
    import django

    django.setup()


# --- data ----------------------------------------------------------------------------------

RULES = ["paper_cwnd_stable", "paper_cwnd_stable", "paper_cwnd_stable", "ssthresh_set", "bbr_plateau",
         "paper_small_cwnd"]
FAILURES = [
    ("connect_refused", "connect to 192.0.2.10 port 5201: Connection refused"),
    ("server_busy", "the iperf3 server is running another test"),
    ("connect_timeout", "no answer from 192.0.2.10 port 5201 within 5 s"),
    ("timeout", "a read from the server missed its 5 s deadline"),
]


def fake_row(rng, created_at, mode):
    """One finished measurement as the worker would store it: columns plus the result JSON."""
    base = 940e6 * (0.85 + 0.15 * rng.random())  # a 1 Gbit/s path that is sometimes shared
    rtt = int(rng.lognormvariate(10.3, 0.15))  # ~30 ms
    duration = rng.choice([10, 10, 10, 20, 30])
    streams = rng.choice([1, 1, 1, 2, 4])
    started = created_at + dt.timedelta(seconds=rng.uniform(0.1, 3.0))
    row = dict(slug=secrets.token_urlsafe(9), mode=mode, duration_s=duration, streams=streams,
               window_bytes=None, congestion="", created_at=created_at, started_at=started,
               heartbeat_at=None, status="done", failure_code="", failure_reason="")
    if rng.random() < 0.05:
        code, reason = rng.choice(FAILURES)
        row.update(status="failed", failure_code=code, failure_reason=reason,
                   finished_at=started + dt.timedelta(seconds=rng.uniform(0.01, 5)))
        return row, None
    ss_end = rng.uniform(0.25, 0.9)
    quick_entered = mode != "full" and rng.random() > 0.03
    cumu = base * rng.uniform(0.8, 0.97)
    quick = base * rng.uniform(0.95, 1.02) if quick_entered else None
    elapsed = ss_end + 1.0 + 0.05 if (mode == "quick" and quick_entered) else float(duration) + 0.05
    sent = int(cumu * elapsed / 8)
    full = cumu if mode != "quick" else None
    estimate = int((quick or cumu) * duration / 8) if mode == "quick" else None
    rule = rng.choice(RULES) if quick_entered else None
    validate = None
    if mode == "validate":
        validate = {"quick_bps": quick, "slow_start_end_s": ss_end, "rule": rule,
                    "quick_elapsed_s": ss_end + 1.0, "quick_bytes_sent": int((quick or cumu) * (ss_end + 1) / 8),
                    "full_bps": full, "error_pct": 100 * ((quick or cumu) - full) / full}
    event = {
        "event": "result", "mode": mode, "quick_mode_entered": quick_entered,
        "quick_bps": quick, "cumulative_bps": cumu, "full_bps": full,
        "bytes_sent": sent, "bytes_acked": sent, "server_bytes": sent - rng.randrange(0, 65536),
        "elapsed_s": round(elapsed, 3), "slow_start_end_s": round(ss_end, 3) if quick_entered else None,
        "rule": rule, "quick_window_s": 1.0, "retransmits": rng.choice([0, 0, 0, 3, 17]),
        "rtt_us": rtt, "min_rtt_us": int(rtt * 0.93), "congestion": "cubic", "mss_bytes": 1448,
        "window": {"requested_bytes": None, "given_bytes": 2626560},
        "full_time_s": duration, "full_bytes_estimate": estimate,
        "time_saved_pct": round(100 * (1 - elapsed / duration), 1) if mode == "quick" else None,
        "traffic_saved_pct": round(100 * (1 - sent / estimate), 1) if estimate else None,
        "validate": validate, "interrupted": False,
        "streams": [{"id": i + 1, "bytes_sent": sent // streams, "bytes_acked": sent // streams,
                     "server_bytes": sent // streams, "retransmits": 0} for i in range(streams)],
    }
    row["finished_at"] = started + dt.timedelta(seconds=elapsed + 0.2)
    return row, event


def copy_measurements(site, vantage, user, count, seed, end):
    """COPY `count` measurements spread over the year before `end`; returns seconds taken."""
    from django.db import connection

    from portal.measure.models import Measurement
    from portal.measure.results import result_fields

    columns = [f.column for f in Measurement._meta.concrete_fields if f.column != "id"]
    fields = {f.column: f for f in Measurement._meta.concrete_fields}
    rng = random.Random(seed)
    year = 365 * 86400
    t0 = time.perf_counter()
    with connection.cursor() as cursor:
        sql = f'COPY {Measurement._meta.db_table} ({", ".join(columns)}) FROM STDIN'
        with cursor.cursor.copy(sql) as copy:
            for i in range(count):
                # Evenly spaced with jitter: a sweep every ~5 min over a year at 100,000 rows.
                created = end - dt.timedelta(seconds=year * (count - i) / count + rng.uniform(0, 60))
                roll = rng.random()
                mode = "quick" if roll < 0.85 else "full" if roll < 0.95 else "validate"
                row, event = fake_row(rng, created, mode)
                if event is not None:
                    row.update(result_fields(event))
                    row["result"] = json.dumps(event)
                row.update(site_id=site.pk, vantage_id=vantage.pk,
                           requested_by_id=user.pk if rng.random() < 0.2 else None)
                copy.write_row([row[c] if c in row else fields[c].get_default() for c in columns])
    return time.perf_counter() - t0


def trace_dict(seconds=20.0, sample_ms=20, streams=4, seed=7):
    """A realistic 4-stream trace: exponential slow-start to ~0.6 s, then a sawtooth."""
    rng = random.Random(seed)
    n = int(seconds * 1000 / sample_ms)
    t = [round((i + 1) * sample_ms / 1000, 3) for i in range(n)]
    per = []
    for sid in range(streams):
        cwnd, ssthresh, acked, retr = [], [], [], []
        total = 0
        for i, ti in enumerate(t):
            if ti < 0.6:
                c = int(14480 * 2 ** (ti / 0.06))
                s = None
            else:
                phase = (ti - 0.6) % 2.0
                c = int(900_000 * (0.7 + 0.3 * phase / 2.0) * (1 + 0.05 * rng.random()))
                s = 630_000
            total += int(c / 0.03 * sample_ms / 1000)
            cwnd.append(min(c, 1_200_000))
            ssthresh.append(s)
            acked.append(total)
            retr.append(0 if ti < 0.6 else int(ti // 2))
        per.append({"id": [1, 3, 4, 5][sid], "cwnd_bytes": cwnd, "ssthresh_bytes": ssthresh,
                    "rtt_us": [30_000 + rng.randrange(0, 3000) for _ in t], "bytes_acked": acked,
                    "total_retrans": retr})
    inst, cumu, cwnd_sum = [], [], []
    window = int(500 / sample_ms)
    for i, ti in enumerate(t):
        acked_now = sum(s["bytes_acked"][i] for s in per)
        j = max(0, i - window)
        acked_then = sum(s["bytes_acked"][j] for s in per) if i >= window else 0
        span = (ti - t[j]) if i >= window else ti
        inst.append(8 * (acked_now - acked_then) / span)
        cumu.append(8 * acked_now / ti)
        cwnd_sum.append(sum(s["cwnd_bytes"][i] for s in per))
    return {"t": t, "inst_bps": inst, "cumu_bps": cumu, "cwnd_bytes": cwnd_sum, "streams": per,
            "slow_start_end_s": 0.62}


def populate(rows, seed):
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from portal.measure.models import Measurement, MeasurementTrace, Site, Vantage
    from portal.measure.results import result_fields

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="bench-only-pw")
    vantage = Vantage.objects.create(name="bench-vantage", congestion_controls=["reno", "cubic", "bbr"],
                                     kernel=platform.release(), last_seen=timezone.now())
    site = Site.objects.create(name="Bench site", slug=SITE_SLUG, host="127.0.0.1", port=5201,
                               location="Loopback")
    # Two quieter neighbours, so site-scoped queries have something to filter out.
    for n in (1, 2):
        other = Site.objects.create(name=f"Neighbour {n}", slug=f"neighbour-{n}", host="127.0.0.1")
        copy_measurements(other, vantage, user, 2000, seed + n, timezone.now())
    end = timezone.now() - dt.timedelta(minutes=10)
    load_s = copy_measurements(site, vantage, user, rows, seed, end)
    rng = random.Random(seed)
    row, event = fake_row(rng, timezone.now() - dt.timedelta(minutes=1), "quick")
    while event is None or not event["quick_mode_entered"]:
        row, event = fake_row(rng, timezone.now() - dt.timedelta(minutes=1), "quick")
    row.update(result_fields(event))
    row.update(streams=4, duration_s=20)
    permalink = Measurement.objects.create(site=site, vantage=vantage, requested_by=user, **row)
    trace = trace_dict()
    MeasurementTrace.from_dict(permalink, trace).save()
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Measurement._meta.db_table}")
    return site, permalink, load_s, len(trace["t"])


# --- page timing ----------------------------------------------------------------------------

def make_clients(user):
    """An anonymous reader (who may be served a stored copy of a page) and a logged-in user
    (whose pages are always rendered: they carry the user's name and a CSRF token)."""
    from django.test import Client

    logged_in = Client()
    logged_in.force_login(user)
    return {"anonymous": Client(), "logged in": logged_in}


def time_pages(targets, clients, repeats, warmup=3):
    """targets: {name: (url, who)}. Returns {name: [seconds]} and {name: body bytes}."""
    timings = {name: [] for name in targets}
    sizes = {}
    for i in range(warmup + repeats):
        # Interleaved: every page sees the same background load on a shared machine.
        for name, (url, who) in targets.items():
            client = clients[who]
            t0 = time.perf_counter()
            response = client.get(url)
            body = response.content
            elapsed = time.perf_counter() - t0
            if response.status_code != 200:
                raise SystemExit(f"{name} {url}: HTTP {response.status_code}: {body[:300]!r}")
            sizes[name] = len(body)
            if i >= warmup:
                timings[name].append(elapsed)
    return timings, sizes


def query_counts(targets, clients):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    out = {}
    for name, (url, who) in targets.items():
        with CaptureQueriesContext(connection) as ctx:
            clients[who].get(url).content
        queries = sorted(ctx.captured_queries, key=lambda q: -float(q["time"]))
        out[name] = {"count": len(queries), "sql_s": sum(float(q["time"]) for q in queries),
                     "slowest": [(float(q["time"]), q["sql"][:300]) for q in queries[:3]]}
    return out


def profile_page(client, url, top=18):
    client.get(url).content
    profiler = cProfile.Profile()
    profiler.enable()
    client.get(url).content
    profiler.disable()
    buf = io.StringIO()
    stats = pstats.Stats(profiler, stream=buf)
    # Our own code and templates by cumulative time, then the hottest functions anywhere.
    stats.sort_stats("cumulative").print_stats(r"portal/|template", top)
    stats.sort_stats("tottime").print_stats(12)
    return buf.getvalue()


# --- CSV memory (runs in a fresh process) ------------------------------------------------------

def csv_child(url, buffered=False):
    """Stream the CSV through the view in this fresh process; print peak RSS as JSON.
    buffered=True keeps every chunk, as a non-streaming HttpResponse would hold the body: the
    calibration that shows this measurement does see memory grow."""
    from django.test import Client

    base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    client = Client()
    t0 = time.perf_counter()
    response = client.get(url)
    if response.status_code != 200 or not response.streaming:
        raise SystemExit(f"{url}: HTTP {response.status_code}, streaming={response.streaming}")
    lines = 0
    size = 0
    header = None
    first_row = None
    tail = b""
    kept = []
    for chunk in response.streaming_content:
        if buffered:
            kept.append(chunk)
        size += len(chunk)
        lines += chunk.count(b"\n")
        if header is None or first_row is None:
            head = (tail + chunk).split(b"\n")
            if len(head) > 2:
                header, first_row = head[0].decode(), head[1].decode()
            else:
                tail += chunk
    response.close()
    elapsed = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"lines": lines, "bytes": size, "seconds": elapsed, "base_mb": base_kb / 1024,
                      "peak_mb": peak_kb / 1024, "header": header, "first_row": first_row}))


def run_csv_child(db_url, url, buffered=False):
    env = dict(os.environ, DATABASE_URL=db_url)
    cmd = [sys.executable, __file__, "--csv-child", url] + (["--buffered"] if buffered else [])
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- report ----------------------------------------------------------------------------------

def median_ms(values):
    return 1000 * statistics.median(values)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="measurements of the site for page timing")
    parser.add_argument("--csv-rows", type=int, default=1_000_000, help="site rows for the CSV export")
    parser.add_argument("--repeats", type=int, default=50, help="timed rounds per page (after 3 warm-up)")
    parser.add_argument("--seed", type=int, default=20030404)
    parser.add_argument("--keep-db", action="store_true", help=f"leave the {BENCH_DB} database behind")
    parser.add_argument("--out", default=str(ROOT / "docs" / "bench-portal.md"))
    parser.add_argument("--calibrate", action="store_true",
                        help="also read the CSV keeping every chunk (a buffered response) to show the peak moves")
    parser.add_argument("--csv-child", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--buffered", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.csv_child:
        setup_django(os.environ["DATABASE_URL"])
        csv_child(args.csv_child, buffered=args.buffered)
        return

    source_url = os.environ.get("DATABASE_URL")
    if not source_url:
        sys.exit("DATABASE_URL is not set: run `make bench-portal`, or set DATABASE_URL=postgres://...")
    db_url = bench_url(source_url)
    if args.csv_rows < args.rows:
        sys.exit(f"--csv-rows ({args.csv_rows}) must be at least --rows ({args.rows})")
    recreate_database(source_url)
    setup_django(db_url)
    try:
        report = run(args, db_url)
    finally:
        if not args.keep_db:
            drop_database(source_url)
    print(report)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(report)
    print(f"\nwritten to {os.path.relpath(args.out, ROOT)}")


def run(args, db_url):
    from django.utils import timezone

    from portal.measure.models import Measurement

    started = time.time()
    print(f"loading {args.rows:,} measurements into {BENCH_DB} ...", flush=True)
    site, permalink, load_s, samples = populate(args.rows, args.seed)
    history_url, permalink_url = f"/sites/{site.slug}/", permalink.get_absolute_url()
    targets = {
        "site history, anonymous": (history_url, "anonymous"),
        "site history, logged in": (history_url, "logged in"),
        "permalink, anonymous": (permalink_url, "anonymous"),
        "permalink, logged in": (permalink_url, "logged in"),
        # The floor for any rendered page: a template, a CSRF token, no query of ours.
        FLOOR: ("/accounts/login/", "anonymous"),
        TRIVIAL: ("/healthz", "anonymous"),
    }
    clients = make_clients(permalink.requested_by)
    print(f"loaded in {load_s:.1f} s; timing pages ({args.repeats} interleaved rounds) ...", flush=True)
    timings, sizes = time_pages(targets, clients, args.repeats)
    queries = query_counts(targets, clients)
    trivial = median_ms(timings[TRIVIAL])
    page_rows = []
    misses = []
    for name, (url, who) in targets.items():
        med = median_ms(timings[name])
        ratio = med / trivial
        page_rows.append((name, url, med, ratio, sizes[name], queries[name]))
        if name not in (TRIVIAL, FLOOR) and ratio > PAGE_RATIO_TARGET:
            misses.append(name)

    profiles = {name: profile_page(clients[targets[name][1]], targets[name][0]) for name in misses}

    extra = args.csv_rows - args.rows
    if extra > 0:
        print(f"growing the site to {args.csv_rows:,} measurements ...", flush=True)
        end = Measurement.objects.filter(site=site).order_by("created_at").first().created_at
        # Older rows, so the year's history shown above stays what it was.
        copy_measurements(site, permalink.vantage, permalink.requested_by, extra, args.seed + 99,
                          end - dt.timedelta(seconds=1))
    site_total = Measurement.objects.filter(site=site).count()
    print(f"streaming the CSV of {site_total:,} rows in a fresh process ...", flush=True)
    csv_url = f"/sites/{site.slug}/measurements.csv"
    csv = run_csv_child(db_url, csv_url)
    csv_ok = csv["lines"] == site_total + 1
    buffered = None
    if args.calibrate:
        print("calibration: the same CSV with every chunk kept ...", flush=True)
        buffered = run_csv_child(db_url, csv_url, buffered=True)

    lines = [
        "# bench-portal",
        "",
        f"Run {timezone.now():%Y-%m-%d %H:%M} UTC on {platform.node()} ({os.cpu_count()} cores, shared), "
        f"Python {platform.python_version()}, PostgreSQL database `{BENCH_DB}` (created and dropped by the run). "
        f"Command: `make bench-portal` (`scripts/bench_portal.py --rows {args.rows} --csv-rows {args.csv_rows} "
        f"--repeats {args.repeats}{' --calibrate' if args.calibrate else ''}`). Total run time {time.time() - started:.0f} s.",
        "",
        f"Data: {args.rows:,} measurements of one site over a year (85% quick, 10% full, 5% validate; "
        f"5% failed; each with its `result` JSON) loaded by COPY in {load_s:.1f} s, two neighbour sites with "
        f"2,000 each, and one permalink measurement with a {samples * 20 / 1000:.0f} s trace at 20 ms "
        f"with 4 streams ({samples} samples).",
        "",
        "## Pages vs the trivial view",
        "",
        f"Django's test Client in-process (full middleware, sessions, templates, PostgreSQL queries, "
        f"the Django cache on Redis when REDIS_URL is set; no HTTP socket). {args.repeats} interleaved "
        f"rounds after 3 warm-up rounds; medians. \"anonymous\" readers may be served a stored copy of the "
        f"page after the first request; \"logged in\" pages are rendered every time (session and user "
        f"queries included). Target: page / trivial <= {PAGE_RATIO_TARGET:.0f}x.",
        "",
        "| page | URL | median ms | p90 ms | / trivial | body KB | queries | SQL ms | target |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, url, med, ratio, size, q in page_rows:
        p90 = 1000 * statistics.quantiles(timings[name], n=10)[-1] if len(timings[name]) > 1 else med
        verdict = "" if name in (TRIVIAL, FLOOR) else ("ok" if ratio <= PAGE_RATIO_TARGET else "**MISS**")
        lines.append(f"| {name} | `{url}` | {med:.2f} | {p90:.2f} | {ratio:.1f}x | {size / 1024:.1f} | "
                     f"{q['count']} | {1000 * q['sql_s']:.1f} | {verdict} |")
    ratios = {name: ratio for name, _url, _med, ratio, _size, _q in page_rows}
    floor = ratios[FLOOR]
    lines += [
        "",
        f"Reading: the login page, one template with a CSRF token and no query of ours, costs "
        f"{floor:.1f}x the trivial view in this run, so a {PAGE_RATIO_TARGET:.0f}x target can only be met by "
        f"pages that skip rendering (stored copies). Logged-in pages, always rendered, cost "
        + ", ".join(f"{name} {ratios[name] / floor:.1f}x" for name in ratios if name.endswith("logged in"))
        + " the login page.",
    ]
    for name in misses:
        lines += ["", f"### Why {name} misses", "", "Slowest queries (seconds, SQL):", ""]
        lines += [f"- {sec:.4f} s: `{sql}`" for sec, sql in queries[name]["slowest"]]
        lines += ["", "Profile of one request (cumulative):", "", "```", profiles[name].strip(), "```"]
    lines += [
        "",
        "## CSV export memory",
        "",
        f"`{csv_url}` ({site_total:,} rows) through the streaming view in a fresh Python process "
        f"(Django test Client, response consumed chunk by chunk); peak RSS from getrusage(ru_maxrss). "
        f"Target: peak < {CSV_PEAK_TARGET_MB:.0f} MB.",
        "",
        "| how the response is read | rows | CSV MB | seconds | RSS after setup MB | peak RSS MB | target |",
        "|---|---:|---:|---:|---:|---:|---|",
        f"| streamed, chunk by chunk | {csv['lines'] - 1:,} | {csv['bytes'] / 1e6:.1f} | {csv['seconds']:.1f} | "
        f"{csv['base_mb']:.1f} | {csv['peak_mb']:.1f} | {'ok' if csv['peak_mb'] < CSV_PEAK_TARGET_MB else '**MISS**'} |",
    ]
    if buffered is not None:
        lines.append(
            f"| calibration: every chunk kept (a buffered response) | {buffered['lines'] - 1:,} | "
            f"{buffered['bytes'] / 1e6:.1f} | {buffered['seconds']:.1f} | {buffered['base_mb']:.1f} | "
            f"{buffered['peak_mb']:.1f} | (shows the measurement sees memory) |")
    lines += [
        "",
        f"Line count {'matches' if csv_ok else 'DOES NOT match'} the rows + header "
        f"({csv['lines']:,} lines for {site_total:,} rows). Header: `{csv['header']}`",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
