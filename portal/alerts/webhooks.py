"""Alert webhooks: which URLs may be one, and one POST to one within a deadline.

A webhook URL is a request the portal makes on an admin's behalf, from inside the deployment:
like a site's host (portal/measure/hosts.py, the same policy and the same switch,
ALLOW_PRIVATE_SITE_HOSTS) it must not reach loopback, metadata or private networks. The check
runs when the rule is saved and again at every delivery, where the name is resolved once and
the connection goes to the address that was judged (a name can resolve elsewhere by then).
Redirects are not followed: a 3xx is a failed attempt. ALERT_WEBHOOK_TIMEOUT_S bounds the
whole delivery (resolve, connect, TLS, request, answer), not each read: a receiver that
dribbles its reply a byte at a time would otherwise hold the worker for minutes.

Chat and incident webhooks carry their secret in the URL (a token in the path or the query,
user:password before the host): anything shown or stored about a delivery uses redact().
"""

import base64
import http.client
import socket
import ssl
import threading
import time
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError

from portal.measure import hosts

SCHEMES = {"http": 80, "https": 443}


class WebhookError(Exception):
    """The delivery failed; the message says why and names the URL only as redact() does."""


def redact(url):
    """The URL without credentials, query or fragment, and with its path cut to its first
    segment (/services/T00/B00/secret keeps only /services/...): enough to tell receivers
    apart, nothing of a secret."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(an unreadable URL)"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    segments = [s for s in parts.path.split("/") if s]
    path = f"/{segments[0]}" + ("/..." if len(segments) > 1 else "") if segments else "/"
    tail = "?..." if parts.query else ""
    return f"{parts.scheme}://{netloc}{path}{tail}"


def _target(url):
    """(scheme, host, port, path with query, userinfo header or None); ValueError says what is wrong."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(f"the scheme is {parts.scheme or 'missing'!r}: webhook URLs must be http:// or https://")
    if not parts.hostname:
        raise ValueError("the URL has no host")
    port = parts.port or SCHEMES[parts.scheme]
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    auth = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        auth = "Basic " + base64.b64encode(pair).decode()
    return parts.scheme, parts.hostname, port, path, auth


def validate_webhook_url(url):
    """The model's validator (the admin's form runs it when a rule is saved)."""
    if not url:
        return
    try:
        _, host, _, _, _ = _target(url)
    except ValueError as exc:
        raise ValidationError(f"{exc}.", code="webhook_scheme") from None
    try:
        hosts.vet(host, timeout_s=hosts.RESOLVE_TIMEOUT_S)
    except hosts.Unresolvable as exc:
        raise ValidationError(f"{exc}: give a host name that resolves, or an address.", code="unresolvable") from None
    except hosts.Refused as exc:
        raise ValidationError(
            f"{exc}: webhooks must go to publicly routable hosts. "
            "(A deployment that sends them to its private network on purpose sets ALLOW_PRIVATE_SITE_HOSTS=1.)",
            code="private_host",
        ) from None


class _Pinned:
    """Connects to the judged address, not to whatever the name resolves to now; Host and the
    TLS server name (SNI, certificate check) stay the URL's host."""

    def connect(self):
        self.raw = socket.create_connection((str(self.address), self.port), self.timeout)
        self.raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self.wrap(self.raw)

    def wrap(self, raw):
        return raw

    def abort(self):
        """Called from the deadline's timer thread: a blocked read returns at once."""
        raw = getattr(self, "raw", None)
        if raw is not None:
            try:
                raw.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _HTTP(_Pinned, http.client.HTTPConnection):
    def __init__(self, host, port, address, timeout):
        super().__init__(host, port, timeout=timeout)
        self.address = address


class _HTTPS(_Pinned, http.client.HTTPSConnection):
    def __init__(self, host, port, address, timeout):
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self.address = address

    def wrap(self, raw):
        return self._context.wrap_socket(raw, server_hostname=self.host)


def post(url, body, timeout_s=None, headers=None):
    """POSTs body (bytes) to url within timeout_s seconds in all; returns the HTTP status
    (2xx). Raises WebhookError for everything else: refused address, no answer in time,
    connection errors, a reply that is not HTTP, a non-2xx status (3xx included)."""
    timeout_s = settings.ALERT_WEBHOOK_TIMEOUT_S if timeout_s is None else timeout_s
    shown = redact(url)
    deadline = time.monotonic() + timeout_s
    try:
        scheme, host, port, path, auth = _target(url)
    except ValueError as exc:
        raise WebhookError(f"webhook {shown}: {exc}") from None
    try:
        addresses = hosts.vet(host, timeout_s=timeout_s)
    except (hosts.Unresolvable, hosts.Refused) as exc:
        raise WebhookError(f"webhook {shown}: refused before connecting: {exc}") from None
    headers = {"Content-Type": "application/json", **(headers or {})}
    if auth:
        headers["Authorization"] = auth
    timed_out = threading.Event()
    last = None
    for address in addresses:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        connection = (_HTTPS if scheme == "https" else _HTTP)(host, port, address, remaining)

        def expire(connection=connection):
            timed_out.set()
            connection.abort()

        timer = threading.Timer(remaining, expire)
        timer.daemon = True
        timer.start()
        try:
            connection.request("POST", path, body=body, headers=headers)
            status = connection.getresponse().status
        except ConnectionRefusedError as exc:
            last = exc  # as a browser does: the next address of the name
            continue
        except Exception as exc:  # http.client, ssl and socket errors are many classes; all fail it
            last = exc
            break
        finally:
            timer.cancel()
            connection.close()
        if timed_out.is_set():
            break
        if 300 <= status < 400:
            raise WebhookError(
                f"webhook {shown} answered HTTP {status}: redirects are not followed; give the final URL"
            )
        if not 200 <= status < 300:
            raise WebhookError(f"webhook {shown} answered HTTP {status}")
        return status
    if timed_out.is_set() or last is None or isinstance(last, (socket.timeout, TimeoutError)):
        raise WebhookError(
            f"webhook {shown}: timed out: no complete answer within {timeout_s:g} s "
            "(ALERT_WEBHOOK_TIMEOUT_S bounds the whole delivery)"
        )
    raise WebhookError(f"webhook {shown}: {_describe(last)}")


def _describe(exc):
    if isinstance(exc, http.client.HTTPException):
        detail = str(exc).strip()[:200]
        return f"not an HTTP answer ({type(exc).__name__}{': ' + detail if detail else ''})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {str(exc)[:200]}"
