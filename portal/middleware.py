"""Content-Security-Policy for every response (Django 5.2 has no built-in CSP).

Scripts only from our own origin: page data reaches Chart.js through `json_script`, never
inline code. Styles allow inline attributes because Chart.js sizes its canvas through them.
"""

from django.conf import settings

POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)


def content_security_policy(get_response):
    policy = getattr(settings, "CONTENT_SECURITY_POLICY", POLICY)

    def middleware(request):
        response = get_response(request)
        response.headers.setdefault("Content-Security-Policy", policy)
        return response

    return middleware
