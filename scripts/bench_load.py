#!/usr/bin/env python3
"""bench-load: 50 concurrent users for 5 minutes through nginx, against 100,000 measurements.

Run as `make bench-load` (DATABASE_URL names the PostgreSQL server, REDIS_URL the Redis; run it
under `flock /work/bench.lock` on shared machines). Like bench-portal it makes its own database
(portal_bench_<pid>, filled by bench_portal.populate) and drops it at the end.

The topology is docker-compose's on loopback: gunicorn (3 workers x 4 threads) behind nginx
with the repo's deploy/nginx/portal.conf.template, a vantage worker, the housekeeping worker and
beat as separate processes, and stock `iperf3 -s` targets. Locust (scripts/locust_load.py)
runs USERS users: the site page, permalinks, the sites overview, a week of CSV, API reads and,
once per user, a 2 s quick test (within the per-user quotas). Every response time is recorded;
the report gives errors (target 0) and the p95 of the site page and the permalink as a ratio to
/healthz's p95 in the same run. A table goes to stdout and to docs/bench-load.md.
"""

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import bench_portal  # noqa: E402 - the shared database lifecycle and data of the portal benchmarks

from portal import launch  # noqa: E402
from tests import servers  # noqa: E402
from tests.faults import proxy  # noqa: E402 - nginx with the repo's config on spare ports

VANTAGE = "bench-vantage"
TEST_SITES = 2


def percentile(values, q):
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


class Stack:
    """The processes of one run; stop() ends them all, newest first."""

    def __init__(self, workdir, env):
        self.dir, self.env, self.procs = Path(workdir), env, []

    def start(self, name, cmd, ready=None):
        log = self.dir / f"{name}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(
                cmd,
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.procs.append(proc)
        if ready is not None:
            servers.wait_until(ready, 60, name, proc, log)
        return proc

    def stop(self):
        for proc in reversed(self.procs):
            servers.stop(proc, timeout=20)


def prepare(rows, seed, users):
    from portal.measure.models import ApiToken, Measurement, Site
    from tests import factories

    site, _permalink, _load_s, _samples = bench_portal.populate(rows, seed)
    slugs = list(
        Measurement.objects.filter(site=site, status="done").order_by("?").values_list("slug", flat=True)[:500]
    )
    tokens = [ApiToken.issue(factories.make_user(f"load{n}")) for n in range(users)]
    ports = []
    for n, other in enumerate(Site.objects.exclude(pk=site.pk).order_by("slug")[:TEST_SITES]):
        ports.append(servers.free_port())
        other.port = ports[-1]
        other.save(update_fields=["port"])
    until = dt.date.today() - dt.timedelta(days=1)
    return {
        "site": site.slug,
        "slugs": slugs,
        "tokens": tokens,
        "vantage": VANTAGE,
        "test_sites": list(
            Site.objects.exclude(pk=site.pk).order_by("slug").values_list("slug", flat=True)[:TEST_SITES]
        ),
        "csv_since": (until - dt.timedelta(days=6)).isoformat(),
        "csv_until": until.isoformat(),
    }, ports


def start_stack(stack, ports, workdir):
    py = sys.executable
    for port in ports:
        stack.start(
            f"iperf3-{port}",
            ["iperf3", "-s", "-B", "127.0.0.1", "-p", str(port)],
            ready=lambda p=port: servers.listening(p),
        )
    # make run's command lines (portal/launch.py), this bench's vantage and node names.
    stack.start("worker", launch.vantage_worker(VANTAGE))
    stack.start("housekeeping", launch.housekeeping_worker(node="bench-housekeeping"))
    stack.start("beat", launch.beat())
    web = servers.free_port()
    stack.start(
        "gunicorn",
        [
            py,
            "-m",
            "gunicorn",
            "portal.wsgi",
            "-b",
            f"127.0.0.1:{web}",
            "--workers",
            "3",
            "--threads",
            "4",
            "--timeout",
            "60",
        ],
        ready=lambda: servers.listening(web),
    )
    return web


