"""One settings module for every deployment; everything that differs comes from the environment.

Embedded default (nothing set): SQLite and a file-system Celery broker under var/, so
`make run` works on a fresh machine. DATABASE_URL / REDIS_URL switch to PostgreSQL / Redis
(docker-compose.yml, the tests).
"""

import datetime
import ipaddress
import os
import warnings
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PORTAL_VAR_DIR", BASE_DIR / "var"))


# A typo in a deployment's environment must stop the process at start, not surface later as
# a puzzling default.
def env_str(name, default=None):
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value


def env_bool(name, default=False):
    value = env_str(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r}: expected one of 1/0, true/false, yes/no, on/off")


def env_number(name, default, kind=int, minimum=None):
    value = env_str(name)
    if value is None:
        return default
    try:
        number = kind(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected a {kind.__name__}") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r}: must be at least {minimum}")
    return number


def env_list(name, default):
    value = env_str(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def database_from_url(url):
    parts = urlsplit(url)
    if parts.scheme in {"postgres", "postgresql"}:
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured(f"DATABASE_URL={url!r}: names no database (postgres://user@host:port/NAME)")
        options = dict(parse_qsl(parts.query))
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "OPTIONS": options,
            "CONN_MAX_AGE": env_number("DATABASE_CONN_MAX_AGE", 0, minimum=0),
            # The e2e tests point a separate worker process at pytest-django's test database.
            "TEST": {"NAME": env_str("DATABASE_TEST_NAME")},
        }
    if parts.scheme == "sqlite":
        path = unquote(url[len("sqlite://") :]).lstrip("/") if url.startswith("sqlite:///") else ""
        if not path:
            raise ImproperlyConfigured(f"DATABASE_URL={url!r}: expected sqlite:///absolute/path.sqlite3")
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": "/" + path}
    raise ImproperlyConfigured(
        f"DATABASE_URL={url!r}: unsupported scheme {parts.scheme!r}; use postgres://user@host:port/name or sqlite:///path"
    )


def secret_key_from_env(debug):
    """SECRET_KEY, or the first line of the file SECRET_KEY_FILE names (Docker / systemd
    secrets). Without either only a DEBUG run may start: a key anyone can guess signs sessions,
    password-reset links and CSRF tokens that anyone could then forge."""
    key = env_str("SECRET_KEY")
    path = env_str("SECRET_KEY_FILE")
    if key is None and path is not None:
        try:
            key = Path(path).read_text().strip() or None
        except OSError as exc:
            raise ImproperlyConfigured(f"SECRET_KEY_FILE={path!r}: cannot be read ({exc.strerror})") from None
        if key is None:
            raise ImproperlyConfigured(f"SECRET_KEY_FILE={path!r}: the file is empty")
    if key is not None:
        return key
    if not debug:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set, and DEBUG is off: set SECRET_KEY to 50 or more random characters "
            "(python -c 'import secrets; print(secrets.token_urlsafe(50))') or SECRET_KEY_FILE to a file "
            "holding one, or set DEBUG=1 for a development run on this machine only."
        )
    # DEBUG only: a stable per-checkout key so sessions survive restarts while developing.
    return "insecure-debug-only-" + str(BASE_DIR)


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = secret_key_from_env(DEBUG)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "django_celery_beat",
    "portal.measure",
    "portal.sweeps",
    "axes",
    "portal.alerts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "portal.middleware.content_security_policy",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Errors in words: a 405 names the allowed methods; HEAD is answered as GET.
    "portal.measure.errors.explain_method_not_allowed",
    "portal.measure.errors.head_as_get",
    # Last, as django-axes asks: it turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            # The figures' filters live with the parsers and formatters they are.
            "libraries": {"units": "portal.measure.units"},
        },
    }
]

DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": database_from_url(DATABASE_URL)}
else:
    # The web server and the worker write concurrently: WAL and IMMEDIATE transactions make
    # SQLite wait for the lock instead of failing with "database is locked".
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "portal.sqlite3",
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    # Best-effort: an unreachable Redis is a cache miss, never a failed page or test (portal/cache.py).
    CACHES = {
        "default": {
            "BACKEND": "portal.cache.ResilientRedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env_str("CACHE_KEY_PREFIX", "portal"),
        }
    }
    CELERY_BROKER_URL = REDIS_URL
    # A Redis that is down or unreachable must be noticed in seconds (a web request publishing
    # a task gives up and leaves the row to the watchdog, portal/measure/reaper.py), and a
    # half-open connection found by keepalive and the health check instead of hanging.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "socket_connect_timeout": 3,
        "socket_timeout": 10,
        "socket_keepalive": True,
        "health_check_interval": 10,
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }
    # kombu's filesystem transport: a broker that needs no server, shared by the web process
    # and the worker through directories under var/.
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(VAR_DIR / "broker" / "queue"),
        "data_folder_out": str(VAR_DIR / "broker" / "queue"),
        "processed_folder": str(VAR_DIR / "broker" / "processed"),
        # Exchange bindings; kombu's default is ./control in whatever directory we run from.
        "control_folder": str(VAR_DIR / "broker" / "control"),
        "store_processed": False,
    }
    # The filesystem transport has no broadcast, which remote control needs.
    CELERY_WORKER_ENABLE_REMOTE_CONTROL = False

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Login throttling (django-axes): after LOGIN_FAILURE_LIMIT wrong passwords for one user name
# from one address, that pair is locked out for LOGIN_LOCKOUT_MINUTES (429 with Retry-After).
# Keyed on the pair so a stranger cannot lock a colleague out from elsewhere.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_number("LOGIN_FAILURE_LIMIT", 5, minimum=1)
LOGIN_LOCKOUT_MINUTES = env_number("LOGIN_LOCKOUT_MINUTES", 15.0, kind=float, minimum=0.1)
AXES_COOLOFF_TIME = datetime.timedelta(minutes=LOGIN_LOCKOUT_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "portal.lockout.lockout_response"
AXES_CLIENT_IP_CALLABLE = "portal.lockout.client_ip"
# Behind a reverse proxy REMOTE_ADDR is the proxy's: name the header it sets to the client's
# address (e.g. X-Real-IP). Only for a proxy that overwrites it, or clients could pick their own.
CLIENT_IP_HEADER = env_str("CLIENT_IP_HEADER")


def trusted_proxies_from_env():
    """TRUSTED_PROXIES: comma-separated addresses or networks (CIDR) of the reverse proxies
    whose CLIENT_IP_HEADER is believed. A request from any other peer (gunicorn reached
    directly) is counted by its own address, whatever header it sends."""
    networks = []
    for item in env_list("TRUSTED_PROXIES", []):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"TRUSTED_PROXIES: {item!r} is not an address or network: expected e.g. 127.0.0.1,10.0.0.0/8"
            ) from None
    return networks


TRUSTED_PROXIES = trusted_proxies_from_env()
if CLIENT_IP_HEADER and not TRUSTED_PROXIES:
    warnings.warn(
        f"CLIENT_IP_HEADER={CLIENT_IP_HEADER} is set without TRUSTED_PROXIES: the header is ignored and "
        "logins are counted by the peer's address (REMOTE_ADDR). Set TRUSTED_PROXIES to the reverse "
        "proxy's address(es), e.g. TRUSTED_PROXIES=127.0.0.1.",
        stacklevel=1,
    )
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# Dates as the pages write them, "Y-m-d H:i:s UTC", in the admin too (not "7:10 p.m.").
FORMAT_MODULE_PATH = ["portal.formats"]
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Set where collectstatic runs (the Docker image); unset, WhiteNoise serves from the finders.
STATIC_ROOT = env_str("STATIC_ROOT")
# Without collectstatic (make run, tests) WhiteNoise serves straight from the finders.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# HTTPS, all off by default so `make run` works on plain http://127.0.0.1. A deployment behind
# TLS sets them (docs/production.env lists the values `manage.py check --deploy` accepts).
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_number("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", SESSION_COOKIE_SECURE)


