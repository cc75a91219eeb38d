# Top-level entry points. `make run` and `make test` work on a fresh machine
# (the test run expects PostgreSQL and Redis on 127.0.0.1, as in CI).
VENV    ?= .venv
PY      := $(VENV)/bin/python
PYTHON3 ?= python3

# The tests run against real PostgreSQL and Redis; override on the command line.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/portal
TEST_REDIS_URL    ?= redis://127.0.0.1:6379/0
# With DEBUG off the portal refuses to start without a key; the tests and benchmarks use this one.
TEST_SECRET_KEY   ?= insecure-test-only-key-for-make-test-and-benchmarks-0123456789
PYTEST_ARGS       ?=
# e.g. "--csv-rows 0 --seconds 30" (scripts/bench_portal.py --help)
BENCH_PORTAL_ARGS ?=

.PHONY: all prober check-prober packages-run packages-test venv venv-test lint test run bench-prober bench-quick bench-portal bench-sweep bench-load fuzz lab screenshots clean

all: prober

prober:
	$(MAKE) -C prober

check-prober:
	$(MAKE) -C prober check

# Debian packages first (one list: .ci/debian-packages): installed when run as root, else
# the one apt-get line to run is printed and make stops.
packages-run:
	scripts/debian_packages.sh run

packages-test:
	scripts/debian_packages.sh test

# The venv is rebuilt only when the requirements change. `venv` is what the product needs
# (`make run`); `venv-test` adds the test, lint and benchmark tools (requirements-test.txt)
# on top, so a `make run` machine does not carry Playwright, locust, matplotlib or ruff.
venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON3) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	touch $@

venv-test: $(VENV)/.installed-test
$(VENV)/.installed-test: requirements-test.txt $(VENV)/.installed
	$(PY) -m pip install -q -r requirements-test.txt
	touch $@

# Lint first: a lint error fails `make test` (and so CI) in seconds. Rules: pyproject.toml.
lint: venv-test
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

test: packages-test venv-test lint prober lab check-prober
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) SECRET_KEY=$(TEST_SECRET_KEY) \
		$(PY) -m pytest $(PYTEST_ARGS)

run: packages-run venv prober lab
	$(PY) scripts/run.py

bench-prober: venv-test prober
	$(PY) prober/bench/bench_prober.py

bench-quick: venv-test prober
	$(MAKE) -C prober lab
	$(PY) prober/bench/bench_quick.py $(if $(FULL),--full,) $(if $(RUNS),--runs $(RUNS),)

bench-portal: venv-test
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) SECRET_KEY=$(TEST_SECRET_KEY) \
		$(PY) scripts/bench_portal.py $(BENCH_PORTAL_ARGS)

# Run it under `flock /work/bench.lock` on a shared machine.
bench-sweep: venv-test prober
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) SECRET_KEY=$(TEST_SECRET_KEY) \
		$(PY) scripts/bench_sweep.py

# 50 locust users for 5 minutes through nginx (needs Debian's nginx and iperf3); run it under
# `flock /work/bench.lock` on a shared machine. Report: docs/bench-load.md.
bench-load: venv-test prober
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) SECRET_KEY=$(TEST_SECRET_KEY) \
		$(PY) scripts/bench_load.py

fuzz:
	$(MAKE) -C prober fuzz

lab:
	$(MAKE) -C prober lab

# The README's tour (docs/screenshots/) retaken from today's pages: make run's own demo and
# first tests (with root, its lab path too: tests/browser/test_tour.py), and the full and
# failed runs of test_progress.py. Look at the pictures before committing them.
screenshots: venv-test prober lab
	SCREENSHOTS_DIR=$(CURDIR)/docs/screenshots \
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) SECRET_KEY=$(TEST_SECRET_KEY) \
		$(PY) -m pytest $(PYTEST_ARGS) tests/browser/test_tour.py \
		tests/browser/test_progress.py::test_progress_live_chart_fills_during_full_run \
		tests/browser/test_progress.py::test_progress_refused_target_shows_failure

clean:
	$(MAKE) -C prober clean
