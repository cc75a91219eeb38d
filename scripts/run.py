#!/usr/bin/env python3
"""`make run`: the whole product on one machine.

Migrates the database, starts a local `iperf3 -s` (port 5201 if free) registered as the demo
site, registers this host as the vantage, prints a demo login and an API token, then runs the
vantage's Celery worker, the housekeeping worker (reaper, task watchdog, sweeps), beat, each
as its own process as in docker-compose.yml, and gunicorn on http://127.0.0.1:$PORT (default
8000). A worker or beat that dies is started again (at most RESTARTS_PER_MINUTE times a
minute), as compose's restart policy does. Ctrl-C stops everything it started. Without DATABASE_URL / REDIS_URL it needs no server:
SQLite and a file-system broker under var/.

With root (the path lab's own test: labctl.lab_unavailable_reason()) it also brings up an
emulated WAN path (demo.DEMO_LAB_PATH: 100 Mbit/s, 40 ms, one-BDP buffer, MTU 1500) with its
own `iperf3 -s` in the lab's far namespace, registered as a second demo site. The one vantage
worker reaches it through scripts/lab_prober.sh, which runs the prober inside the lab's near
namespace for that site's address only (one vantage, so the API's `-d site=...` still needs no
vantage, and one test at a time from this host holds across both sites). The namespaces are
anonymous and held by this process's children (labctl's teardown): they go when make run stops,
even by SIGKILL, so a second make run never meets a stale lab. DEMO_LAB=0 leaves the lab out.
Then one quick test of each demo site is queued as any request is: the first pages show real
results.
"""

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from scripts.ports import free_port, listening, port_is_free  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
PR_SET_PDEATHSIG = 1
RESTARTS_PER_MINUTE = 5


def say(message):
    print(f"[run] {message}", flush=True)


