from django.urls import path

from . import api

app_name = "api"

urlpatterns = [
    path("openapi.json", api.openapi, name="openapi"),
    path("sites", api.sites, name="sites"),
    path("vantages", api.vantages, name="vantages"),
    path("measurements", api.measurements, name="measurements"),
    path("measurements.csv", api.measurements_csv, name="measurements_csv"),
    path("measurements/<slug:slug>", api.measurement_detail, name="measurement"),
    path("measurements/<slug:slug>/trace", api.measurement_trace, name="trace"),
]
