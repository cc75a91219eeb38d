#!/usr/bin/env python3
"""bench-sweep: does one sweep run over 1,000 sites plan and queue like plain Celery?

Run as `make bench-sweep` (DATABASE_URL: the PostgreSQL server; REDIS_URL: the broker), under
`flock /work/bench.lock` on shared machines. The benchmark makes its own database
(portal_bsweep_<pid>, dropped at the end) and its own queues (named after its pid).

1. 1,000 sites pointed at a pool of local `iperf3 -s` servers, one vantage, one sweep.
2. Interleaved rounds: fire one sweep run (plan 1,000 cells, create their measurements, send
   their tasks once committed) vs send 1,000 no-op Celery tasks to a queue no one reads.
   Reported: median times and their ratio (target <= 2x), SQL queries per run at 100 and at
   1,000 sites (must be the same), and the broker's queue length after a run (= cells).
3. One more run, executed by a real worker (make run's, one test at a time): every cell but a sample is cancelled
   first (as the admin's cancel does), so the worker takes all 1,000 messages, runs the sample
   for real against the iperf3 pool and finds the rest cancelled. Reported: cells in each final
   state, cells lost (not final; target 0), messages left on the broker.
4. Request -> prober start on the idle worker: single measurements requested one after the
   other through the request path (the API's); started_at (the claim, just before the prober
   is spawned) minus created_at. Median and max (target median <= 200 ms).

A table goes to stdout and to docs/bench-sweep.md.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from benchdb import Scratch  # noqa: E402

from portal import launch  # noqa: E402

SCRATCH = Scratch("portal_bsweep", "bench-sweep")
VANTAGE = f"bsweep-{os.getpid()}"
NOOP_QUEUE = f"bench-sweep-noop-{os.getpid()}"
RATIO_TARGET = 2.0
LATENCY_TARGET_MS = 200.0


def setup_django(db_url):
    os.environ.update(
        DATABASE_URL=db_url,
        DJANGO_SETTINGS_MODULE="portal.settings",
        DEBUG="0",
        CACHE_KEY_PREFIX=f"portal-bsweep-{os.getpid()}",
        ALLOW_PRIVATE_SITE_HOSTS="1",
        VANTAGE_NAME=VANTAGE,
    )
    import django

    django.setup()


def start_iperf_pool(count):
    from tests import servers

    procs, ports = [], []
    for _ in range(count):
        port = servers.free_port()
        procs.append(
            subprocess.Popen(
                ["iperf3", "-s", "-B", "127.0.0.1", "-p", str(port)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        ports.append(port)
    for port in ports:
        servers.wait_until(lambda p=port: servers.listening(p), 10, f"iperf3 -s on {port}")
    return procs, ports


def populate(sites, ports):
    from django.core.management import call_command
    from django.utils import timezone

    from portal.measure.models import Site, Vantage
    from portal.sweeps.forms import SweepForm

    call_command("migrate", verbosity=0)
    Site.objects.bulk_create(
        [
            Site(name=f"Bench site {i:04d}", slug=f"bench-{i:04d}", host="127.0.0.1", port=ports[i % len(ports)])
            for i in range(sites)
        ]
    )
    Vantage.objects.create(name=VANTAGE, congestion_controls=["reno", "cubic", "bbr"], last_seen=timezone.now())
    forms = {}
    for name, chosen in (
        ("all", None),
        ("hundred", list(Site.objects.order_by("slug").values_list("pk", flat=True)[:100])),
    ):
        form = SweepForm(
            data={
                "name": f"bench-{name}",
                "enabled": True,
                "all_sites": chosen is None,
                "sites": chosen or [],
                "all_vantages": True,
                "modes_text": "quick",
                "windows_text": "default",
                "streams_text": "1",
                "congestion_text": "default",
                "duration_s": 5,
            }
        )
        assert form.is_valid(), form.errors
        forms[name] = form.save()
    return forms["all"], forms["hundred"]


def clear_pending(redis_client):
    """Ends a timed round: its rows stop being `pending` for the next run, queues emptied."""
    from django.utils import timezone

    from portal.measure.models import Measurement, Vantage

    Measurement.objects.filter(status="queued").update(
        status="failed", failure_code="cancelled", failure_reason="bench-sweep round over"
    )
    Vantage.objects.update(last_seen=timezone.now())
    redis_client.delete(f"vantage.{VANTAGE}", NOOP_QUEUE)


def fire_timed(sweep):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from portal.sweeps import planning

    with CaptureQueriesContext(connection) as ctx:
        started = time.perf_counter()
        run = planning.fire(sweep.pk, trigger="command")
        elapsed = time.perf_counter() - started
    return run, elapsed, len(ctx.captured_queries)


def noop_timed(count):
    from portal.celery import app

    started = time.perf_counter()
    for _ in range(count):
        app.send_task("bench.noop", queue=NOOP_QUEUE)
    return time.perf_counter() - started


def start_worker(db_url):
    log = ROOT / "test-artifacts" / f"bench-sweep-worker-{os.getpid()}.log"
    log.parent.mkdir(exist_ok=True)
    env = dict(os.environ, DATABASE_URL=db_url, PYTHONUNBUFFERED="1")
    with open(log, "w") as out:
        proc = subprocess.Popen(
            # make run's command line (portal/launch.py): the vantage's default, one at a time.
            launch.vantage_worker(VANTAGE, loglevel="WARNING"),
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return proc, log


def wait_final(run, timeout):
    from portal.sweeps.summary import run_totals

    deadline = time.monotonic() + timeout
    totals = run_totals(run)
    while not totals.finished and time.monotonic() < deadline:
        time.sleep(1)
        totals = run_totals(run)
    return totals


def execute_sample(sweep, sample, redis_client, db_url, timeout):
    from portal.measure.models import Measurement
    from portal.sweeps.models import SweepCell
    from tests import servers

    run, _, _ = fire_timed(sweep)
    cells = list(SweepCell.objects.filter(run=run).order_by("site__slug").values_list("measurement_id", flat=True))
    on_broker = redis_client.llen(f"vantage.{VANTAGE}")
    keep = set(cells[:: max(1, len(cells) // sample)][:sample])
    Measurement.objects.filter(pk__in=set(cells) - keep).update(
        status="failed", failure_code="cancelled", failure_reason="bench-sweep: not in the executed sample"
    )
    proc, log = start_worker(db_url)
    try:
        totals = wait_final(run, timeout)
        servers.wait_until(
            lambda: redis_client.llen(f"vantage.{VANTAGE}") == 0, 60, "the worker to drain its queue", proc, log
        )
        left = redis_client.llen(f"vantage.{VANTAGE}")
        latencies = request_latencies(sweep, 15)
    finally:
        servers.stop(proc)
    return run, len(cells), on_broker, len(keep), totals, left, latencies


def request_latencies(sweep, count):
    """Single requests through the API's path on the idle worker, one after the other."""
    from portal.measure.dispatch import request_measurement
    from portal.measure.models import Measurement, Site

    latencies = []
    sites = list(Site.objects.order_by("-slug").values_list("slug", flat=True)[:count])
    for slug in sites:
        m = request_measurement({"site": slug, "vantage": VANTAGE, "mode": "quick", "duration_s": "5"}, None)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            row = Measurement.objects.filter(pk=m.pk).values("status", "created_at", "started_at").get()
            if row["status"] in ("done", "failed"):
                break
            time.sleep(0.05)
        if row["started_at"] is not None:
            latencies.append((row["started_at"] - row["created_at"]).total_seconds())
    return latencies


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=1000)
    parser.add_argument("--pool", type=int, default=8, help="local iperf3 -s servers the sites point at")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved timed rounds")
    parser.add_argument("--sample", type=int, default=40, help="cells executed for real by the worker")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--out", default=str(ROOT / "docs" / "bench-sweep.md"))
    args = parser.parse_args()
    source_url, redis_url = os.environ.get("DATABASE_URL"), os.environ.get("REDIS_URL")
    if not source_url or not redis_url:
        sys.exit("DATABASE_URL and REDIS_URL must be set: run `make bench-sweep`")
    db_url = SCRATCH.url(source_url)
    SCRATCH.create(source_url)
    setup_django(db_url)
    pool, ports = start_iperf_pool(args.pool)
    try:
        report = run(args, db_url, ports)
    finally:
        from tests import servers

        for proc in pool:
            servers.stop(proc)
        SCRATCH.drop(source_url)
    print(report)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(report)
    print(f"\nwritten to {os.path.relpath(args.out, ROOT)}")


