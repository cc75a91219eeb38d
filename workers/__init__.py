"""What runs on a prober host beside the Celery worker: the prober as a child process
(prober.py). Plain Python; the portal imports it, never the reverse."""
