"""Dates and times as the portal's pages write them (2026-11-26 19:10:34 UTC), for every place
that formats one without saying how: the admin above all, which printed "7:10 p.m." beside the
pages' "19:10:34 UTC". TIME_ZONE is UTC, so "T" always reads UTC."""

DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATETIME_FORMAT = "Y-m-d H:i T"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s T"
MONTH_DAY_FORMAT = "F j"
YEAR_MONTH_FORMAT = "F Y"
