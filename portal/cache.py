"""The cache is best-effort (issue 9): pages read PostgreSQL and progress is a convenience, so
a Redis outage must never fail a page or a test. This backend is Django's RedisCache with
short socket timeouts, and every operation that cannot reach Redis answers as a cache miss
(and logs, at most once per LOG_EVERY_S) instead of raising."""

import logging
import time

from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)

UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)
LOG_EVERY_S = 10.0
# Never wait long for a cache: a page would rather render from the database.
SOCKET_TIMEOUT_S = 0.5


class ResilientRedisCache(RedisCache):
    _last_logged = 0.0

    def __init__(self, server, params):
        params = dict(params)
        options = dict(params.get("OPTIONS") or {})
        options.setdefault("socket_connect_timeout", SOCKET_TIMEOUT_S)
        options.setdefault("socket_timeout", SOCKET_TIMEOUT_S)
        params["OPTIONS"] = options
        super().__init__(server, params)

    def _unreachable(self, operation, exc, fallback):
        now = time.monotonic()
        if now - ResilientRedisCache._last_logged >= LOG_EVERY_S:
            ResilientRedisCache._last_logged = now
            log.warning("cache unreachable (%s: %s); carrying on without it", operation, exc)
        return fallback

    def add(self, *args, **kwargs):
        try:
            return super().add(*args, **kwargs)
        except UNREACHABLE as exc:
            return self._unreachable("add", exc, False)

    def get(self, key, default=None, version=None):
        try:
            return super().get(key, default, version)
        except UNREACHABLE as exc:
            return self._unreachable("get", exc, default)

    def set(self, *args, **kwargs):
        try:
            return super().set(*args, **kwargs)
        except UNREACHABLE as exc:
            return self._unreachable("set", exc, None)

    def touch(self, *args, **kwargs):
        try:
            return super().touch(*args, **kwargs)
        except UNREACHABLE as exc:
            return self._unreachable("touch", exc, False)

    def delete(self, *args, **kwargs):
        try:
            return super().delete(*args, **kwargs)
        except UNREACHABLE as exc:
            return self._unreachable("delete", exc, False)

    def get_many(self, *args, **kwargs):
        try:
            return super().get_many(*args, **kwargs)
        except UNREACHABLE as exc:
            return self._unreachable("get_many", exc, {})

    def has_key(self, *args, **kwargs):
        try:
            return super().has_key(*args, **kwargs)
        except UNREACHABLE as exc:
            return self._unreachable("has_key", exc, False)

    def incr(self, key, delta=1, version=None):
        try:
            return super().incr(key, delta, version)
        except UNREACHABLE as exc:
            # Django's "no such key": callers that bump a counter then set it afresh, which is
            # a no-op here; readers of the counter miss too, so nothing stale is served.
            self._unreachable("incr", exc, None)
            raise ValueError(f"Key '{key}' not found (cache unreachable)") from exc

    def set_many(self, *args, **kwargs):
        try:
            return super().set_many(*args, **kwargs)
        except UNREACHABLE as exc:
            # Django's contract: the keys that failed to be set.
            self._unreachable("set_many", exc, None)
            data = args[0] if args else kwargs.get("data", {})
            return list(data)

    def delete_many(self, *args, **kwargs):
        try:
            return super().delete_many(*args, **kwargs)
        except UNREACHABLE as exc:
            return self._unreachable("delete_many", exc, None)

    def clear(self):
        try:
            return super().clear()
        except UNREACHABLE as exc:
            return self._unreachable("clear", exc, False)
