"""The project urlconf: the admin, login / logout, the API, the sweeps pages and the measure app's pages."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", include("portal.measure.api_urls")),
    path("", include("portal.sweeps.urls")),
    path("alerts/", include("portal.alerts.urls")),
    path("", include("portal.measure.urls")),
]

# Errors in words (JSON under /api/, a page elsewhere): portal/measure/errors.py.
handler400 = "portal.measure.errors.bad_request"
handler404 = "portal.measure.errors.page_not_found"
