"""The quickprobe portal, a Django project. Importing it loads the Celery app, so that tasks
sent from the web process use this app's broker (Celery's Django layout)."""

from .celery import app as celery_app

__all__ = ("celery_app",)
