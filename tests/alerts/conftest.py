# The e2e worker fixture: a real prefork Celery worker against the test database.
from tests.e2e.conftest import start_worker  # noqa: F401
