from django.apps import AppConfig


class SweepsConfig(AppConfig):
    """Scheduled sweeps: a parameter matrix run against many sites from many vantages. Uses
    portal.measure through its models and services; measure never imports this app."""

    name = "portal.sweeps"
    label = "sweeps"
    verbose_name = "Sweeps"
    default_auto_field = "django.db.models.BigAutoField"
