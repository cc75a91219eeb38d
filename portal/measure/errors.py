"""Answers to requests the portal cannot serve, in words: JSON {"errors": {field: [message]}}
under /api/, a page elsewhere. Django's own answers are a bare 405, "Bad Request (400)" for an
oversized body and a 404 page reading "Resolver404"; these say what was wrong and what is
allowed. Wired in settings.MIDDLEWARE (405) and portal/urls.py (handler400, handler404).
"""

from django.conf import settings
from django.core.exceptions import BadRequest, RequestDataTooBig, TooManyFieldsSent
from django.http import JsonResponse
from django.shortcuts import render

API_PREFIX = "/api/"


def _answer(request, status, field, message, title):
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"errors": {field: [message]}}, status=status)
    return render(request, "4xx.html", {"title": title, "message": message}, status=status)


def head_as_get(get_response):
    """Middleware: HEAD is answered as GET is (RFC 9110), by every view; the server (gunicorn,
    the test client) sends the headers only. Views decorated with require_GET would say 405."""

    def middleware(request):
        if request.method != "HEAD":
            return get_response(request)
        request.method = "GET"
        try:
            return get_response(request)
        finally:
            request.method = "HEAD"

    return middleware


def explain_method_not_allowed(get_response):
    """Middleware: a 405 names the method and the ones allowed (Django's decorators send an
    empty body, ninja "Method not allowed")."""

    def middleware(request):
        response = get_response(request)
        if response.status_code != 405 or response.get("Content-Type", "").startswith("application/json"):
            return response
        # Sorted: ninja builds the list from a set, so its order would change with the hash seed.
        allowed = ", ".join(sorted(m.strip() for m in response.get("Allow", "").split(",") if m.strip()))
        explained = _answer(
            request,
            405,
            "method",
            f"{request.method} is not allowed on {request.path}: allowed are {allowed or 'none'}.",
            "Method not allowed",
        )
        explained["Allow"] = allowed
        return explained

    return middleware


def bad_request(request, exception=None):
    """handler400: what Django refused before any view ran (body size, field count), and a
    view's BadRequest, whose message says what is wrong and what is allowed."""
    if isinstance(exception, BadRequest) and exception.args:
        return _answer(request, 400, "request", str(exception), "Bad request")
    if isinstance(exception, RequestDataTooBig):
        size = request.META.get("CONTENT_LENGTH") or "too many"
        return _answer(
            request,
            413,
            "body",
            f"the request body is {size} bytes: at most {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes are allowed.",
            "Request too large",
        )
    if isinstance(exception, TooManyFieldsSent):
        return _answer(
            request,
            400,
            "body",
            f"the request has too many fields: at most {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} are allowed.",
            "Bad request",
        )
    return _answer(request, 400, "request", "the request could not be read: check its headers and body.", "Bad request")


def page_not_found(request, exception=None):
    """handler404: a Http404's own sentence when it has one, else where there is nothing."""
    message = exception.args[0] if exception is not None and exception.args else None
    if not isinstance(message, str) or not message:  # the URL resolver's is a dict of patterns tried
        message = f"There is nothing at {request.path}."
    if request.path.startswith(API_PREFIX):
        return JsonResponse(
            {"errors": {"path": [f"{message} The API's endpoints are listed in /api/v1/openapi.json."]}}, status=404
        )
    return render(request, "404.html", {"exception": message, "request_path": request.path}, status=404)
