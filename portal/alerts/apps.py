from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "portal.alerts"
    label = "alerts"
    verbose_name = "Alerts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # measure never imports alerts: it sends result_stored and asks registered flaggers.
        from portal.measure import paths
        from portal.measure.results import result_stored

        from . import receivers

        result_stored.connect(receivers.judge_result, dispatch_uid="alerts-judge-result")
        paths.register_path_flagger(receivers.paths_in_alert)
