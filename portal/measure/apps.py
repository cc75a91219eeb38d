"""The measure app: sites, vantages, measurements, their pages, API and Celery tasks."""

from django.apps import AppConfig


class MeasureConfig(AppConfig):
    name = "portal.measure"
    label = "measure"
    verbose_name = "Measurements"
    default_auto_field = "django.db.models.BigAutoField"
