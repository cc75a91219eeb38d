"""nginx (Debian's, with the repo's deploy/nginx/portal.conf.template) and gunicorn as real
processes on spare loopback ports, each in a prefix directory of its own."""

import contextlib
import os
import subprocess
import sys
from pathlib import Path

from tests import servers

TEMPLATE = servers.REPO / "deploy" / "nginx" / "portal.conf.template"
NGINX_BIN = "/usr/sbin/nginx"

# Only what a non-docker nginx needs around the repo's http-level include.
MAIN_CONF = """\
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log info;
daemon off;
events {{ worker_connections 512; }}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    include {prefix}/portal.conf;
}}
"""


def render_template(listen, upstream):
    """The template as the nginx image's envsubst fills it: only these two names."""
    text = TEMPLATE.read_text()
    return text.replace("${NGINX_LISTEN}", listen).replace("${PORTAL_UPSTREAM}", upstream)


@contextlib.contextmanager
def nginx(prefix, upstream_port):
    """nginx on a free loopback port proxying to 127.0.0.1:upstream_port; yields the port."""
    prefix = Path(prefix)
    (prefix / "tmp").mkdir(parents=True, exist_ok=True)
    port = servers.free_port()
    (prefix / "portal.conf").write_text(render_template(f"127.0.0.1:{port}", f"127.0.0.1:{upstream_port}"))
    conf = prefix / "nginx.conf"
    conf.write_text(MAIN_CONF.format(prefix=prefix))
    check = subprocess.run(
        [NGINX_BIN, "-t", "-p", str(prefix), "-c", str(conf)], check=False, capture_output=True, text=True
    )
    assert check.returncode == 0, f"nginx -t refused the config:\n{check.stderr}"
    log = prefix / "error.log"
    proc = subprocess.Popen(
        [NGINX_BIN, "-p", str(prefix), "-c", str(conf)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        servers.wait_until(lambda: servers.listening(port), 10, f"nginx on {port}", proc, log)
        yield port
    finally:
        servers.stop(proc)


@contextlib.contextmanager
def gunicorn(var_dir, workers=1, threads=4, env=None):
    """The portal under gunicorn on a free loopback port, as docker-compose runs it (fewer
    threads); yields (port, log path)."""
    port = servers.free_port()
    log = Path(var_dir) / f"gunicorn-{port}.log"
    environ = dict(os.environ, PORTAL_VAR_DIR=str(var_dir), PYTHONUNBUFFERED="1", **(env or {}))
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "portal.wsgi",
                "-b",
                f"127.0.0.1:{port}",
                "--workers",
                str(workers),
                "--threads",
                str(threads),
                "--access-logfile",
                "-",
            ],
            cwd=servers.REPO,
            env=environ,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        servers.wait_until(lambda: servers.listening(port), 30, f"gunicorn on {port}", proc, log)
        yield port, log
    finally:
        servers.stop(proc)