def proxy_ssl_header_from_env():
    """SECURE_PROXY_SSL_HEADER from "Header-Name: value" (e.g. "X-Forwarded-Proto: https").
    Set it only behind a proxy that overwrites that header: otherwise a client could claim
    HTTPS by sending it."""
    raw = env_str("SECURE_PROXY_SSL_HEADER")
    if raw is None:
        return None
    name, sep, value = raw.partition(":")
    if not sep or not name.strip() or not value.strip():
        raise ImproperlyConfigured(
            f"SECURE_PROXY_SSL_HEADER={raw!r}: expected 'Header-Name: value', e.g. 'X-Forwarded-Proto: https'"
        )
    return ("HTTP_" + name.strip().upper().replace("-", "_"), value.strip())


SECURE_PROXY_SSL_HEADER = proxy_ssl_header_from_env()

# --- the measurement pipeline -------------------------------------------------------------
# Sites must resolve to globally routable addresses unless this is set (portal/measure/hosts.py):
# make run's demo site on 127.0.0.1 and the tests set it.
ALLOW_PRIVATE_SITE_HOSTS = env_bool("ALLOW_PRIVATE_SITE_HOSTS", False)
QUICKPROBE_BIN = env_str("QUICKPROBE_BIN", str(BASE_DIR / "prober" / "build" / "quickprobe"))
# Names this host's Vantage row and its Celery queue `vantage.<name>`.
VANTAGE_NAME = env_str("VANTAGE_NAME", "local")
# The prober may run this long past the requested duration (connect and protocol timeouts,
# the drain before TEST_END) before the runner kills it as overrun.
PROBER_MARGIN_S = env_number("PROBER_MARGIN_S", 20.0, kind=float, minimum=1.0)
# Heartbeats, one family: HEARTBEAT_<what>_S is how often it beats, HEARTBEAT_<what>_<then>_S
# how long a silence may last before it counts as gone.
# A running test (its worker writes heartbeat_at, and checks it was not cancelled):
HEARTBEAT_TEST_S = env_number("HEARTBEAT_TEST_S", 2.0, kind=float, minimum=0.1)
# ... a running row silent this long belongs to a lost worker: failed worker_lost.
HEARTBEAT_TEST_LOST_S = env_number("HEARTBEAT_TEST_LOST_S", 30.0, kind=float, minimum=1.0)
# A vantage (its worker refreshes Vantage.last_seen, test or no test):
HEARTBEAT_VANTAGE_S = env_number("HEARTBEAT_VANTAGE_S", 10.0, kind=float, minimum=0.1)
# ... online while its last beat is this recent (three missed beats): offline ones are not
# offered, and their queued tests fail as vantage_offline.
HEARTBEAT_VANTAGE_OFFLINE_S = env_number(
    "HEARTBEAT_VANTAGE_OFFLINE_S", 3 * HEARTBEAT_VANTAGE_S, kind=float, minimum=0.1
)
for _old, _new in {
    "HEARTBEAT_INTERVAL_S": "HEARTBEAT_TEST_S",
    "REAPER_HEARTBEAT_S": "HEARTBEAT_TEST_LOST_S",
    "VANTAGE_HEARTBEAT_S": "HEARTBEAT_VANTAGE_S",
    "VANTAGE_OFFLINE_S": "HEARTBEAT_VANTAGE_OFFLINE_S",
}.items():
    if env_str(_old) is not None:
        raise ImproperlyConfigured(f"{_old} is now named {_new}: rename it in the environment (same meaning)")
