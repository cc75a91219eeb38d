#!/usr/bin/env python
import os
import sys
from pathlib import Path


def use_make_runs_key():
    """Beside `make run`, its commands (README) run as written: with no SECRET_KEY or
    SECRET_KEY_FILE set, the key `make run` keeps in var/secret_key (PORTAL_VAR_DIR) is used,
    and the database is the same default (var/, or DATABASE_URL). Only read, never made here,
    and only by manage.py: a production start (gunicorn, celery) without SECRET_KEY still
    refuses, and so does manage.py where make run never ran."""
    if os.environ.get("SECRET_KEY") or os.environ.get("SECRET_KEY_FILE"):
        return
    key = Path(os.environ.get("PORTAL_VAR_DIR", Path(__file__).resolve().parent / "var")) / "secret_key"
    if key.is_file():
        os.environ["SECRET_KEY_FILE"] = str(key)


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    use_make_runs_key()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
