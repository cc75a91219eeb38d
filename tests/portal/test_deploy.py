"""Deploy safety: the settings refuse what would be unsafe in production, and the documented
production environment (docs/production.env) passes `manage.py check --deploy` with no warning."""

import os
import secrets
import subprocess
import sys

from tests.servers import REPO

PRODUCTION_ENV = REPO / "docs" / "production.env"


def _production_env():
    values = {}
    for line in PRODUCTION_ENV.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    values["SECRET_KEY"] = secrets.token_urlsafe(50)
    return values


def _django(code, **env_overrides):
    """Runs `code` after django.setup() in a fresh interpreter with this environment."""
    env = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "SECRET_KEY_FILE", "DEBUG"}}
    env.update(env_overrides)
    script = f"import django; django.setup(); {code}"
    return subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)


def _manage(*args, **env_overrides):
    # The browser tests set DJANGO_ALLOW_ASYNC_UNSAFE for their live server; no deployment does.
    dropped = {"SECRET_KEY", "SECRET_KEY_FILE", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_deploy_refuses_to_start_without_secret_key_when_debug_is_off():
    result = _django("print('started')", DEBUG="0")
    assert result.returncode != 0
    assert "started" not in result.stdout
    assert "SECRET_KEY is not set, and DEBUG is off" in result.stderr


def test_deploy_debug_run_starts_without_secret_key():
    result = _django("from django.conf import settings; print(settings.SECRET_KEY[:20])", DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "insecure-debug-only-"


def test_deploy_secret_key_file_is_read(tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text("k" * 10 + "from-a-file\n")
    result = _django(
        "from django.conf import settings; print(settings.SECRET_KEY)", DEBUG="0", SECRET_KEY_FILE=str(key_file)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "kkkkkkkkkkfrom-a-file"


def test_deploy_empty_or_missing_secret_key_file_is_refused(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("\n")
    assert "the file is empty" in _django("", DEBUG="0", SECRET_KEY_FILE=str(empty)).stderr
    missing = _django("", DEBUG="0", SECRET_KEY_FILE=str(tmp_path / "nope"))
    assert missing.returncode != 0 and "cannot be read (No such file or directory)" in missing.stderr


def test_deploy_proxy_ssl_header_parsed_and_bad_value_refused():
    ok = _django(
        "from django.conf import settings; print(settings.SECURE_PROXY_SSL_HEADER)",
        DEBUG="1",
        SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto: https",
    )
    assert ok.stdout.strip() == "('HTTP_X_FORWARDED_PROTO', 'https')"
    bad = _django("", DEBUG="1", SECURE_PROXY_SSL_HEADER="https")
    assert bad.returncode != 0
    assert "expected 'Header-Name: value'" in bad.stderr


def test_deploy_check_is_clean_with_the_documented_production_environment():
    result = _manage("check", "--deploy", "--fail-level", "WARNING", **_production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_deploy_check_warns_without_the_https_settings():
    env = _production_env()
    for name in ("SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE"):
        env.pop(name)
    result = _manage("check", "--deploy", "--fail-level", "WARNING", **env)
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stdout + result.stderr
