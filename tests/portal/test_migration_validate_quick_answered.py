"""Migration 0009 copies validate.quick_answered out of the stored result JSON into its own
column (the path page reads the column, never the JSON): rows from provers since issue 24 get
their value, older rows stay null."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("measure", "0008_vantage_max_concurrent_tests")]
AFTER = [("measure", "0009_validate_quick_answered")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_migration_validate_quick_answered_backfills_from_result():
    apps = _migrate(BEFORE)
    Site = apps.get_model("measure", "Site")
    Vantage = apps.get_model("measure", "Vantage")
    Measurement = apps.get_model("measure", "Measurement")
    site = Site.objects.create(name="Loopback", slug="loopback", host="127.0.0.1", port=5201)
    vantage = Vantage.objects.create(name="local")
    results = {
        "answered": {"mode": "validate", "validate": {"quick_bps": 1e8, "quick_answered": True}},
        "fell-back": {"mode": "validate", "validate": {"quick_bps": 1e8, "quick_answered": False}},
        "older": {"mode": "validate", "validate": {"quick_bps": 1e8, "quick_converged": True}},
        "quick": {"mode": "quick", "quick_answered": True},
        "none": None,
    }
    for slug, result in results.items():
        Measurement.objects.create(slug=slug, site=site, vantage=vantage, mode="validate", result=result)
    try:
        apps = _migrate(AFTER)
        Measurement = apps.get_model("measure", "Measurement")
        got = dict(Measurement.objects.values_list("slug", "validate_quick_answered"))
        assert got == {"answered": True, "fell-back": False, "older": None, "quick": None, "none": None}
        # The JSON itself is untouched.
        assert Measurement.objects.get(slug="fell-back").result == results["fell-back"]
    finally:
        Measurement.objects.all().delete()
        Site.objects.all().delete()
        Vantage.objects.all().delete()
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
