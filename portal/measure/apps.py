from django.apps import AppConfig


class MeasureConfig(AppConfig):
    name = "portal.measure"
    label = "measure"
    verbose_name = "Measurements"
    default_auto_field = "django.db.models.BigAutoField"