def _die_with_us():
    # If this script is killed outright, what it started goes too.
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Processes:
    def __init__(self):
        self.procs = []
        self.specs = {}
        self.restarts = {}

    def start(self, name, cmd, restart=False, **kwargs):
        say(f"starting {name}: {' '.join(cmd)}")
        # Own session: Ctrl-C reaches only this script, which then stops each child in order.
        proc = subprocess.Popen(
            cmd, cwd=REPO, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_us, **kwargs
        )
        self.procs = [(n, p) for n, p in self.procs if n != name] + [(name, proc)]
        if restart:
            self.specs[name] = (cmd, kwargs)
        return proc

    def exited(self):
        return [(name, proc.returncode) for name, proc in self.procs if proc.poll() is not None]

    def restart(self, name):
        """Starts an exited restartable process again; False if it may not (not restartable, or
        restarted RESTARTS_PER_MINUTE times within the last minute)."""
        now = time.monotonic()
        recent = [t for t in self.restarts.get(name, []) if now - t < 60]
        if name not in self.specs or len(recent) >= RESTARTS_PER_MINUTE:
            return False
        self.restarts[name] = [*recent, now]
        cmd, kwargs = self.specs[name]
        self.start(name, cmd, restart=True, **kwargs)
        return True

    def stop_all(self):
        for name, proc in reversed(self.procs):
            if proc.poll() is None:
                say(f"stopping {name}")
                try:
                    # The leader only: celery and gunicorn stop their own children in order.
                    os.kill(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        for name, proc in reversed(self.procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                say(f"{name} did not stop within 15 s; killing it")
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
            # The worker's prober runs in a session of its own; make sure none survived.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def ensure_secret_key():
    """The portal refuses to start without a secret key unless DEBUG is on; a local run keeps
    a random one under var/ (made once, readable by this user only), so sessions survive a
    restart and no key is shared between checkouts."""
    if os.environ.get("SECRET_KEY") or os.environ.get("SECRET_KEY_FILE"):
        return
    path = Path(os.environ.get("PORTAL_VAR_DIR", REPO / "var")) / "secret_key"
    if not path.exists():
        import secrets

        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(50) + "\n")
    os.environ["SECRET_KEY_FILE"] = str(path)


def setup_django():
    import django

    ensure_secret_key()
    # The demo site is an iperf3 on loopback, which a deployment refuses as a site host.
    os.environ.setdefault("ALLOW_PRIVATE_SITE_HOSTS", "1")

    django.setup()
    from django.conf import settings

    settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
    for option in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        folder = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get(option)
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
    return settings


def prepare(iperf_port, lab, lab_reason):
    from django.core.management import call_command

    from portal.measure.demo import setup_admin, setup_demo, setup_lab_site

    call_command("migrate", interactive=False, verbosity=0)
    site, vantage, user, password, token = setup_demo(iperf_port)
    lab_site = setup_lab_site(lab.far_addr, lab.port, None) if lab else setup_lab_site(None, None, lab_reason)
    _admin, admin_password = setup_admin()
    return site, lab_site, vantage, user, password, token, admin_password


def start_lab():
    """(the running lab, None), or (None, why there is none)."""
    if os.environ.get("DEMO_LAB", "1") == "0":
        return None, "DEMO_LAB=0 turned it off"
    sys.path.insert(0, str(REPO / "prober" / "lab"))
    import labctl

    from portal.measure.demo import DEMO_LAB_PATH

    reason = labctl.lab_unavailable_reason()
    if reason:
        return None, reason
    say(f"starting the path lab: {DEMO_LAB_PATH['description']}")
    lab = labctl.Lab(labctl.PathSpec(**DEMO_LAB_PATH))
    try:
        # Started here, in the main thread: its children die with the thread that made them.
        lab.__enter__()
    except (labctl.LabError, OSError, subprocess.SubprocessError) as e:
        return None, f"the path lab did not come up ({e})"
    return lab, None


def vantage_env(settings, lab):
    """The vantage worker's environment: with a lab, its prober goes through lab_prober.sh."""
    if lab is None:
        return None
    return dict(
        os.environ,
        QUICKPROBE_BIN=str(REPO / "scripts" / "lab_prober.sh"),
        QPLAB_PROBER=str(Path(settings.QUICKPROBE_BIN).resolve()),
        QPLAB_NEAR_NS=lab.near_ns,
        QPLAB_FAR_ADDR=lab.far_addr,
    )


def main():
    if not Path(os.environ.get("QUICKPROBE_BIN", REPO / "prober" / "build" / "quickprobe")).exists():
        sys.exit("the prober is not built: run `make prober` (make run does it for you)")
    settings = setup_django()
    web_port = int(os.environ.get("PORT", "8000"))
    if not port_is_free(web_port):
        sys.exit(f"port {web_port} is in use: set PORT to another one")
    iperf_port = 5201 if port_is_free(5201) else free_port()

    procs = Processes()
    stopping = []
    lab = None

    def on_signal(signum, frame):
        stopping.append(signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        procs.start(
            "iperf3 server", ["iperf3", "-s", "-B", "127.0.0.1", "-p", str(iperf_port)], stdout=subprocess.DEVNULL
        )
        lab, lab_reason = start_lab()
        site, lab_site, vantage, user, password, token, admin_password = prepare(iperf_port, lab, lab_reason)
        py = sys.executable
        # As docker-compose.yml runs them, through the one launcher (portal/launch.py): beat never
        # inside a worker (-B), so a killed worker leaves no orphaned scheduler, and the reaper
        # runs on a worker of its own, so a lost vantage worker is found with no new request
        # arriving. A restart runs the launcher again: it rereads the vantage's concurrency.
        launch = [py, "-m", "portal.launch"]
        procs.start(
            "celery worker", [*launch, "vantage", "--name", vantage.name], restart=True, env=vantage_env(settings, lab)
        )
        procs.start("housekeeping worker", [*launch, "housekeeping"], restart=True)
        procs.start("alerts worker", [*launch, "alerts"], restart=True)
        procs.start("celery beat", [*launch, "beat"], restart=True)
        procs.start(
            "web server",
            [
                py,
                "-m",
                "gunicorn",
                "portal.wsgi",
                "-b",
                f"127.0.0.1:{web_port}",
                "--workers",
                "2",
                "--threads",
                "4",
                "--access-logfile",
                "-",
            ],
        )
        deadline = time.monotonic() + 30
        while not listening(web_port) and time.monotonic() < deadline and not procs.exited() and not stopping:
            time.sleep(0.1)
        db = settings.DATABASES["default"]
        say("")
        say(f"portal:   http://127.0.0.1:{web_port}/")
        say(f"login:    demo / {password}   (a new password each start; set DEMO_PASSWORD to fix it)")
        say(
            f"admin:    admin / {admin_password}   at http://127.0.0.1:{web_port}/admin/ (sites, vantages, sweeps; "
            "ADMIN_PASSWORD to fix it)"
        )
        say(f"API:      export TOKEN={token}")
        say(
            f'          curl -H "Authorization: Bearer $TOKEN" -d site={site.slug} http://127.0.0.1:{web_port}/api/v1/measurements'
        )
        say(f"site:     {site.slug} -> iperf3 -s on 127.0.0.1:{iperf_port}; vantage {vantage.name}")
        if lab_site is not None:
            say(
                f"site:     {lab_site.slug} -> iperf3 -s on {lab.far_addr}:{lab.port} behind the path lab "
                f"({lab_site.location}); vantage {vantage.name} from the lab's near namespace"
            )
            say(f"lab:      namespaces {os.readlink(lab.near_ns)} {os.readlink(lab.far_ns)}; gone when make run stops")
        else:
            say(f"lab:      none, so loopback is the only demo site: {lab_reason}")
        from portal.measure.demo import first_tests

        demo_sites = [lab_site, site] if lab_site is not None else [site]
        try:
            for m in first_tests(vantage, user, demo_sites):
                say(f"first:    a quick test of {m.site.slug} is queued: http://127.0.0.1:{web_port}/m/{m.slug}/")
        except Exception as e:  # the portal still serves; the user can request them by hand
            say(f"first:    the first tests could not be queued: {e}")
        say(
            f"database: {db['ENGINE'].rsplit('.', 1)[-1]} {db['NAME']}; broker: {settings.CELERY_BROKER_URL.split('@')[-1]}"
        )
        say("Ctrl-C stops everything.")
        while not stopping:
            for name, status in procs.exited():
                if stopping:
                    break
                say(f"{name} exited with status {status}")
                if not procs.restart(name):
                    say("stopping the rest")
                    return 1
            time.sleep(0.5)
        return 0
    finally:
        procs.stop_all()
        if lab is not None:
            # After the workers: no prober is left in the near namespace to hold it.
            lab.close()
            say("path lab torn down")
        say("stopped")


if __name__ == "__main__":
    sys.exit(main())
