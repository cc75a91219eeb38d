"""What a finished run stores and how it is read back: the prober's `result` event (prober/EVENTS.md)
mapped onto Measurement columns (which columns, and where each is read from, is declared once in
vocab.RESULT_FIELDS); the trace built from its `sample` events, as CSV rows and thinned for the
permalink's charts; and the signal other apps (alerts, sweeps) listen to once it is stored.

measure never imports its listeners: an app that wants to react to results connects to
result_stored in its AppConfig.ready().
"""

from django.dispatch import Signal
from django.utils.html import json_script

from .vocab import RESULT_FIELDS, Mode

# Sent once a finished measurement's result and trace are committed (never inside the
# transaction: a listener that fails or is slow must not undo or delay the stored result).
# Arguments: measurement_id (int). Sender: the Measurement class.
result_stored = Signal()


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


# The trace.

AGGREGATE_KEYS = ("t", "inst_bps", "cumu_bps", "cwnd_bytes")
# snd_wnd_bytes (the peer's receive window) and rwnd_limited_us (cumulative time the peer's
# window held the sender back) tell a server-window-limited path from a slow one.
STREAM_KEYS = (
    "cwnd_bytes",
    "ssthresh_bytes",
    "rtt_us",
    "bytes_acked",
    "total_retrans",
    "snd_wnd_bytes",
    "rwnd_limited_us",
    "bbr_mode",
    "bbr_bw_bps",
    "bbr_min_rtt_us",
    "bbr_pacing_gain",
    "bbr_cwnd_gain",
)
# BBR's state comes as a nested object per stream (null unless the stream runs BBR).
_BBR_PREFIX = "bbr_"


def _stream_value(stream, key):
    if key.startswith(_BBR_PREFIX):
        return (stream.get("bbr") or {}).get(key[len(_BBR_PREFIX) :])
    return stream.get(key)


class TraceBuilder:
    def __init__(self):
        self.columns = {key: [] for key in AGGREGATE_KEYS}
        self.streams = {}  # stream id -> {key: [...]}, lists aligned with self.columns["t"]
        self.slow_start_end_s = None

    def __len__(self):
        return len(self.columns["t"])

    def add_sample(self, event):
        n = len(self)
        for key in AGGREGATE_KEYS:
            self.columns[key].append(event.get(key))
        seen = set()
        for stream in event.get("streams") or ():
            sid = stream.get("id")
            if sid in seen:
                continue
            seen.add(sid)
            columns = self.streams.get(sid)
            if columns is None:
                # A stream that appears late gets nulls for the samples before it.
                columns = self.streams[sid] = {key: [None] * n for key in STREAM_KEYS}
            for key in STREAM_KEYS:
                columns[key].append(_stream_value(stream, key))
        for sid, columns in self.streams.items():
            if sid not in seen:
                for key in STREAM_KEYS:
                    columns[key].append(None)

    def to_dict(self):
        return {
            **{key: list(values) for key, values in self.columns.items()},
            "streams": [
                {"id": sid, **{key: list(v) for key, v in cols.items()}}
                for sid, cols in sorted(self.streams.items(), key=lambda item: (item[0] is None, item[0] or 0))
            ],
            "slow_start_end_s": self.slow_start_end_s,
        }


def _cell(value):
    return "" if value is None else value


def trace_csv_rows(trace):
    """CSV rows (header first) for a MeasurementTrace or its to_dict(): one row per sample,
    the aggregate columns then the stream columns named s<n>_<field>, n = 1..N in the order
    of the streams (as the charts' legends number them: iperf3's own ids, 1, 3, 4, 5 for four
    streams, read as if streams were missing; the trace's JSON keeps them as `id`). Traces
    stored before a stream field existed have no column for it (rather than a column of blanks)."""
    data = trace if isinstance(trace, dict) else trace.to_dict()
    streams = data.get("streams") or []
    keys = [
        key
        for key in STREAM_KEYS
        if streams
        and key in streams[0]
        # BBR's columns only when some stream ran BBR: a CUBIC trace has no use for them.
        and (not key.startswith(_BBR_PREFIX) or any(v is not None for s in streams for v in s[key]))
    ]
    yield list(AGGREGATE_KEYS) + [f"s{n}_{key}" for n in range(1, len(streams) + 1) for key in keys]
    for i, t in enumerate(data.get("t") or []):
        row = [t] + [_cell(data[key][i]) for key in AGGREGATE_KEYS[1:]]
        for stream in streams:
            row.extend(_cell(stream[key][i]) if key in stream else "" for key in keys)
        yield row


# A chart is at most ~1000 pixels wide: a 60 s, 16-stream trace at 20 ms (3000 samples) would
# put megabytes of numbers into the page for nothing. The downloads carry every sample.
CHART_MAX_SAMPLES = 1500


def chart_trace(data, **extra):
    """What the permalink's charts need from a stored trace's to_dict(): the thinned trace,
    with `extra` keys beside its series (not thinned), already as the page's JSON script
    (encoding thousands of numbers is most of the page's cost), its number of streams and the
    stride."""
    data = dict(thin_trace(data), **extra)
    return {
        "json": json_script(data, "trace-data"),
        "streams": len(data.get("streams") or []),
        "stride": data.get("stride"),
    }


def thin_trace(data, limit=CHART_MAX_SAMPLES):
    """Every k-th sample of every series, k the smallest stride that fits `limit`."""
    n = len(data.get("t") or [])
    stride = -(-n // limit) if n > limit else 1
    if stride == 1:
        return data
    thinned = {
        key: (value[::stride] if isinstance(value, list) and key != "streams" else value) for key, value in data.items()
    }
    thinned["streams"] = [
        {key: (value[::stride] if isinstance(value, list) else value) for key, value in s.items()}
        for s in data.get("streams") or []
    ]
    thinned["stride"] = stride
    return thinned


def quick_window(m):
    """[start, end] in seconds since the first byte of the window quick mode measured, for the
    charts to shade, or None. Only when the window answered (converged, or at its deadline) and
    so ended the test: it ends at the test's end and spans quick_window_s back from there
    (EVENTS.md). A window that fell back, or validate's, ended somewhere inside a run that went
    on, which the stored result does not say."""
    if not (m.mode == Mode.QUICK and m.quick_mode_entered and m.quick_answer_taken):
        return None
    if m.quick_window_s is None or m.elapsed_s is None:
        return None
    return [round(max(0.0, m.elapsed_s - m.quick_window_s), 3), round(m.elapsed_s, 3)]
