"""Maps the prober's `result` event (prober/EVENTS.md) onto Measurement columns; which
columns, and where each is read from, is declared once in vocab.RESULT_FIELDS."""

from .vocab import RESULT_FIELDS


def result_fields(event, summary=None):
    """Column values for a `result` event (and the trace_summary() of its trace); unknown values
    (null) stay None / ""."""
    # Figures summarised from the trace are read from "trace" (see the ResultField sources).
    source = {**event, "trace": summary or {}}
    fields = {field.name: field.read(source) for field in RESULT_FIELDS}
    for field in RESULT_FIELDS:
        if field.kind == "str":
            # A longer text than the column holds (quick_bound_text is a sentence) must not
            # fail the result's write and lose it; the whole text stays in `result`.
            fields[field.name] = str(fields[field.name])[: field.max_length]
    fields["result"] = event
    return fields


# The share of a run the peer's receive window held the sender back (tcpi_rwnd_limited) above
# which the result is marked window-limited: the server's window, not the path, set the rate.
# On the lab's 8 KB-window server it is ~60 %, on an unconstrained iperf 2 server ~5 %.
WINDOW_LIMITED_PCT = 20.0


def _last(values):
    for i in range(len(values) - 1, -1, -1):
        if values[i] is not None:
            return i, values[i]
    return None, None


def trace_summary(trace_dict):
    """Figures summarised from the trace: the peer's window at the end (summed over streams),
    the rwnd-limited share of the run, and whether that marks the result window-limited.
    None where the samples do not carry the fields (an older prober)."""
    t = trace_dict.get("t") or []
    limited_us = elapsed_us = 0.0
    window = None
    for stream in trace_dict.get("streams") or []:
        i, value = _last(stream.get("rwnd_limited_us") or [])
        if i is not None and t[i]:
            limited_us += value
            elapsed_us += t[i] * 1e6
        _, peer = _last(stream.get("snd_wnd_bytes") or [])
        if peer is not None:
            window = (window or 0) + peer
    pct = min(100.0, 100.0 * limited_us / elapsed_us) if elapsed_us else None
    return {
        "peer_window_bytes": window,
        "rwnd_limited_pct": pct,
        "window_limited": None if pct is None else pct >= WINDOW_LIMITED_PCT,
    }
