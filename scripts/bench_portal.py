#!/usr/bin/env python3
"""bench-portal: the pages as users feel them, at a year of data (issue 10 item 2).

Run as `make bench-portal` (DATABASE_URL points at the PostgreSQL server, REDIS_URL at Redis;
under `flock /work/bench.lock` on shared machines). It creates its own database
(portal_bench_<pid> on the same server) and drops it at the end unless --keep-db is given;
--db NAME reuses a kept one (the data loading is then skipped).

1. COPY 100,000 measurements of one site (a year, mixed modes and outcomes, each with a full
   `result` event) plus one measurement carrying a 20 s trace at 20 ms with 4 streams.
2. Serve the portal with gunicorn (as `make run` does: 2 workers x 4 threads) and read
   /healthz, the site page, the path page (?vantage=) and the 20 s x 4-stream permalink with
   10 concurrent keep-alive clients (scripts/httpload.py, locust), anonymous and logged in,
   all interleaved in one run; then with one client alone (each page's own cost). Halfway, a new result is stored through the worker's own code
   (runner.claim + runner.store_result); every page read sent after its commit must show it
   (the site and path pages list its slug; the permalink clients move to the new result's
   permalink, which must say done): any that does not is a stale read.
3. Grow the site to 1,000,000 measurements and stream its CSV export in a fresh process,
   reporting the peak RSS (target < 200 MB).

This script measures and writes the figures as JSON (docs/bench-portal.json);
scripts/bench_portal_report.py turns them into docs/bench-portal.md (also run at the end).
"""

import argparse
import datetime as dt
import json
import os
import platform
import random
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts import bench_portal_report, benchdb, httpload, ports  # noqa: E402

# One database per run: two people running the benchmark at once must not drop each other's.
SCRATCH = benchdb.Scratch("portal_bench", "bench-portal")
SITE_SLUG = "bench-site"
VANTAGE = "bench-vantage"
USERS = 10


# --- database lifecycle ------------------------------------------------------------------


def setup_django(db_url):
    os.environ["DATABASE_URL"] = db_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    # Keeps the benchmark's cache entries apart from a dev server sharing the Redis.
    os.environ["CACHE_KEY_PREFIX"] = f"portal-bench-{os.getpid()}"
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("SECRET_KEY", "bench-only-" + secrets.token_urlsafe(50))
    import django

    django.setup()


# --- data ----------------------------------------------------------------------------------

RULES = [
    "paper_cwnd_stable",
    "paper_cwnd_stable",
    "paper_cwnd_stable",
    "ssthresh_set",
    "bbr_plateau",
    "paper_small_cwnd",
]
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
    row = dict(
        slug=secrets.token_urlsafe(9),
        mode=mode,
        duration_s=duration,
        streams=streams,
        window_bytes=None,
        congestion="",
        created_at=created_at,
        started_at=started,
        heartbeat_at=None,
        status="done",
        failure_code="",
        failure_reason="",
    )
    if rng.random() < 0.05:
        code, reason = rng.choice(FAILURES)
        row.update(
            status="failed",
            failure_code=code,
            failure_reason=reason,
            finished_at=started + dt.timedelta(seconds=rng.uniform(0.01, 5)),
        )
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
        validate = {
            "quick_bps": quick,
            "slow_start_end_s": ss_end,
            "rule": rule,
            "quick_elapsed_s": ss_end + 1.0,
            "quick_bytes_sent": int((quick or cumu) * (ss_end + 1) / 8),
            "full_bps": full,
            "error_pct": 100 * ((quick or cumu) - full) / full,
        }
    event = {
        "event": "result",
        "mode": mode,
        "quick_mode_entered": quick_entered,
        "quick_bps": quick,
        "cumulative_bps": cumu,
        "full_bps": full,
        "bytes_sent": sent,
        "bytes_acked": sent,
        "server_bytes": sent - rng.randrange(0, 65536),
        "elapsed_s": round(elapsed, 3),
        "slow_start_end_s": round(ss_end, 3) if quick_entered else None,
        "rule": rule,
        "quick_window_s": 1.0,
        "retransmits": rng.choice([0, 0, 0, 3, 17]),
        "rtt_us": rtt,
        "min_rtt_us": int(rtt * 0.93),
        "congestion": "cubic",
        "mss_bytes": 1448,
        "window": {"requested_bytes": None, "given_bytes": 2626560},
        "full_time_s": duration,
        "full_bytes_estimate": estimate,
        "time_saved_pct": round(100 * (1 - elapsed / duration), 1) if mode == "quick" else None,
        "traffic_saved_pct": round(100 * (1 - sent / estimate), 1) if estimate else None,
        "validate": validate,
        "interrupted": False,
        "streams": [
            {
                "id": i + 1,
                "bytes_sent": sent // streams,
                "bytes_acked": sent // streams,
                "server_bytes": sent // streams,
                "retransmits": 0,
            }
            for i in range(streams)
        ],
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
        sql = f"COPY {Measurement._meta.db_table} ({', '.join(columns)}) FROM STDIN"
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
                row.update(
                    site_id=site.pk, vantage_id=vantage.pk, requested_by_id=user.pk if rng.random() < 0.2 else None
                )
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
        per.append(
            {
                "id": [1, 3, 4, 5][sid],
                "cwnd_bytes": cwnd,
                "ssthresh_bytes": ssthresh,
                "rtt_us": [30_000 + rng.randrange(0, 3000) for _ in t],
                "bytes_acked": acked,
                "total_retrans": retr,
            }
        )
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
    return {
        "t": t,
        "inst_bps": inst,
        "cumu_bps": cumu,
        "cwnd_bytes": cwnd_sum,
        "streams": per,
        "slow_start_end_s": 0.62,
    }


def populate(rows, seed):
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from portal.measure.models import Measurement, MeasurementTrace, Site, Vantage
    from portal.measure.results import result_fields

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="bench-only-pw")
    vantage = Vantage.objects.create(
        name=VANTAGE, congestion_controls=["reno", "cubic", "bbr"], kernel=platform.release(), last_seen=timezone.now()
    )
    site = Site.objects.create(name="Bench site", slug=SITE_SLUG, host="127.0.0.1", port=5201, location="Loopback")
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


