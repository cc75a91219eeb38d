"""/api/v1/: the URLs ninja builds from the operations in api.py, and openapi.json. Ninja's own
root view only says where its docs page would be (there is none), so /api/v1/ is left to
handler404 like any unknown path."""

from .api import api

app_name = "api"
urlpatterns = [pattern for pattern in api.urls[0] if pattern.name != "api-root"]
