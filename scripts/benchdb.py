"""The benchmarks' throwaway PostgreSQL databases, one helper for all of them (bench_portal,
bench_load, bench_sweep): each run makes `<prefix>_<pid>` on the server DATABASE_URL names,
drops it at the end, and on its way in drops those of earlier runs whose process is gone (a
killed run leaves its database behind)."""

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


def admin_connect(url):
    import psycopg

    parts = urlsplit(url)
    return psycopg.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password or None,
        dbname="postgres",
        autocommit=True,
    )


class Scratch:
    def __init__(self, prefix, bench):
        self.prefix, self.bench = prefix, bench
        self.name = f"{prefix}_{os.getpid()}"

    def url(self, source_url):
        """source_url with this run's database in place of its own."""
        parts = urlsplit(source_url)
        if parts.scheme not in {"postgres", "postgresql"}:
            raise SystemExit(f"{self.bench} needs PostgreSQL: DATABASE_URL={source_url!r} is not postgres://...")
        return urlunsplit(parts._replace(path="/" + self.name))

    def create(self, source_url):
        with admin_connect(source_url) as conn:
            like = self.prefix.replace("_", "\\_") + "\\_%"
            for (name,) in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [like]):
                pid = name.rsplit("_", 1)[1]
                if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{self.name}"')

    def drop(self, source_url):
        from django.db import connections

        connections.close_all()
        with admin_connect(source_url) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