# --- serving and reading pages -------------------------------------------------------------


def start_gunicorn(db_url, log_path):
    """The portal as `make run` serves it; returns (process, base URL) once it listens."""
    port = ports.free_port()
    env = dict(os.environ, DATABASE_URL=db_url)
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "portal.wsgi",
            "-b",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "4",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    ports.wait_listening(port, 60, "gunicorn", proc, Path(log_path))
    return proc, f"http://127.0.0.1:{port}"


def stop(proc):
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def session_cookie(user):
    from django.conf import settings
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def store_new_result(site, vantage, user, seed):
    """A new 20 s x 4-stream result, stored by the worker's own functions; returns its slug."""
    from portal.measure import runner
    from portal.measure.models import Measurement

    rng = random.Random(seed)
    row, event = fake_row(rng, dt.datetime.now(dt.timezone.utc), "quick")
    while event is None or not event["quick_mode_entered"]:
        row, event = fake_row(rng, dt.datetime.now(dt.timezone.utc), "quick")
    m = Measurement.objects.create(
        site=site, vantage=vantage, requested_by=user, mode="quick", duration_s=20, streams=4
    )
    assert runner.claim(m.pk)
    assert runner.store_result(m.pk, event, trace_dict(seed=seed))
    return m.slug


def page_targets(site, permalink, cookie):
    """What the clients read, each anonymous and logged in. After the mid-run result the pages
    must show it: the site and path pages list its permalink; the permalink readers move on to
    the new result's page, which must say it is done."""
    listed = {"expect": "/m/{slug}/"}
    done = {"path": "/m/{slug}/", "expect": '<code>{slug}</code> · <span class="badge done" id="status">done</span>'}
    pages = [
        ("site page", f"/sites/{site.slug}/", listed),
        ("path page", f"/sites/{site.slug}/?vantage={VANTAGE}", listed),
        ("permalink 20 s x 4", permalink.get_absolute_url(), done),
    ]
    targets = [{"name": "healthz", "path": "/healthz"}]
    for name, path, after in pages:
        targets.append({"name": f"{name}, anonymous", "path": path, "after_marker": after})
        targets.append({"name": f"{name}, logged in", "path": path, "after_marker": after, "cookie": cookie})
    return targets


def measure_pages(args, db_url, site, permalink):
    """Runs the load against gunicorn; halfway through, stores a new result and tells the
    clients. Then one client alone reads the same pages: with ten the server is saturated and
    every read, /healthz too, waits in its queue, so the lone client shows each page's own cost.
    Returns httpload's results (the ten clients', with the new result's slug, and "single")."""
    from django.db import connections

    targets = page_targets(site, permalink, session_cookie(permalink.requested_by))
    connections.close_all()  # gunicorn's workers fork from a clean process; ours reconnects later
    with tempfile.TemporaryDirectory() as tmp:
        proc, base_url = start_gunicorn(db_url, Path(tmp) / "gunicorn.log")
        marker = Path(tmp) / "marker.json"
        spec = {
            "base_url": base_url,
            "users": USERS,
            "seconds": args.seconds,
            "warmup_s": args.warmup,
            "targets": targets,
            "marker_file": str(marker),
        }
        try:
            (Path(tmp) / "spec.json").write_text(json.dumps(spec))
            load = httpload.start(Path(tmp) / "spec.json")
            time.sleep(args.warmup + args.seconds / 2)
            slug = store_new_result(site, permalink.vantage, permalink.requested_by, args.seed + 1)
            marker.write_text(json.dumps({"slug": slug, "committed_at": time.monotonic()}))
            result = httpload.finish(load, args.seconds + 120)
            single = dict(spec, users=1, seconds=args.single_seconds, warmup_s=1, marker_file=None)
            result["single"] = httpload.run(single, Path(tmp) / "single.json")
        finally:
            stop(proc)
    result["new_result"] = slug
    return result


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
    print(
        json.dumps(
            {
                "lines": lines,
                "bytes": size,
                "seconds": elapsed,
                "base_mb": base_kb / 1024,
                "peak_mb": peak_kb / 1024,
                "header": header,
                "first_row": first_row,
            }
        )
    )


