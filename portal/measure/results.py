"""Maps the prober's `result` event (prober/EVENTS.md) onto Measurement columns."""

# column name -> key in the result event, for the fields copied one to one
_DIRECT = {
    "quick_mode_entered": "quick_mode_entered",
    "quick_bps": "quick_bps",
    "cumulative_bps": "cumulative_bps",
    "full_bps": "full_bps",
    "bytes_sent": "bytes_sent",
    "server_bytes": "server_bytes",
    "elapsed_s": "elapsed_s",
    "slow_start_end_s": "slow_start_end_s",
    "retransmits": "retransmits",
    "rtt_us": "rtt_us",
    "min_rtt_us": "min_rtt_us",
    "mss_bytes": "mss_bytes",
    "time_saved_pct": "time_saved_pct",
    "traffic_saved_pct": "traffic_saved_pct",
    "full_time_s": "full_time_s",
    "full_bytes_estimate": "full_bytes_estimate",
}


def result_fields(event):
    """Column values for a `result` event; unknown values (null) stay None / ""."""
    fields = {column: event.get(key) for column, key in _DIRECT.items()}
    fields["rule"] = event.get("rule") or ""
    fields["congestion_used"] = event.get("congestion") or ""
    window = event.get("window") or {}
    fields["window_requested_bytes"] = window.get("requested_bytes")
    fields["window_given_bytes"] = window.get("given_bytes")
    validate = event.get("validate") or {}
    fields["validate_quick_bps"] = validate.get("quick_bps")
    fields["validate_error_pct"] = validate.get("error_pct")
    fields["result"] = event
    return fields
