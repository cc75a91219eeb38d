from django.shortcuts import render
from django.views.decorators.http import require_GET

from portal.measure.views import page_number

from .models import Alert

CLOSED_PAGE_SIZE = 50


@require_GET
def alert_list(request):
    """Open alerts (all of them: a handful) and closed ones, newest first, a page at a time.
    Readable without login, like the site pages whose results the alerts are about."""
    alerts = Alert.objects.select_related("rule", "site", "vantage").prefetch_related("deliveries")
    page = page_number(request.GET.get("page"))
    offset = (page - 1) * CLOSED_PAGE_SIZE
    closed = list(
        alerts.filter(closed_at__isnull=False).order_by("-closed_at", "-pk")[offset : offset + CLOSED_PAGE_SIZE + 1]
    )
    return render(
        request,
        "alerts/alerts.html",
        {
            "open_alerts": alerts.filter(closed_at__isnull=True).order_by("-opened_at"),
            "closed_alerts": closed[:CLOSED_PAGE_SIZE],
            "page": page,
            "has_next": len(closed) > CLOSED_PAGE_SIZE,
        },
    )