def run_csv_child(db_url, url, buffered=False):
    env = dict(os.environ, DATABASE_URL=db_url)
    cmd = [sys.executable, __file__, "--csv-child", url] + (["--buffered"] if buffered else [])
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- the run --------------------------------------------------------------------------------


def find_data():
    """The site and its 20 s x 4-stream permalink in a database a previous run kept."""
    from portal.measure.models import Measurement, Site

    site = Site.objects.get(slug=SITE_SLUG)
    permalink = (
        Measurement.objects.filter(site=site, streams=4, duration_s=20, trace__isnull=False)
        .select_related("vantage", "requested_by")
        .order_by("created_at")
        .first()
    )
    return site, permalink


def run(args, db_url):
    from django.utils import timezone

    from portal.measure.models import Measurement

    started = time.time()
    figures = {
        "when": f"{timezone.now():%Y-%m-%d %H:%M} UTC",
        "host": platform.node(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "database": db_url.rsplit("/", 1)[1],
        "argv": " ".join(sys.argv[1:]),
        "rows": args.rows,
        "users": USERS,
        "seconds": args.seconds,
    }
    if args.db:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)  # a kept database may predate the code
        site, permalink = find_data()
    else:
        print(f"loading {args.rows:,} measurements into {SCRATCH.name} ...", flush=True)
        site, permalink, figures["load_s"], _ = populate(args.rows, args.seed)
    figures["site_rows"] = Measurement.objects.filter(site=site).count()
    figures["trace_samples"] = permalink.trace.sample_count
    print(f"reading pages through gunicorn: {USERS} clients, {args.seconds} s ...", flush=True)
    figures["pages"] = measure_pages(args, db_url, site, permalink)
    if args.csv_rows:
        figures["csv"] = measure_csv(args, db_url, site, permalink)
    figures["total_s"] = time.time() - started
    return figures


def measure_csv(args, db_url, site, permalink):
    from portal.measure.models import Measurement

    extra = args.csv_rows - Measurement.objects.filter(site=site).count()
    if extra > 0:
        print(f"growing the site to {args.csv_rows:,} measurements ...", flush=True)
        end = Measurement.objects.filter(site=site).order_by("created_at").first().created_at
        # Older rows, so the year's history shown above stays what it was.
        copy_measurements(
            site, permalink.vantage, permalink.requested_by, extra, args.seed + 99, end - dt.timedelta(seconds=1)
        )
    rows = Measurement.objects.filter(site=site).count()
    print(f"streaming the CSV of {rows:,} rows in a fresh process ...", flush=True)
    url = f"/sites/{site.slug}/measurements.csv"
    csv = run_csv_child(db_url, url)
    csv.update(url=url, rows=rows)
    if args.calibrate:
        csv["buffered"] = run_csv_child(db_url, url, buffered=True)
    return csv


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="measurements of the site for the pages")
    parser.add_argument("--seconds", type=float, default=60, help="measured seconds of page reading")
    parser.add_argument("--warmup", type=float, default=5, help="seconds of reading before measuring")
    parser.add_argument("--single-seconds", type=float, default=20, help="seconds of one client reading alone")
    parser.add_argument("--csv-rows", type=int, default=1_000_000, help="site rows for the CSV export (0: skip)")
    parser.add_argument("--seed", type=int, default=20030404)
    parser.add_argument("--db", help="reuse this database (kept by an earlier --keep-db run) instead of loading")
    parser.add_argument("--keep-db", action="store_true", help="leave the database behind")
    parser.add_argument("--out", default=str(ROOT / "docs" / "bench-portal.md"))
    parser.add_argument(
        "--calibrate",
        action="store_true",
        help="also read the CSV keeping every chunk (a buffered response) to show the peak moves",
    )
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
    if args.db:
        SCRATCH.name = args.db
        args.keep_db = True
    elif args.csv_rows and args.csv_rows < args.rows:
        sys.exit(f"--csv-rows ({args.csv_rows}) must be at least --rows ({args.rows})")
    db_url = SCRATCH.url(source_url)
    if not args.db:
        SCRATCH.create(source_url)
    setup_django(db_url)
    try:
        figures = run(args, db_url)
    finally:
        if not args.keep_db:
            SCRATCH.drop(source_url)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(figures, indent=1))
    report = bench_portal_report.render(figures)
    out.write_text(report)
    print(report)
    print(f"\nwritten to {os.path.relpath(out, ROOT)} (figures: {os.path.relpath(out.with_suffix('.json'), ROOT)})")


if __name__ == "__main__":
    main()