def run(args, db_url, ports):
    import redis

    started = time.time()
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    sweep, hundred = populate(args.sites, ports)
    fire_s, noop_s, queries = [], [], []
    print(f"{args.rounds} interleaved rounds: sweep run of {args.sites} cells vs {args.sites} no-op tasks", flush=True)
    for i in range(args.rounds + 1):  # round 0 warms caches and connections, not reported
        run_, elapsed, count = fire_timed(sweep)
        cells = run_.cells.count()
        on_broker = client.llen(f"vantage.{VANTAGE}")
        assert cells == args.sites and on_broker == cells, (cells, on_broker)
        noop = noop_timed(cells)
        clear_pending(client)
        if i:
            fire_s.append(elapsed)
            noop_s.append(noop)
            queries.append(count)
        print(f"  round {i}: sweep {elapsed * 1000:.0f} ms ({count} queries), no-op {noop * 1000:.0f} ms", flush=True)
    _, _, hundred_queries = fire_timed(hundred)
    clear_pending(client)
    print(f"executing a sample of {args.sample} cells with a real worker ...", flush=True)
    _, planned, on_broker, sample, totals, left, latencies = execute_sample(
        sweep, args.sample, client, db_url, args.timeout
    )
    return report(
        args,
        fire_s,
        noop_s,
        queries,
        hundred_queries,
        planned,
        on_broker,
        sample,
        totals,
        left,
        latencies,
        time.time() - started,
    )


