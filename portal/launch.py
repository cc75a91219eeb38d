"""The Celery command lines, in one place: `make run` (scripts/run.py), docker-compose.yml, the
benches and the test harnesses start every vantage worker, housekeeping worker and beat
through here, so what runs in production is what the tests run.

    python -m portal.launch vantage [--name NAME] [--queues Q,...] [--concurrency N]
    python -m portal.launch housekeeping [--queues Q,...] [--node NAME]
    python -m portal.launch alerts [--node NAME]
    python -m portal.launch beat [--max-interval S]

Each execs Celery in place (same pid: a supervisor's signals reach Celery itself). The
functions below return the same argv for callers that start the process themselves.

A vantage worker runs as many tests at once as its Vantage's `max_concurrent_tests` (admin;
default 1): two tests from one host share its uplink and CPU and measure each other. The
number is read when the worker starts (a vantage not registered yet gets 1); the runner holds
the same bound with the database, so a second worker on the same queue cannot break it.
"""

import argparse
import os
import sys

# Celery's own worker heartbeats and gossip feed event monitors, which the portal does not
# use: vantages are watched through their Vantage row (portal/measure/vantages.py), and
# mingle only slows a start. One set of flags for every worker.
COMMON_WORKER_FLAGS = ["-P", "prefork", "--without-gossip", "--without-mingle", "--without-heartbeat"]
BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"


def celery(python=None):
    return [python or sys.executable, "-m", "celery", "-A", "portal"]


def vantage_concurrency(name):
    """The vantage's max_concurrent_tests, or 1 for a vantage not registered yet."""
    from portal.measure.models import Vantage

    value = Vantage.objects.filter(name=name).values_list("max_concurrent_tests", flat=True).first()
    return value or 1


def vantage_worker(name=None, *, extra_queues=(), concurrency=None, loglevel="INFO", python=None):
    """argv of the worker of vantage `name` (default settings.VANTAGE_NAME): its own queue,
    plus extra_queues (tests give sweeps a queue of their own)."""
    from django.conf import settings

    from portal.measure.vocab import vantage_queue

    name = name or settings.VANTAGE_NAME
    if concurrency is None:
        concurrency = vantage_concurrency(name)
    return [
        *celery(python),
        "worker",
        "-Q",
        ",".join([vantage_queue(name), *extra_queues]),
        "--concurrency",
        str(concurrency),
        *COMMON_WORKER_FLAGS,
        "-l",
        loglevel,
        "-n",
        f"{name}@%h",
    ]


def housekeeping_queues():
    """The shared queue: the reaper and task watchdog (beat) and sweeps. Not a vantage's worker,
    so a lost vantage worker is still found; not the alert notices' (alerts_worker)."""
    from portal.measure.vocab import SHARED_QUEUE

    return [SHARED_QUEUE]


def housekeeping_worker(*, queues=None, node="housekeeping", loglevel="INFO", python=None):
    return [
        *celery(python),
        "worker",
        "-Q",
        ",".join(queues or housekeeping_queues()),
        "--concurrency",
        "1",
        *COMMON_WORKER_FLAGS,
        "-l",
        loglevel,
        "-n",
        f"{node}@%h",
    ]


# Alert notices at once: one slow webhook receiver holds one, the other delivers the rest.
ALERTS_CONCURRENCY = 2


def alerts_worker(*, node="alerts", loglevel="INFO", python=None):
    """Alert notices (ALERTS_QUEUE) on a worker of their own: a webhook receiver that answers
    slowly holds one of its processes for up to ALERT_WEBHOOK_TIMEOUT_S an attempt, never the
    reaper's, the watchdog's, a sweep's or a throughput test's."""
    from django.conf import settings

    return [
        *celery(python),
        "worker",
        "-Q",
        settings.ALERTS_QUEUE,
        "--concurrency",
        str(ALERTS_CONCURRENCY),
        *COMMON_WORKER_FLAGS,
        "-l",
        loglevel,
        "-n",
        f"{node}@%h",
    ]


def beat(*, max_interval=None, loglevel="INFO", python=None):
    # Never a worker's -B: a killed worker would leave an orphaned scheduler.
    extra = ["--max-interval", str(max_interval)] if max_interval is not None else []
    return [*celery(python), "beat", "-S", BEAT_SCHEDULER, *extra, "-l", loglevel]


def argv_from(args):
    split = [q for q in (args.queues or "").split(",") if q]
    if args.role == "vantage":
        return vantage_worker(args.name, extra_queues=split, concurrency=args.concurrency, loglevel=args.loglevel)
    if args.role == "housekeeping":
        return housekeeping_worker(queues=split or None, node=args.node or "housekeeping", loglevel=args.loglevel)
    if args.role == "alerts":
        return alerts_worker(node=args.node or "alerts", loglevel=args.loglevel)
    return beat(max_interval=args.max_interval, loglevel=args.loglevel)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m portal.launch", description=__doc__.split("\n\n")[0])
    parser.add_argument("role", choices=["vantage", "housekeeping", "alerts", "beat"])
    parser.add_argument("--name", help="the vantage's name (default: VANTAGE_NAME)")
    parser.add_argument("--queues", help="vantage: queues besides its own; housekeeping: instead of the shared ones")
    parser.add_argument("--concurrency", type=int, help="vantage: instead of its max_concurrent_tests")
    parser.add_argument("--node", help="housekeeping, alerts: the node name before @host (default: the role)")
    parser.add_argument("--max-interval", type=float, help="beat: seconds between schedule checks at most")
    parser.add_argument("-l", "--loglevel", default="INFO")
    args = parser.parse_args(argv)
    if args.concurrency is not None and args.concurrency < 1:
        parser.error(f"--concurrency {args.concurrency}: must be at least 1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    argv = argv_from(args)
    sys.stdout.flush()
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
