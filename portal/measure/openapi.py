"""The OpenAPI 3 description of /api/v1/, written by hand to match portal/measure/api.py."""
from .api import RESULT_FIELDS
from .forms import DURATION_RANGE, STREAMS_RANGE

ERRORS = {"type": "object", "properties": {"errors": {"type": "object", "additionalProperties": {
    "type": "array", "items": {"type": "string"}}}}, "required": ["errors"],
    "example": {"errors": {"duration_s": ["duration_s 0 is out of range: allowed 1 to 60 seconds."]}}}


def _error(description):
    return {"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Errors"}}}}


def _ok(description, schema, media="application/json"):
    return {"description": description, "content": {media: {"schema": schema}}}


SLUG = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"},
        "description": "The measurement's slug (the same as in its permalink /m/<slug>/)."}
UNAUTHORIZED = _error("Missing or invalid bearer token.")
NUMBER_OR_NULL = {"type": ["number", "null"]}


def schema():
    request_body = {
        "type": "object", "required": ["site"], "additionalProperties": False,
        "properties": {
            "site": {"type": "string", "description": "Slug of a registered, enabled site."},
            "vantage": {"type": "string", "description": "Vantage name; optional when only one is enabled."},
            "mode": {"type": "string", "enum": ["quick", "full", "validate"], "default": "quick"},
            "duration_s": {"type": "integer", "minimum": DURATION_RANGE[0], "maximum": DURATION_RANGE[1], "default": 10},
            "streams": {"type": "integer", "minimum": STREAMS_RANGE[0], "maximum": STREAMS_RANGE[1], "default": 1},
            "window": {"type": "string", "pattern": "^[0-9]+[KkMm]?$",
                       "description": "Socket buffer; K/M are 1024-based; 4K to 16M; omit for the kernel default."},
            "congestion": {"type": "string", "description": "One of the vantage's congestion_controls; omit for its default."},
        },
    }
    measurement = {
        "type": "object",
        "properties": {
            "id": {"type": "string"}, "slug": {"type": "string"},
            "status": {"type": "string", "enum": ["queued", "running", "done", "failed"]},
            "permalink": {"type": "string", "format": "uri"},
            "site": {"type": "string"}, "vantage": {"type": "string"},
            "mode": {"type": "string"}, "duration_s": {"type": "integer"}, "streams": {"type": "integer"},
            "window_bytes": {"type": ["integer", "null"]}, "congestion": {"type": "string"},
            "created_at": {"type": "string", "format": "date-time"},
            "started_at": {"type": ["string", "null"], "format": "date-time"},
            "finished_at": {"type": ["string", "null"], "format": "date-time"},
            "failure_code": {"type": "string"}, "failure_reason": {"type": "string"},
            "headline_bps": NUMBER_OR_NULL,
            "results": {"type": ["object", "null"], "description": "When status is done; units as in prober/EVENTS.md.",
                        "properties": {name: {"type": ["number", "string", "boolean", "null"]} for name in RESULT_FIELDS}},
            "progress": {"type": ["object", "null"], "description": "While queued or running.",
                         "properties": {"phase": {"type": "string"}, "elapsed_s": {"type": "number"},
                                        "samples": {"type": "array", "items": {"type": "object"}}}},
        },
    }
    series = {"type": "array", "items": NUMBER_OR_NULL}
    trace = {
        "type": "object",
        "properties": {
            "t": series, "inst_bps": series, "cumu_bps": series, "cwnd_bytes": series,
            "streams": {"type": "array", "items": {"type": "object", "properties": {
                "id": {"type": "integer"}, "cwnd_bytes": series, "ssthresh_bytes": series, "rtt_us": series,
                "bytes_acked": series, "total_retrans": series}}},
            "slow_start_end_s": NUMBER_OR_NULL,
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "quickprobe portal API", "version": "1",
                 "description": "Achievable TCP throughput tests against registered iperf servers. "
                                "Authenticate with 'Authorization: Bearer <token>' (python manage.py issue_token USERNAME)."},
        "servers": [{"url": "/api/v1"}],
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Errors": ERRORS, "MeasurementRequest": request_body, "Measurement": measurement, "Trace": trace},
        },
        "paths": {
            "/sites": {"get": {"summary": "Registered, enabled sites", "responses": {
                "200": _ok("Sites", {"type": "object", "properties": {"sites": {"type": "array", "items": {
                    "type": "object", "properties": {k: {"type": "string"} for k in ("slug", "name", "host", "protocol", "location")}
                    | {"port": {"type": "integer"}}}}}}),
                "401": UNAUTHORIZED}}},
            "/vantages": {"get": {"summary": "Enabled vantages (prober hosts)", "responses": {
                "200": _ok("Vantages", {"type": "object"}), "401": UNAUTHORIZED}}},
            "/measurements": {"post": {
                "summary": "Request a measurement",
                "requestBody": {"required": True, "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/MeasurementRequest"}},
                    "application/x-www-form-urlencoded": {"schema": {"$ref": "#/components/schemas/MeasurementRequest"}}}},
                "responses": {
                    "201": _ok("Queued", {"type": "object", "properties": {
                        "id": {"type": "string"}, "slug": {"type": "string"}, "status": {"type": "string"},
                        "permalink": {"type": "string", "format": "uri"}}}),
                    "400": _error("Bad parameters: each field's messages say what is allowed."),
                    "401": UNAUTHORIZED}}},
            "/measurements/{id}": {"get": {
                "summary": "Status and results", "parameters": [SLUG],
                "responses": {"200": _ok("The measurement", {"$ref": "#/components/schemas/Measurement"}),
                              "401": UNAUTHORIZED, "404": _error("No such measurement.")}}},
            "/measurements/{id}/trace": {"get": {
                "summary": "The per-sample trace (once done)", "parameters": [SLUG],
                "responses": {"200": _ok("The trace", {"$ref": "#/components/schemas/Trace"}),
                              "401": UNAUTHORIZED, "404": _error("No such measurement, or no trace yet.")}}},
            "/measurements.csv": {"get": {
                "summary": "Measurements as CSV, oldest first, streamed",
                "parameters": [
                    {"name": "site", "in": "query", "schema": {"type": "string"}, "description": "A site slug."},
                    {"name": "since", "in": "query", "schema": {"type": "string"},
                     "description": "YYYY-MM-DD (from that day's start, UTC) or ISO 8601 datetime (inclusive)."},
                    {"name": "until", "in": "query", "schema": {"type": "string"},
                     "description": "YYYY-MM-DD (through the end of that day, UTC) or ISO 8601 datetime (inclusive)."}],
                "responses": {"200": _ok("CSV, header first", {"type": "string"}, media="text/csv"),
                              "400": _error("Bad filter."), "401": UNAUTHORIZED}}},
        },
    }
