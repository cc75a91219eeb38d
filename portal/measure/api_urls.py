"""/api/v1/: the URLs ninja builds from the operations in api.py (and openapi.json, docs)."""
from .api import api

app_name = "api"
urlpatterns = api.urls[0]
