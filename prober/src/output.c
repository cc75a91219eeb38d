/* output.c: JSON Lines events (EVENTS.md) and an iperf-like human report. */
#include "output.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

static int g_json;

/* Choose JSON Lines (1) or the human report (0). */
void out_set_json(int json)
{
    g_json = json;
}

/* Print one event as a line and flush it; takes ownership of j. */
static void emit(json_t *j)
{
    if (!j)
        return;
    json_dumpf(j, stdout, JSON_COMPACT | JSON_REAL_PRECISION(10));
    fputc('\n', stdout);
    fflush(stdout);
    json_decref(j);
}

/* A byte count, or null when unknown (< 0). */
static json_t *j_count(int64_t v)
{
    return v < 0 ? json_null() : json_integer((json_int_t)v);
}

/* A real, or null when not known. */
static json_t *j_real_or_null(int known, double v)
{
    return known && isfinite(v) ? json_real(v) : json_null();
}

/* A string, or null when empty. */
static json_t *j_str_or_null(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

/* v with iperf's three significant digits, then the unit. */
static void fmt_sig3(char *buf, size_t len, double v, const char *unit)
{
    if (v < 9.995) snprintf(buf, len, "%.2f %s", v, unit);
    else if (v < 99.95) snprintf(buf, len, "%.1f %s", v, unit);
    else snprintf(buf, len, "%.0f %s", v, unit);
}

/* Bytes as iperf prints them (1024-based). */
static void fmt_bytes(char *buf, size_t len, double b)
{
    if (b >= 1000.0 * 1024 * 1024) fmt_sig3(buf, len, b / (1024.0 * 1024 * 1024), "GBytes");
    else if (b >= 1000.0 * 1024) fmt_sig3(buf, len, b / (1024.0 * 1024), "MBytes");
    else if (b >= 1000.0) fmt_sig3(buf, len, b / 1024.0, "KBytes");
    else snprintf(buf, len, "%.0f Bytes", b);
}

/* Bits per second as iperf prints them (1000-based). */
static void fmt_rate(char *buf, size_t len, double bps)
{
    if (bps >= 1e9) fmt_sig3(buf, len, bps / 1e9, "Gbits/sec");
    else if (bps >= 1e6) fmt_sig3(buf, len, bps / 1e6, "Mbits/sec");
    else if (bps >= 1e3) fmt_sig3(buf, len, bps / 1e3, "Kbits/sec");
    else snprintf(buf, len, "%.0f bits/sec", bps);
}

/* The window object: requested and given send buffer. */
static json_t *window_obj(const qp_run *r)
{
    return json_pack("{s:o, s:o}",
                     "requested_bytes", r->o->window_bytes ? json_integer((json_int_t)r->o->window_bytes) : json_null(),
                     "given_bytes", r->window_given_bytes > 0 ? json_integer(r->window_given_bytes) : json_null());
}

/* Print the human header and the -w warning. */
static void human_start(const qp_run *r)
{
    char a[32], b[32];

    printf("quickprobe %s: %s server %s (%s) port %d, %d stream%s, %s mode, congestion %s\n",
           QP_VERSION, r->o->iperf2 ? "iperf 2" : "iperf3", r->o->host, r->addr.text,
           r->o->port, r->n, r->n == 1 ? "" : "s", opts_mode_name(r->o->mode),
           r->congestion[0] ? r->congestion : "unknown");
    if (r->o->window_bytes && (uint64_t)r->window_given_bytes != r->o->window_bytes) {
        fmt_bytes(a, sizeof(a), (double)r->o->window_bytes);
        fmt_bytes(b, sizeof(b), (double)r->window_given_bytes);
        printf("TCP send buffer: %s (WARNING: requested %s)\n", b, a);
    }
    if (r->o->interval_s > 0)
        printf("[ ID] Interval           Transfer     Bitrate         Retr  Cwnd\n");
    fflush(stdout);
}

/* Print the start event (or the human header); r may be partly filled. */
void out_start(const qp_run *r)
{
    const qp_opts *o = r->o;
    struct utsname u;
    char host[256] = "";
    json_t *j;

    if (!g_json) {
        human_start(r);
        return;
    }
    if (uname(&u) < 0)
        u.release[0] = '\0';
    gethostname(host, sizeof(host) - 1);
    j = json_pack("{s:s, s:s, s:s, s:s}", "event", "start", "version", QP_VERSION,
                  "protocol", o->iperf2 ? "iperf2" : "iperf3", "mode", opts_mode_name(o->mode));
    json_object_set_new(j, "target", json_pack("{s:s, s:o, s:i}", "host", o->host,
                        "address", j_str_or_null(r->addr.text), "port", o->port));
    json_object_set_new(j, "params", json_pack("{s:i, s:i, s:i, s:i, s:i, s:f, s:b, s:f, s:f, s:o}",
                        "time_s", o->time_s, "streams", o->streams, "sample_ms", o->sample_ms,
                        "quick_ms", o->quick_ms, "quick_max_ms", o->quick_max_ms,
                        "quick_tolerance_pct", o->quick_tolerance_pct,
                        "until_converged", o->until_converged, "interval_s", o->interval_s,
                        "connect_timeout_s", o->connect_timeout_s, "window_requested_bytes",
                        o->window_bytes ? json_integer((json_int_t)o->window_bytes) : json_null()));
    json_object_set_new(j, "kernel", j_str_or_null(u.release));
    json_object_set_new(j, "congestion", j_str_or_null(r->congestion));
    json_object_set_new(j, "mss_bytes", r->mss_bytes ? json_integer(r->mss_bytes) : json_null());
    json_object_set_new(j, "window", window_obj(r));
    json_object_set_new(j, "hostname", j_str_or_null(host));
    emit(j);
}

/* Print a phase change. */
void out_phase(const char *phase, double t)
{
    if (!g_json)
        return;
    emit(json_pack("{s:s, s:s, s:f}", "event", "phase", "phase", phase, "t", t));
}

/* BBR's state from TCP_CC_INFO, or null when the stream is not BBR. */
static json_t *bbr_obj(const qp_tcpinfo *ti)
{
    const char *mode;

    if (!ti->has_bbr)
        return json_null();
    mode = qw_bbr_mode_name(qw_bbr_mode_from_gains(ti->bbr_pacing_gain, ti->bbr_cwnd_gain));
    return json_pack("{s:o, s:f, s:I, s:f, s:f}", "mode", j_str_or_null(mode),
                     "bw_bps", (double)ti->bbr_bw_bps, "min_rtt_us", (json_int_t)ti->bbr_min_rtt_us,
                     "pacing_gain", ti->bbr_pacing_gain / 256.0,
                     "cwnd_gain", ti->bbr_cwnd_gain / 256.0);
}

/* What the kernel counts as in flight (tcp_packets_in_flight): sent and not acked, less SACKed
 * and marked lost, plus retransmitted and not acked; in bytes at the MSS, 0 if that is
 * negative between two of TCP_INFO's reads of its counters. */
static json_int_t in_flight_bytes(const qp_tcpinfo *ti)
{
    int64_t segs = (int64_t)ti->unacked_segments - ti->sacked_segments - ti->lost_segments +
                   ti->retrans_out_segments;

    return segs > 0 ? (json_int_t)(segs * ti->mss_bytes) : 0;
}

/* One stream's part of a sample event. */
static json_t *stream_sample(const qp_stream *s)
{
    const qp_tcpinfo *ti = &s->ti;
    json_t *j = json_pack("{s:i, s:I, s:o, s:I, s:I, s:I, s:I}", "id", s->id,
                          "cwnd_bytes", (json_int_t)ti->cwnd_bytes, "ssthresh_bytes",
                          ti->ssthresh_bytes ? json_integer((json_int_t)ti->ssthresh_bytes) : json_null(),
                          "rtt_us", (json_int_t)ti->rtt_us, "rttvar_us", (json_int_t)ti->rttvar_us,
                          "min_rtt_us", (json_int_t)ti->min_rtt_us, "mss_bytes", (json_int_t)ti->mss_bytes);

    json_object_set_new(j, "bytes_sent", json_integer((json_int_t)s->sent));
    json_object_set_new(j, "bytes_acked", json_integer((json_int_t)s->acked));
    json_object_set_new(j, "bytes_retrans", json_integer((json_int_t)ti->bytes_retrans));
    json_object_set_new(j, "sacked_bytes",
                        json_integer((json_int_t)ti->sacked_segments * ti->mss_bytes));
    json_object_set_new(j, "total_retrans", json_integer(ti->total_retrans));
    json_object_set_new(j, "in_flight_bytes", json_integer(in_flight_bytes(ti)));
    json_object_set_new(j, "delivery_rate_bps", json_real((double)ti->delivery_rate_bps));
    json_object_set_new(j, "snd_wnd_bytes", json_integer(ti->snd_wnd_bytes));
    json_object_set_new(j, "snd_wscale", json_integer(ti->snd_wscale));
    json_object_set_new(j, "rwnd_limited_us", json_integer((json_int_t)ti->rwnd_limited_us));
    json_object_set_new(j, "sndbuf_limited_us", json_integer((json_int_t)ti->sndbuf_limited_us));
    json_object_set_new(j, "ca_state", json_integer(ti->ca_state));
    json_object_set_new(j, "reordering_segments", json_integer(ti->reordering_segments));
    json_object_set_new(j, "reord_seen", json_integer(ti->reord_seen));
    json_object_set_new(j, "dsack_dups", json_integer(ti->dsack_dups));
    json_object_set_new(j, "in_slow_start", json_boolean(s->rule == SS_RULE_NONE));
    json_object_set_new(j, "bbr", bbr_obj(ti));
    return j;
}

/* Print one sample (JSON only). */
void out_sample(const qp_run *r, const out_agg *a)
{
    json_t *j, *arr;

    if (!g_json)
        return;
    j = json_pack("{s:s, s:f, s:f, s:f, s:I, s:I, s:I, s:I}", "event", "sample", "t", a->t,
                  "inst_bps", a->inst_bps, "cumu_bps", a->cumu_bps,
                  "bytes_sent", (json_int_t)a->bytes_sent, "bytes_acked", (json_int_t)a->bytes_acked,
                  "cwnd_bytes", (json_int_t)a->cwnd_bytes, "retransmits", (json_int_t)a->retransmits);
    arr = json_array();
    for (int i = 0; i < r->n; i++)
        json_array_append_new(arr, stream_sample(&r->streams[i]));
    json_object_set_new(j, "streams", arr);
    emit(j);
}

/* Print the end of slow-start. */
void out_ss_end(const qp_run *r)
{
    uint64_t cwnd = 0;
    json_t *j, *arr;
    char b[32];

    for (int i = 0; i < r->n; i++)
        cwnd += ss_exit_cwnd(&r->streams[i]);
    if (!g_json) {
        fmt_bytes(b, sizeof(b), (double)cwnd);
        printf("slow-start ended at %.3f s (%s), cwnd %s\n", r->out.ss_t,
               ss_rule_name(r->out.ss_rule), b);
        fflush(stdout);
        return;
    }
    arr = json_array();
    for (int i = 0; i < r->n; i++) {
        const qp_stream *s = &r->streams[i];

        /* a stream still in slow-start (streams_plateau): no time, its cwnd now */
        json_array_append_new(arr, json_pack("{s:i, s:o, s:s, s:I}", "id", s->id, "t",
                                             j_real_or_null(s->rule != SS_RULE_NONE, s->ss_t),
                                             "rule", ss_rule_name(s->rule),
                                             "cwnd_bytes", (json_int_t)ss_exit_cwnd(s)));
    }
    j = json_pack("{s:s, s:f, s:s, s:I, s:o}", "event", "slow_start_end", "t", r->out.ss_t,
                  "rule", ss_rule_name(r->out.ss_rule), "cwnd_bytes", (json_int_t)cwnd,
                  "streams", arr);
    emit(j);
}

/* One iperf-style interval line. */
static void interval_line(const char *label, double t0, double t1, uint64_t bytes,
                          uint32_t retr, uint64_t cwnd_bytes)
{
    char b[32], rate[32], cw[32];

    fmt_bytes(b, sizeof(b), (double)bytes);
    fmt_rate(rate, sizeof(rate), t1 > t0 ? (double)bytes * 8.0 / (t1 - t0) : 0.0);
    fmt_bytes(cw, sizeof(cw), (double)cwnd_bytes);
    printf("[%s] %6.2f-%-6.2f sec  %12s  %15s  %4u  %s\n", label, t0, t1, b, rate, retr, cw);
}

/* Print the human interval lines for [t0, t1]: one per stream, then the sum. */
void out_interval(const qp_run *r, double t0, double t1)
{
    uint64_t bytes = 0, cwnd = 0;
    uint32_t retr = 0;
    char label[8];

    if (g_json)
        return;
    for (int i = 0; i < r->n; i++) {
        const qp_stream *s = &r->streams[i];

        snprintf(label, sizeof(label), "%3d", s->id);
        if (r->n > 1)
            interval_line(label, t0, t1, s->acked - s->iv_acked0,
                          s->ti.total_retrans - s->iv_retr0, s->ti.cwnd_bytes);
        bytes += s->acked - s->iv_acked0;
        retr += s->ti.total_retrans - s->iv_retr0;
        cwnd += s->ti.cwnd_bytes;
    }
    interval_line(r->n > 1 ? "SUM" : label, t0, t1, bytes, retr, cwnd);
    fflush(stdout);
}

/* Rate a full run would send at: the quick answer, else the cumulative one. */
static double full_rate(const qp_run *r, double cumu)
{
    return r->o->mode == MODE_QUICK && r->out.quick_answered ? r->out.quick_bps : cumu;
}

/* Add the quick window's verdict to j: the fields are null when known is 0. */
static void add_quick_fields(json_t *j, const qp_outcome *o, int known)
{
    json_object_set_new(j, "quick_ci_pct",
                        j_real_or_null(known && o->quick_ci_frac >= 0, 100.0 * o->quick_ci_frac));
    json_object_set_new(j, "quick_window_s", j_real_or_null(known, o->quick_window_s));
    json_object_set_new(j, "quick_steady_bps", j_real_or_null(known, o->quick_steady_bps));
    json_object_set_new(j, "quick_steady_ci_pct",
                        j_real_or_null(known && o->quick_steady_ci_frac >= 0,
                                       100.0 * o->quick_steady_ci_frac));
    json_object_set_new(j, "quick_basis", known ? j_str_or_null(qw_basis_name(o->quick_basis))
                                                : json_null());
    json_object_set_new(j, "quick_batches", known ? json_integer(o->quick_batches) : json_null());
    json_object_set_new(j, "quick_excluded_s", j_real_or_null(known, o->quick_excluded_s));
    json_object_set_new(j, "quick_held_by", known ? j_str_or_null(qw_hold_name(o->quick_hold))
                                                  : json_null());
    json_object_set_new(j, "quick_lo_bps", j_real_or_null(known, o->quick_lo_bps));
    json_object_set_new(j, "quick_hi_bps", j_real_or_null(known, o->quick_hi_bps));
    json_object_set_new(j, "quick_bound_by", known ? j_str_or_null(qw_bound_name(o->quick_bound))
                                                   : json_null());
    json_object_set_new(j, "quick_bound_text", known ? j_str_or_null(qw_bound_text(o->quick_bound))
                                                     : json_null());
}

/* The validate object: what quick mode would have said on this connection. */
static json_t *validate_obj(const qp_run *r, double full_bps)
{
    const qp_outcome *o = &r->out;

    json_t *j;

    if (r->o->mode != MODE_VALIDATE)
        return json_null();
    j = json_pack("{s:o, s:o, s:o, s:o, s:o, s:f, s:o, s:b}",
                     "quick_bps", j_real_or_null(o->quick_entered, o->quick_bps),
                     "slow_start_end_s", j_real_or_null(o->ss_ended, o->ss_t),
                     "rule", o->ss_ended ? json_string(ss_rule_name(o->ss_rule)) : json_null(),
                     "quick_elapsed_s", j_real_or_null(o->quick_entered, o->quick_end_t),
                     "quick_bytes_sent", o->quick_entered ? json_integer((json_int_t)o->quick_bytes_sent) : json_null(),
                     "full_bps", full_bps,
                     "error_pct", j_real_or_null(o->quick_entered && full_bps > 0,
                                                 100.0 * (o->quick_bps - full_bps) / full_bps),
                     "quick_converged", o->quick_converged);
    json_object_set_new(j, "quick_answered", json_boolean(o->quick_entered && o->quick_answered));
    add_quick_fields(j, o, o->quick_entered);
    return j;
}

/* The per-stream totals of the result. */
static json_t *result_streams(const qp_run *r)
{
    json_t *arr = json_array();

    for (int i = 0; i < r->n; i++) {
        const qp_stream *s = &r->streams[i];

        json_array_append_new(arr, json_pack("{s:i, s:I, s:I, s:o, s:I}", "id", s->id,
                              "bytes_sent", (json_int_t)s->sent,
                              "bytes_acked", (json_int_t)s->acked,
                              "server_bytes", j_count(s->server_bytes),
                              "retransmits", (json_int_t)s->ti.total_retrans));
    }
    return arr;
}

/* Add the quick-mode savings (null outside quick mode) to j. */
static void add_savings(json_t *j, const qp_run *r, double est_bytes)
{
    const qp_outcome *o = &r->out;
    int quick = r->o->mode == MODE_QUICK;

    json_object_set_new(j, "full_time_s", json_integer(r->o->time_s));
    json_object_set_new(j, "full_bytes_estimate", json_integer((json_int_t)llround(est_bytes)));
    json_object_set_new(j, "time_saved_pct",
                        j_real_or_null(quick, 100.0 * (1.0 - o->elapsed_s / r->o->time_s)));
    json_object_set_new(j, "traffic_saved_pct",
                        j_real_or_null(quick && est_bytes > 0,
                                       100.0 * (1.0 - (double)o->bytes_sent / est_bytes)));
}

/* The human report's quick-mode line: never a bare number when it did not converge. */
static void human_quick(const qp_run *r)
{
    const qp_outcome *o = &r->out;
    char rate[32], ci[80] = "no interval";

    if (!o->quick_entered) {
        if (r->o->mode != MODE_FULL)
            printf("quick mode not entered: slow-start did not end within %d s%s\n",
                   r->o->time_s, r->o->mode == MODE_QUICK ? "; the full run above is the result" : "");
        return;
    }
    fmt_rate(rate, sizeof(rate), o->quick_bps);
    if (o->quick_ci_frac >= 0) {
        char lo[32], hi[32];

        fmt_rate(lo, sizeof(lo), o->quick_lo_bps);
        fmt_rate(hi, sizeof(hi), o->quick_hi_bps);
        snprintf(ci, sizeof(ci), "(95 %%: %s - %s)", lo, hi);
    }
    if (o->quick_converged) {
        printf("quick mode: %s %s, converged in %.2f s (%d batches of %s) after slow-start "
               "ended at %.3f s (%s)\n", rate, ci, o->quick_window_s, o->quick_batches,
               qw_basis_name(o->quick_basis) ? qw_basis_name(o->quick_basis) : "slices",
               o->ss_t, ss_rule_name(o->ss_rule));
        return;
    }
    if (o->quick_answered) {
        printf("quick mode: %s %s, answered at its deadline, %.2f s after slow-start ended at "
               "%.3f s (%s), without converging\n", rate, ci, o->quick_window_s, o->ss_t,
               ss_rule_name(o->ss_rule));
        printf("quick mode: interval bounded by: %s\n", qw_bound_text(o->quick_bound));
    } else {
        printf("quick mode: NOT CONVERGED within %.2f s after slow-start ended at %.3f s (%s); "
               "its estimate %s %s is not the result%s\n", o->quick_window_s, o->ss_t,
               ss_rule_name(o->ss_rule), rate, ci,
               r->o->mode == MODE_QUICK ? ": the full run above is (the paper's fallback)" : "");
    }
    if (qw_hold_text(o->quick_hold))
        printf("quick mode: held open by: %s\n", qw_hold_text(o->quick_hold));
}

/* Print the human summary. */
static void human_result(const qp_run *r, double cumu)
{
    const qp_outcome *o = &r->out;
    char b[32], rate[32];

    fmt_bytes(b, sizeof(b), (double)o->bytes_sent);
    fmt_rate(rate, sizeof(rate), o->elapsed_s > 0 ? o->bytes_sent * 8.0 / o->elapsed_s : 0);
    printf("- - - - - - - - - - - - - - - - - - - - - - - - -\n");
    printf("[ ID] Interval           Transfer     Bitrate         Retr\n");
    printf("[%s]   0.00-%-6.2f sec  %12s  %15s  %4u             sender\n",
           r->n == 1 ? "  1" : "SUM", o->elapsed_s, b, rate, o->retransmits);
    if (o->server_bytes >= 0) {
        fmt_bytes(b, sizeof(b), (double)o->server_bytes);
        fmt_rate(rate, sizeof(rate), o->elapsed_s > 0 ? o->server_bytes * 8.0 / o->elapsed_s : 0);
        printf("[%s]   0.00-%-6.2f sec  %12s  %15s                  receiver\n",
               r->n == 1 ? "  1" : "SUM", o->elapsed_s, b, rate);
    }
    fmt_rate(rate, sizeof(rate), cumu);
    printf("cumulative (acked): %s over %.2f s%s\n", rate, o->elapsed_s,
           o->interrupted ? " (interrupted)" : "");
    human_quick(r);
    fflush(stdout);
}

/* Print the result event (or the human summary). */
void out_result(const qp_run *r)
{
    const qp_outcome *o = &r->out;
    double cumu = o->elapsed_s > 0 ? (double)o->bytes_acked * 8.0 / o->elapsed_s : 0.0;
    double full_bps = cumu;
    int quick = r->o->mode == MODE_QUICK;
    /* a quick run without an answer ran on to -t: the full run's figure is its result */
    int full = !quick || !o->quick_answered;
    json_t *j;

    if (!g_json) {
        human_result(r, cumu);
        return;
    }
    j = json_pack("{s:s, s:s, s:b, s:o, s:f, s:o}", "event", "result",
                  "mode", opts_mode_name(r->o->mode), "quick_mode_entered",
                  r->o->mode == MODE_QUICK && o->quick_entered,
                  "quick_bps", j_real_or_null(r->o->mode == MODE_QUICK && o->quick_entered, o->quick_bps),
                  "cumulative_bps", cumu, "full_bps", j_real_or_null(full, full_bps));
    json_object_set_new(j, "bytes_sent", json_integer((json_int_t)o->bytes_sent));
    json_object_set_new(j, "bytes_acked", json_integer((json_int_t)o->bytes_acked));
    json_object_set_new(j, "server_bytes", j_count(o->server_bytes));
    json_object_set_new(j, "elapsed_s", json_real(o->elapsed_s));
    json_object_set_new(j, "slow_start_end_s", j_real_or_null(o->ss_ended, o->ss_t));
    json_object_set_new(j, "rule", o->ss_ended ? json_string(ss_rule_name(o->ss_rule)) : json_null());
    json_object_set_new(j, "quick_converged", quick ? json_boolean(o->quick_converged) : json_null());
    json_object_set_new(j, "quick_answered",
                        quick ? json_boolean(o->quick_entered && o->quick_answered) : json_null());
    add_quick_fields(j, o, quick && o->quick_entered);
    json_object_set_new(j, "retransmits", json_integer(o->retransmits));
    json_object_set_new(j, "rtt_us", json_integer(o->rtt_us));
    json_object_set_new(j, "min_rtt_us", json_integer(o->min_rtt_us));
    json_object_set_new(j, "congestion", j_str_or_null(r->congestion));
    json_object_set_new(j, "mss_bytes", r->mss_bytes ? json_integer(r->mss_bytes) : json_null());
    json_object_set_new(j, "window", window_obj(r));
    add_savings(j, r, full_rate(r, cumu) * r->o->time_s / 8.0);
    json_object_set_new(j, "validate", validate_obj(r, full_bps));
    json_object_set_new(j, "interrupted", json_boolean(o->interrupted));
    json_object_set_new(j, "streams", result_streams(r));
    emit(j);
}

/* Print an error event (JSON) or message (stderr). */
void out_error(const qp_err *e)
{
    if (!g_json) {
        fprintf(stderr, "quickprobe: error (%s): %s\n", e->code, e->message);
        return;
    }
    emit(json_pack("{s:s, s:s, s:s, s:o, s:o}", "event", "error", "code", e->code,
                   "message", e->message,
                   "iperf_error", e->has_iperf_error ? json_integer(e->iperf_error) : json_null(),
                   "errno", e->has_iperf_error && e->iperf_errno ? json_integer(e->iperf_errno) : json_null()));
}

/* Print a usage error: event in JSON mode, else message and a hint on stderr. */
void out_usage_error(int json, const char *msg)
{
    if (!json) {
        fprintf(stderr, "quickprobe: %s\nTry 'quickprobe --help' for the options and their "
                "allowed values.\n", msg);
        return;
    }
    g_json = 1;
    emit(json_pack("{s:s, s:s, s:s, s:n, s:n}", "event", "error", "code", "usage",
                   "message", msg, "iperf_error", "errno"));
}