# A queued row older than this will never run (no worker for its vantage, or retries exhausted).
REAPER_QUEUED_S = env_number("REAPER_QUEUED_S", 3600.0, kind=float, minimum=1.0)
# A queued row whose task is due this long and is not on the broker lost its task: the watchdog
# sends it again, at most WATCHDOG_MAX_RESENDS times (portal/measure/reaper.py).
WATCHDOG_GRACE_S = env_number("WATCHDOG_GRACE_S", 30.0, kind=float, minimum=1.0)
WATCHDOG_MAX_RESENDS = env_number("WATCHDOG_MAX_RESENDS", 3, minimum=0)
REAPER_INTERVAL_S = env_number("REAPER_INTERVAL_S", 15.0, kind=float, minimum=1.0)
# Another vantage is testing this site: try again in a while.
SITE_BUSY_RETRIES = env_number("SITE_BUSY_RETRIES", 60, minimum=0)
# The iperf3 server is busy with a stranger's test.
SERVER_BUSY_RETRIES = env_number("SERVER_BUSY_RETRIES", 5, minimum=0)
RETRY_BASE_S = env_number("RETRY_BASE_S", 2.0, kind=float, minimum=0.0)
RETRY_MAX_S = env_number("RETRY_MAX_S", 30.0, kind=float, minimum=0.0)
# Sweeps are defined in the admin (portal/sweeps) and scheduled by beat's DatabaseScheduler.
# The old environment-variable sweep is gone; a deployment still setting it must hear so.
for _gone in ("SWEEP_INTERVAL_S", "SWEEP_MODE", "SWEEP_DURATION_S"):
    if env_str(_gone) not in (None, "0"):
        raise ImproperlyConfigured(
            f"{_gone} is no longer read: define a sweep in the admin (Sweeps) or with "
            f"`manage.py sweep create NAME --every 1h`, and unset {_gone}"
        )
# Where pages are served, for links printed outside a request (`manage.py sweep run`, alert
# notices; inside a request, links take the request's host). The default follows PORT, the
# port `make run` serves on, so a portal moved to PORT=8765 does not print links to :8000.
_WEB_PORT = env_number("PORT", 8000, minimum=1)
PORTAL_URL = env_str("PORTAL_URL", f"http://127.0.0.1:{_WEB_PORT}")
# Per-user request limits (portal/measure/dispatch.py, check_quota); admins override them per
# user or group in the admin (Quotas). 0 = no limit. Staff and sweeps are exempt.
QUOTA_TESTS_PER_HOUR = env_number("QUOTA_TESTS_PER_HOUR", 20, minimum=0) or None
QUOTA_MAX_PENDING = env_number("QUOTA_MAX_PENDING", 3, minimum=0) or None
QUOTA_TEST_SECONDS_PER_DAY = env_number("QUOTA_TEST_SECONDS_PER_DAY", 3600, minimum=0) or None
# Retry-After for a user at QUOTA_MAX_PENDING: about one quick test.
QUOTA_PENDING_RETRY_S = env_number("QUOTA_PENDING_RETRY_S", 30, minimum=1)
PROGRESS_MAX_SAMPLES = env_number("PROGRESS_MAX_SAMPLES", 300, minimum=10)

# --- alerts (portal/alerts) -------------------------------------------------------------------
# Links in alert e-mails and webhooks are absolute, from PORTAL_URL (above).
# Deliveries run on this Celery queue, never the shared one: a receiver that answers slowly
# must not hold the worker the reaper, the task watchdog and sweeps run on
# (docker-compose.yml's `alerts` worker; `make run`'s vantage worker).
ALERTS_QUEUE = env_str("ALERTS_QUEUE", "alerts")
# The whole delivery (resolve, connect, TLS, request, answer), not each read.
ALERT_WEBHOOK_TIMEOUT_S = env_number("ALERT_WEBHOOK_TIMEOUT_S", 10.0, kind=float, minimum=0.1)
# Attempts after the first, spaced ALERT_RETRY_BASE_S x 2^n apart; then the delivery is failed.
ALERT_DELIVERY_RETRIES = env_number("ALERT_DELIVERY_RETRIES", 5, minimum=0)
ALERT_RETRY_BASE_S = env_number("ALERT_RETRY_BASE_S", 30.0, kind=float, minimum=0.0)
# E-mail: SMTP when EMAIL_HOST is set, else printed on the console (make run).
EMAIL_HOST = env_str("EMAIL_HOST", "")
EMAIL_PORT = env_number("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_number("EMAIL_TIMEOUT", 10.0, kind=float, minimum=0.1)
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend",
)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "quickprobe@localhost")

CELERY_TASK_ACKS_LATE = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Keep reconnecting after a broker outage however long it lasts (celery's default is 100
# attempts, about 17 minutes, after which the worker exits).
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# Publishing a task: a few quick attempts, then the caller carries on and the watchdog sends it.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 1}
# Beat's schedule lives in the database (django-celery-beat): sweeps edited in the admin take
# effect without restarting beat. The static entries (the reaper) are copied in at start.
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
