"""manage.py demo_setup: the demo site, vantage and user that `make run` starts with (demo.py)."""

from django.core.management.base import BaseCommand

from portal.measure.demo import setup_demo


class Command(BaseCommand):
    help = (
        "Create the demo site (an iperf3 -s on 127.0.0.1), register this host as the vantage, and "
        "(re)set the `demo` user's password; prints the password and a new API token once."
    )

    def add_arguments(self, parser):
        parser.add_argument("--iperf-port", type=int, default=5201, help="port of the local iperf3 -s (default 5201)")
        parser.add_argument("--password", default=None, help="demo password (default: DEMO_PASSWORD or a random one)")

    def handle(self, *args, iperf_port, password, **options):
        if not 1 <= iperf_port <= 65535:
            self.stderr.write(f"--iperf-port {iperf_port} is not a port: allowed 1 to 65535")
            raise SystemExit(2)
        site, vantage, user, password, token = setup_demo(iperf_port, password)
        self.stdout.write(f"site {site.slug}: iperf3 on 127.0.0.1:{site.port}; vantage {vantage.name}")
        self.stdout.write(f"login: {user.username} / {password}")
        self.stdout.write(f"token: {token}")
