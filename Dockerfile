# One image for web, worker and beat (docker-compose.yml). The prober is built in a first
# stage with the same `make -C prober` that `make prober` and the tests use.
FROM debian:bookworm-slim AS prober
RUN apt-get update && apt-get install -y --no-install-recommends make gcc libc6-dev pkg-config libjansson-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY prober/Makefile prober/Makefile
COPY prober/src prober/src
RUN make -C prober build/quickprobe

FROM python:3.11-slim-bookworm
# libjansson4: the prober's one library; iperf3/iperf: to run a local demo target if wanted.
RUN apt-get update && apt-get install -y --no-install-recommends libjansson4 iperf3 iperf procps \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY manage.py .
COPY portal portal
COPY workers workers
COPY templates templates
COPY static static
COPY prober/EVENTS.md prober/EVENTS.md
COPY --from=prober /src/prober/build/quickprobe /app/prober/build/quickprobe
ENV PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=portal.settings \
    QUICKPROBE_BIN=/app/prober/build/quickprobe \
    STATIC_ROOT=/app/staticfiles
# collectstatic needs no database; a throwaway key keeps settings happy at build time.
RUN SECRET_KEY=build-only python manage.py collectstatic --noinput
RUN useradd --system --uid 10001 portal
USER portal
EXPOSE 8000
CMD ["gunicorn", "portal.wsgi", "-b", "0.0.0.0:8000", "--workers", "3", "--threads", "4", "--access-logfile", "-"]