def report(args, fire_s, noop_s, queries, hundred_queries, planned, on_broker, sample, totals, left, latencies, wall_s):
    fire_med, noop_med = statistics.median(fire_s), statistics.median(noop_s)
    ratio = fire_med / noop_med
    lat_med = 1000 * statistics.median(latencies) if latencies else float("nan")
    lost = planned - sum(totals.counts[s] for s in ("done", "failed", "skipped"))
    c = totals.counts
    verdict = lambda ok: "met" if ok else "**missed**"  # noqa: E731
    lines = [
        "# bench-sweep: one sweep run over 1,000 sites",
        "",
        f"`make bench-sweep` on {platform.node()} ({os.cpu_count()} cores, shared), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{wall_s:.0f} s in all. {args.sites} sites on a pool of {args.pool} local `iperf3 -s`, one vantage, one "
        f"sweep of 1 setting (quick, 5 s limit): {args.sites} cells per run. PostgreSQL and Redis on this host.",
        "",
        "| figure | value | target |",
        "|---|---|---|",
        f"| plan + queue one run of {args.sites} cells (median of {len(fire_s)}) | {fire_med * 1000:.0f} ms | |",
        f"| send {args.sites} no-op Celery tasks (median, interleaved) | {noop_med * 1000:.0f} ms | |",
        f"| ratio of the medians | **{ratio:.2f}x** (per round: {', '.join(f'{f / n:.2f}' for f, n in zip(fire_s, noop_s))}; "
        f"their median {statistics.median(f / n for f, n in zip(fire_s, noop_s)):.2f}x) "
        f"| <= {RATIO_TARGET:g}x: {verdict(ratio <= RATIO_TARGET)} |",
        f"| SQL queries per run, {args.sites} sites (every round) | {', '.join(map(str, sorted(set(queries))))} "
        "| constant |",
        f"| SQL queries per run, 100 sites | {hundred_queries} | {verdict(set(queries) == {hundred_queries})} |",
        f"| messages on the broker after a run | {on_broker} of {planned} cells | = cells |",
        f"| cells executed for real by the worker | {sample} (the other {planned - sample} cancelled before the "
        "worker started; it still took their messages) | |",
        f"| final states | done {c['done']}, failed {c['failed']}, skipped {c['skipped']} (cancelled count as skipped) | |",
        f"| cells lost (not final after the worker drained) | **{lost}**; messages left on the broker: {left} "
        f"| 0: {verdict(lost == 0 and left == 0)} |",
        f"| request -> prober start, idle worker ({len(latencies)} requests) | median **{lat_med:.0f} ms**, "
        f"max {1000 * max(latencies, default=float('nan')):.0f} ms | <= {LATENCY_TARGET_MS:g} ms: "
        f"{verdict(lat_med <= LATENCY_TARGET_MS)} |",
        "",
        "How: each round fires the sweep (`planning.fire`, as `manage.py sweep run` does: one transaction plans "
        "the cells, bulk-inserts measurements and cells, and on commit publishes every task), then publishes the "
        "same number of no-op tasks with `app.send_task` to a queue nobody reads; then both queues are emptied and "
        "the round's rows cancelled so the next run is not skipped as `pending`. Queries are counted with "
        "Django's CaptureQueriesContext around the whole firing. Request -> prober start is `started_at - "
        "created_at` of single requests made through `dispatch.request_measurement` (the API's path) while the "
        "worker is idle; `started_at` is set when the worker claims the row, just before it spawns the prober.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
