"""The pages of the measure app (the API has its own urlconf, api_urls.py)."""

from django.urls import path

from . import views

app_name = "measure"

urlpatterns = [
    path("", views.sites, name="sites"),
    path("healthz", views.healthz, name="healthz"),
    path("measure/new", views.measure_new, name="new"),
    path("m/<slug:slug>/", views.measurement, name="measurement"),
    path("m/<slug:slug>/longer", views.measure_longer, name="longer"),
    path("m/<slug:slug>/trace.csv", views.trace_csv, name="trace_csv"),
    path("m/<slug:slug>/trace.json", views.trace_json, name="trace_json"),
    path("sites/<slug:slug>/", views.site_page, name="site"),
    path("grid/", views.grid_page, name="grid"),
    path("sites/<slug:slug>/measurements.csv", views.site_measurements_csv, name="site_csv"),
]