def run_locust(conf, nginx_port, users, seconds, workdir):
    conf_path, samples_path = Path(workdir) / "conf.json", Path(workdir) / "samples.json"
    conf_path.write_text(json.dumps({**conf, "seconds": seconds}))
    env = dict(os.environ, BENCH_LOAD_CONF=str(conf_path), BENCH_LOAD_SAMPLES=str(samples_path))
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(ROOT / "scripts" / "locust_load.py"),
        "--headless",
        "-u",
        str(users),
        "-r",
        str(max(1, users // 10)),
        "-t",
        f"{seconds}s",
        "--stop-timeout",
        "30",
        "--host",
        f"http://127.0.0.1:{nginx_port}",
        "--only-summary",
        "--exit-code-on-error",
        "0",
    ]
    print(f"locust: {users} users for {seconds} s through nginx on {nginx_port} ...", flush=True)
    subprocess.run(cmd, cwd=workdir, env=env, check=True, stdout=subprocess.DEVNULL)
    return json.loads(samples_path.read_text())


def outcome_of_tests():
    from portal.measure.models import Measurement

    rows = Measurement.objects.filter(requested_by__username__startswith="load")
    return {status: rows.filter(status=status).count() for status in ("queued", "running", "done", "failed")}


def report(samples, users, seconds, rows, tests, started):
    intro = (
        f"Run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC: `make bench-load` ({users} users, {seconds} s, "
        f"{rows:,} stored measurements of the site), through nginx -> gunicorn (3 x 4 threads) -> PostgreSQL, "
        "on this 2-core machine shared with other work. Times from every request locust made."
    )
    lines = [
        "# bench-load",
        "",
        intro,
        "",
        "| request | count | errors | median ms | p95 ms | p95 / healthz p95 |",
        "|---|---|---|---|---|---|",
    ]
    base = percentile([t for t, _ in samples["/healthz"]], 95)
    total_errors = 0
    for name in sorted(samples, key=lambda n: (n != "/healthz", n)):
        times = [t for t, _ in samples[name]]
        errors = sum(1 for _, failed in samples[name] if failed)
        total_errors += errors
        p95 = percentile(times, 95)
        lines.append(
            f"| {name} | {len(times)} | {errors} | {percentile(times, 50):.1f} | {p95:.1f} | {p95 / base:.1f}x |"
        )
    site_ratio = percentile([t for t, _ in samples["site page"]], 95) / base
    permalink_ratio = percentile([t for t, _ in samples["permalink"]], 95) / base
    verdict = "met" if total_errors == 0 else "missed"
    lines += [
        "",
        f"Errors: **{total_errors}** of {sum(len(v) for v in samples.values())} requests (target 0: {verdict}).",
        f"Tests requested during the run: {tests} (status at the end of the run).",
        f"Site page p95 / healthz p95: **{site_ratio:.1f}x**; permalink p95 / healthz p95: **{permalink_ratio:.1f}x**.",
        f"Whole run including loading the data: {time.time() - started:.0f} s.",
        "",
    ]
    return "\n".join(lines), total_errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=300)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=20030404)
    parser.add_argument("--out", default=str(ROOT / "docs" / "bench-load.md"))
    args = parser.parse_args()
    source_url = os.environ.get("DATABASE_URL")
    if not source_url or not os.environ.get("REDIS_URL"):
        sys.exit("DATABASE_URL and REDIS_URL must be set: run `make bench-load`")
    started = time.time()
    db_url = bench_portal.SCRATCH.url(source_url)
    bench_portal.SCRATCH.create(source_url)
    bench_portal.setup_django(db_url)
    workdir = tempfile.mkdtemp(prefix="bench-load-")
    env = dict(
        os.environ,
        DATABASE_URL=db_url,
        CACHE_KEY_PREFIX=f"bench-load-{os.getpid()}",
        VANTAGE_NAME=VANTAGE,
        ALLOW_PRIVATE_SITE_HOSTS="1",  # its sites are iperf3 on loopback; the worker checks at test time
        PORTAL_VAR_DIR=workdir,
        PYTHONUNBUFFERED="1",
    )
    stack = Stack(workdir, env)
    try:
        print(f"loading {args.rows:,} measurements into {bench_portal.SCRATCH.name} ...", flush=True)
        conf, ports = prepare(args.rows, args.seed, args.users)
        web = start_stack(stack, ports, workdir)
        with proxy.nginx(Path(workdir) / "nginx", web) as nginx_port:
            samples = run_locust(conf, nginx_port, args.users, args.seconds, workdir)
        time.sleep(5)  # the last requested tests finish
        text, errors = report(samples, args.users, args.seconds, args.rows, outcome_of_tests(), started)
    finally:
        stack.stop()
        bench_portal.SCRATCH.drop(source_url)
    print(text)
    Path(args.out).write_text(text)
    print(f"written to {os.path.relpath(args.out, ROOT)}; logs in {workdir}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
