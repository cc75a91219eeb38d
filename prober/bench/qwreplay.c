/* qwreplay.c: replay recorded `quickprobe --json --mode validate` runs through the quick
 * window (src/quickwin.c) as the prober feeds it, and print what the window decides.
 *
 * A validate run records every sample of a whole -t run and the connection's own -t
 * figure, so a change to the window can be judged on many recorded paths in seconds,
 * paired with the truth of the same connection, without sending a byte. The window is
 * opened at the slow_start_end event with the sample printed just before it, told the
 * largest smoothed RTT of the samples before, and fed each later sample, exactly as
 * measure.c does (window_sample, check_ss_end).
 *
 * Usage: qwreplay [-v] [-S] [-T PCT] [-m MS] [-M MS] [-R RTTS] [-u] RUN.jsonl...
 * One tab-separated line per run (header first): the answer quick mode would have given,
 * its interval and whether that held the run's own -t figure, what kept a window that did
 * not converge open, and how many congestion events it took back because the kernel undid
 * their cut (src/qwundo.c); when the answer was due (due_t, from the first byte: where a quick
 * run cuts its drain), the sample the window closed at (close_t) and how long after it every
 * stream had acked what it had written by then (drain_s, -1 if none did: what a quick run's
 * drain would have waited for, read long with several streams as the recorded sender went on
 * writing, and up to a sampling period, sample_s, late); and for Reno / CUBIC the flow's share
 * of its standing queue's drain (queue_share, src/qwshare.c: about 1 alone, nan with no growth
 * period to read it from). The estimator's settings are the run's own (its start event), or:
 * -T --quick-tolerance, -m --quick-ms, -M --quick-max-ms, -R the deadline in smoothed RTTs
 * (QP_DEADLINE_RTTS; 0: --quick-max-ms alone), -u --until-converged. -S opens the window where
 * this build's slow-start detector (src/slowstart.c) ends slow-start on the recorded samples,
 * fed as measure.c feeds it (sample_stream, check_ss_end), instead of at the recorded event:
 * a detector change is judged on recorded runs as an estimator change is. -v also prints, on
 * stderr, where -S ended slow-start (a line beginning with S) and each slice the window
 * closes: the estimate then, what held it open, and the answer and interval it would give
 * if its deadline fell there; the lines of its planned checks (where it may stop: qwdue.c's
 * qw_plan_checks) begin with C. */
#include "opts.h"
#include "quickwin.h"
#include "run.h"
#include "slowstart.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int bbr, cubic, nstreams, time_s;
    qw_params p;
    qw_window w;
    qw_sample last;         /* the latest sample, aggregated as window_sample does */
    uint32_t last_retrans;  /* its summed total_retrans */
    int overshoot[QP_MAX_STREAMS];  /* each stream's overshoot_recovery, as measure.c keeps it */
    uint64_t ssthresh[QP_MAX_STREAMS];  /* each stream's latest ssthresh_bytes (0: never set) */
    uint32_t sretrans[QP_MAX_STREAMS];  /* ... its latest total_retrans */
    int srec[QP_MAX_STREAMS];           /* ... 1 if it was in a loss recovery */
    qw_cut_track cut[QP_MAX_STREAMS];   /* ... its open congestion event */
    int open, have_last;
    int ran_out;            /* the run's samples ended with the window still open: -t came
                               before its deadline, and the run's own figure is the answer, as
                               measure_final() reports it */
    qw_ss_seen ss_seen;     /* what the samples before the window opened witnessed, as
                               measure.c keeps it */
    double ss_t, truth_bps, prober_quick_bps;
    int prober_converged;
    /* -S: each stream's detector and verdict, and the streams' sum (measure.c's qp_stream
     * det / rule / ss_cwnd_bytes and qp_run ss_sum) */
    ss_detector det[QP_MAX_STREAMS];
    ss_rule rule[QP_MAX_STREAMS];
    double rule_t[QP_MAX_STREAMS];
    uint64_t rule_cwnd[QP_MAX_STREAMS], cwnd_now[QP_MAX_STREAMS];
    ss_sum sum;
    /* the drain a quick run would have waited for: the sample the window closed at (a quick
     * run stops writing there; -1 while open), what each stream had written by then, and the
     * first later sample where every stream had all of it acked (-1: none did) */
    double close_t, drained_t;
    uint64_t close_sent[QP_MAX_STREAMS];
    int close_n;
    int verbose;            /* -v: trace every slice on stderr */
    int until_converged;    /* the run's --until-converged, or -u */
} replay;

/* The estimator's settings given on the command line (< 0: the run's own). */
typedef struct {
    double tolerance_pct, min_ms, max_ms, deadline_rtts;
    int until_converged;
    int redetect;   /* -S: slow-start's end from this build's detector */
} settings;

static settings g_set = { -1, -1, -1, QP_DEADLINE_RTTS, 0, 0 };

/* A number field of o, 0 when absent or null. */
static double num(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);

    return json_is_number(v) ? json_number_value(v) : 0;
}

/* Stream st's tcpi_reordering; for runs recorded before the samples carried it, UINT32_MAX:
 * whether the kernel had seen the path reorder is not known, so a cut's verdict is cwnd's
 * alone, as it was when they were recorded (qw_cut_step). */
static uint32_t reordering(const json_t *st)
{
    json_t *v = json_object_get(st, "reordering_segments");

    return json_is_number(v) ? (uint32_t)json_number_value(v) : UINT32_MAX;
}

/* Carry stream i's recovery, ssthresh and total_retrans from sample to sample in r, as
 * measure.c's qp_stream does, and add what st (in BBR mode m) shows to q: slow-start's
 * overshoot recovery, an ssthresh set, a congestion event begun, a cut kept or undone. */
static void stream_step(replay *r, qw_sample *q, int i, const json_t *st, qw_bbr_mode m)
{
    uint64_t sst = (uint64_t)num(st, "ssthresh_bytes");
    uint32_t tr = (uint32_t)num(st, "total_retrans");
    int rec = num(st, "ca_state") >= 2, set = qw_ssthresh_set(r->ssthresh[i], sst), began;
    qw_cut_view view;
    qw_cut cut;

    r->overshoot[i] = qw_overshoot_step(r->overshoot[i], rec, m, r->ssthresh[i]);
    q->overshoot_recovery |= r->overshoot[i];
    q->ssthresh_set |= set;
    began = qw_stream_event(r->srec[i], rec, r->sretrans[i], tr, set, r->bbr);
    view = (qw_cut_view){ .t_s = q->t_s, .cwnd_bytes = (uint64_t)num(st, "cwnd_bytes"),
                          .rtt_us = (uint32_t)num(st, "rtt_us"),
                          .mss_bytes = (uint32_t)num(st, "mss_bytes"),
                          .reordering_segments = reordering(st),
                          .beta = r->p.beta };
    cut = qw_cut_step(&r->cut[i], began, rec, &view);
    q->stream_events += (uint32_t)began;
    q->cuts_kept += cut == QW_CUT_KEPT;
    q->cuts_undone += cut == QW_CUT_UNDONE;
    r->ssthresh[i] = sst;
    r->sretrans[i] = tr;
    r->srec[i] = rec;
}

/* Add stream st's smoothed RTT to q's largest and least, and its min RTT (BBR's own, bbr,
 * when it keeps one) to q's least. */
static void stream_rtts(qw_sample *q, const json_t *st, const json_t *bbr)
{
    uint32_t rtt = (uint32_t)num(st, "rtt_us"), mrtt = (uint32_t)num(st, "min_rtt_us");
    uint32_t bmr = json_is_object(bbr) ? (uint32_t)num(bbr, "min_rtt_us") : 0;

    if (bmr)
        mrtt = bmr;
    if (rtt > q->rtt_us)
        q->rtt_us = rtt;
    if (rtt && (q->rtt_lo_us == 0 || rtt < q->rtt_lo_us))
        q->rtt_lo_us = rtt;
    if (mrtt && (q->min_rtt_us == 0 || mrtt < q->min_rtt_us))
        q->min_rtt_us = mrtt;
}

/* Aggregate one sample event's streams into r->last as measure.c's window_sample does
 * (each stream's overshoot_recovery, ssthresh_bytes, total_retrans and recovery carried from
 * sample to sample in r), its summed total_retrans into r->last_retrans. */
static void aggregate(replay *r, const json_t *ev)
{
    json_t *streams = json_object_get(ev, "streams"), *st;
    size_t i, n = json_array_size(streams);
    qw_sample *q = &r->last;
    uint32_t *retrans = &r->last_retrans;
    uint64_t backlog[QP_MAX_STREAMS], cwnd[QP_MAX_STREAMS];
    int top_known = 1;  /* runs recorded before snd_wscale was: the top is not known */

    memset(q, 0, sizeof(*q));
    q->t_s = num(ev, "t");
    q->bbr_cruising = n > 0;
    *retrans = 0;
    json_array_foreach(streams, i, st) {
        json_t *bbr = json_object_get(st, "bbr");
        uint32_t pg = (uint32_t)lround(num(bbr, "pacing_gain") * 256);
        uint32_t cg = (uint32_t)lround(num(bbr, "cwnd_gain") * 256);
        qw_bbr_mode m = json_is_object(bbr) ? qw_bbr_mode_from_gains(pg, cg) : QW_BBR_NONE;

        stream_rtts(q, st, bbr);
        q->delivered_bytes += (uint64_t)num(st, "bytes_acked") + (uint64_t)num(st, "sacked_bytes");
        q->cwnd_bytes += (uint64_t)num(st, "cwnd_bytes");
        q->retrans += (uint32_t)num(st, "total_retrans");
        q->in_recovery |= num(st, "ca_state") >= 2;
        q->in_timeout |= num(st, "ca_state") == SS_CA_LOSS;
        q->limited_us += ((uint64_t)num(st, "rwnd_limited_us") +
                          (uint64_t)num(st, "sndbuf_limited_us")) / (n ? n : 1);
        q->rwnd_limited_us += (uint64_t)num(st, "rwnd_limited_us") / (n ? n : 1);
        q->rwnd_bytes += (uint64_t)num(st, "snd_wnd_bytes");
        top_known &= json_is_integer(json_object_get(st, "snd_wscale"));
        q->rwnd_top_bytes += QW_WINDOW_TOP((int)num(st, "snd_wscale") & 15);
        if ((uint32_t)num(st, "mss_bytes") > q->mss_bytes)
            q->mss_bytes = (uint32_t)num(st, "mss_bytes");
        if ((uint32_t)num(st, "reordering_segments") > q->reordering_segments)
            q->reordering_segments = (uint32_t)num(st, "reordering_segments");
        if (i < QP_MAX_STREAMS) {
            double held = num(st, "bytes_sent") - num(st, "bytes_acked");

            backlog[i] = held > 0 ? (uint64_t)held : 0;
            cwnd[i] = (uint64_t)num(st, "cwnd_bytes");
            stream_step(r, q, (int)i, st, m);
        }
        q->bbr_cruising &= json_is_object(bbr) && qw_bbr_cruising(pg, cg);
        if (json_is_object(bbr)) {
            static const int rank[] = { 0, 2, 3, 1, 4 };    /* none startup drain bw rtt */

            q->bw_bps += (uint64_t)num(bbr, "bw_bps");
            if (rank[m] > rank[q->bbr_mode])
                q->bbr_mode = m;
        }
    }
    if (!top_known)
        q->rwnd_top_bytes = 0;
    q->backlog_bytes = qw_drain_bytes(backlog, cwnd, n < QP_MAX_STREAMS ? (int)n : QP_MAX_STREAMS);
    *retrans = q->retrans;
}

/* Feed the latest sample to the window; with -v, print the slice it closed, if any. */
static void feed(replay *r)
{
    int n = r->w.n;
    double next_check = r->w.next_check_t;
    const qw_estimate *e = qw_result(&r->w);
    const char *hold;

    qw_feed(&r->w, &r->last);
    if (!r->verbose || r->w.n == n)
        return;
    hold = qw_hold_name(qw_hold_of(&r->w));
    {
        qw_answer a = qw_answer_of(&r->w, r->time_s);
        /* a planned check moves the plan on; the deadline, the last, closes the window */
        int check = r->w.next_check_t != next_check || r->w.state != QW_OPEN;

        fprintf(stderr, "%s t %6.2f  slices %3d  first %3d  est %9.3f Mbit/s  ci %6.2f %%  batches %2d"
                "  answer %9.3f [%9.3f, %9.3f] %-11s %-12s events %u random %u/%u undone %u",
                check ? "C" : " ",
                r->last.t_s, r->w.n, r->w.first, e->rate_bps / 1e6, e->ci_frac * 100, e->batches,
                a.rate_bps / 1e6, a.lo_bps / 1e6, a.hi_bps / 1e6,
                qw_bound_name(a.by) ? qw_bound_name(a.by) : "-", hold ? hold : "converged",
                r->w.events, r->w.random_events, r->w.random_stream_events, r->w.undone_events);
    }
    /* the cwnd peaks that cuts ended, in the counted part (peaks_level() in qwloss.c judges them) */
    for (int i = 0; i < r->w.npeaks; i++)
        if (r->w.peak_slice[i] >= r->w.first)
            fprintf(stderr, " %lu", (unsigned long)(r->w.peak[i] / 1000));
    fputc('\n', stderr);
}

/* Follow the drain after the window closed (r->close_t and the rest, above), one sample
 * event ev at a time, fed after the window saw it. The recorded sender went on writing, so
 * with several streams the drain reads long: the other streams' new bytes share the path
 * with the ones written before the close, which a quick run's stopped sender leaves alone. */
static void track_drain(replay *r, const json_t *ev)
{
    json_t *streams = json_object_get(ev, "streams"), *st;
    size_t i;
    int done = 1;

    if (r->drained_t >= 0 || (r->close_t < 0 && r->w.state == QW_OPEN))
        return;
    if (r->close_t < 0) {
        r->close_t = num(ev, "t");
        json_array_foreach(streams, i, st) {
            if (i >= QP_MAX_STREAMS)
                break;
            r->close_sent[i] = (uint64_t)num(st, "bytes_sent");
            r->close_n = (int)i + 1;
        }
        return;
    }
    json_array_foreach(streams, i, st)
        if ((int)i < r->close_n && (uint64_t)num(st, "bytes_acked") < r->close_sent[i])
            done = 0;
    if (done)
        r->drained_t = num(ev, "t");
}

/* Open the window on the latest sample, slow-start having ended at ss_t with the streams'
 * summed cwnd exit_cwnd there (measure.c's check_ss_end). */
static void open_window(replay *r, double ss_t, uint64_t exit_cwnd)
{
    r->ss_t = ss_t;
    r->p.base_rtt_s = r->last.min_rtt_us / 1e6;
    qw_open(&r->w, &r->p, r->last.t_s, exit_cwnd, r->last_retrans > 0);
    qw_seen(&r->w, &r->ss_seen);
    r->open = 1;
    feed(r);
}

/* Open the window at the slow_start_end event ev. */
static void open_at_event(replay *r, const json_t *ev)
{
    json_t *streams = json_object_get(ev, "streams"), *st;
    uint64_t exit_cwnd = 0;
    size_t i;

    json_array_foreach(streams, i, st)
        exit_cwnd += (uint64_t)num(st, "cwnd_bytes");
    open_window(r, num(ev, "t"), exit_cwnd);
}

/* -S: feed one sample event's streams to their own detectors as measure.c's sample_stream
 * does (bytes_acked after the preamble, as recorded; a stream is fed until its rule fires). */
static void detect_streams(replay *r, const json_t *ev)
{
    json_t *streams = json_object_get(ev, "streams"), *st;
    double t = num(ev, "t");
    size_t i;

    json_array_foreach(streams, i, st) {
        json_t *bbr = json_object_get(st, "bbr");
        ss_sample ss;

        if (i >= QP_MAX_STREAMS)
            break;
        r->cwnd_now[i] = (uint64_t)num(st, "cwnd_bytes");
        if (r->rule[i] != SS_RULE_NONE)
            continue;
        ss = (ss_sample){ .t_s = t, .cwnd_bytes = r->cwnd_now[i],
                          .ssthresh_bytes = (uint64_t)num(st, "ssthresh_bytes"),
                          .rtt_us = (uint32_t)num(st, "rtt_us"),
                          .rttvar_us = (uint32_t)num(st, "rttvar_us"),
                          .mss_bytes = (uint32_t)num(st, "mss_bytes"),
                          .delivery_rate_bps = (uint64_t)num(st, "delivery_rate_bps"),
                          .bytes_acked = (uint64_t)num(st, "bytes_acked"),
                          .total_retrans = (uint32_t)num(st, "total_retrans"),
                          .bbr_pacing_gain = (uint32_t)lround(num(bbr, "pacing_gain") * 256),
                          .ca_state = (uint32_t)num(st, "ca_state") };
        r->rule[i] = ss_feed(&r->det[i], &ss);
        if (r->rule[i] == SS_RULE_NONE)
            continue;
        /* the verdict's sample, as measure.c keeps ss_t and ss_cwnd_bytes */
        r->rule_t[i] = t;
        r->rule_cwnd[i] = r->cwnd_now[i];
    }
}

/* -S: after the detectors saw sample event ev, open the window if the streams have left
 * slow-start together (measure.c's check_ss_end and streams_left_ss: every one has, or
 * several BBR streams' summed delivery stopped growing with all but one out). */
static void redetect(replay *r, const json_t *ev)
{
    int n = (int)json_array_size(json_object_get(ev, "streams")), done = 0, last = -1, plateau;
    double t = num(ev, "t");
    uint64_t exit_cwnd = 0;

    detect_streams(r, ev);
    if (n > QP_MAX_STREAMS)
        n = QP_MAX_STREAMS;
    for (int i = 0; i < n; i++) {
        if (r->rule[i] == SS_RULE_NONE)
            continue;
        done++;
        if (last < 0 || r->rule_t[i] >= r->rule_t[last])
            last = i;
    }
    plateau = n > 1 && r->bbr &&
              ss_sum_feed(&r->sum, t, (uint64_t)num(ev, "bytes_acked"), r->last.rtt_us);
    if (n == 0 || !ss_streams_left(n, done, plateau))
        return;
    if (r->verbose)
        fprintf(stderr, "S t %6.2f  slow-start ended (%s)\n", t,
                ss_rule_name(done == n ? r->rule[last] : SS_RULE_STREAMS_PLATEAU));
    for (int i = 0; i < n; i++)
        exit_cwnd += r->rule[i] != SS_RULE_NONE ? r->rule_cwnd[i] : r->cwnd_now[i];
    open_window(r, done == n ? r->rule_t[last] : t, exit_cwnd);
}

/* Read the start event's parameters. */
static void start(replay *r, const json_t *ev)
{
    json_t *params = json_object_get(ev, "params");
    const char *cc = json_string_value(json_object_get(ev, "congestion"));
    const char *proto = json_string_value(json_object_get(ev, "protocol"));
    ss_cc family = ss_cc_from_name(cc ? cc : "");

    r->bbr = cc && strcmp(cc, "bbr") == 0;
    r->cubic = cc && strcmp(cc, "cubic") == 0;
    for (int i = 0; i < QP_MAX_STREAMS; i++)
        ss_init(&r->det[i], SS_ALGO_AUTO, family);
    ss_sum_init(&r->sum);
    r->time_s = (int)num(params, "time_s");
    r->nstreams = (int)num(params, "streams");
    r->p = (qw_params){ .bbr = r->bbr, .tolerance = num(params, "quick_tolerance_pct") / 100.0,
                        .min_s = num(params, "quick_ms") / 1000.0,
                        .max_s = num(params, "quick_max_ms") / 1000.0,
                        .sample_s = num(params, "sample_ms") / 1000.0,
                        .beta = r->cubic ? 717.0 / 1024 : 0.5, .streams = r->nstreams,
                        .deadline_rtts = g_set.deadline_rtts, .full_s = r->time_s };
    /* the longest the recorded run's drain could wait, by the prober's own rule */
    r->p.drain_max_s =
        run_drain_max_s(&(qp_opts){ .connect_timeout_s = num(params, "connect_timeout_s") });
    /* iperf3's server sets SO_RCVBUF to a window the client asks for, which stops its
     * autotuning; iperf 2's takes its own -w, which the client cannot see */
    r->p.rwnd_fixed = num(params, "window_requested_bytes") > 0 && proto &&
                      strcmp(proto, "iperf3") == 0;
    r->until_converged = json_is_true(json_object_get(params, "until_converged")) || g_set.until_converged;
    if (g_set.tolerance_pct > 0)
        r->p.tolerance = g_set.tolerance_pct / 100.0;
    if (g_set.min_ms > 0)
        r->p.min_s = g_set.min_ms / 1000.0;
    if (g_set.max_ms > 0)
        r->p.max_s = g_set.max_ms / 1000.0;
}

/* Replay one file; 0, or -1 if it is not a finished validate run. */
static int replay_file(const char *path, replay *r)
{
    char line[1 << 16];
    FILE *f = fopen(path, "r");

    if (!f)
        return -1;
    int verbose = r->verbose;

    memset(r, 0, sizeof(*r));
    r->verbose = verbose;
    r->ss_t = -1;
    r->close_t = r->drained_t = -1;
    while (fgets(line, sizeof line, f)) {
        json_t *ev = json_loads(line, 0, NULL);
        const char *kind = ev ? json_string_value(json_object_get(ev, "event")) : NULL;

        if (!kind) {
            json_decref(ev);
            continue;
        }
        if (strcmp(kind, "start") == 0) {
            start(r, ev);
        } else if (strcmp(kind, "sample") == 0) {
            aggregate(r, ev);
            r->have_last = 1;
            if (r->open) {
                feed(r);
                track_drain(r, ev);
            } else {
                qw_ss_see(&r->ss_seen, &r->last);
                if (g_set.redetect)
                    redetect(r, ev);
            }
        } else if (strcmp(kind, "slow_start_end") == 0 && r->have_last && !r->open &&
                   !g_set.redetect) {
            open_at_event(r, ev);
        } else if (strcmp(kind, "result") == 0) {
            json_t *v = json_object_get(ev, "validate");

            r->truth_bps = num(ev, "full_bps");
            r->prober_quick_bps = json_is_object(v) ? num(v, "quick_bps") : 0;
            r->prober_converged = json_is_object(v) && json_is_true(json_object_get(v, "quick_converged"));
        }
        json_decref(ev);
    }
    fclose(f);
    r->ran_out = r->open && r->w.state == QW_OPEN;
    if (r->open)
        qw_stop(&r->w);
    return r->truth_bps > 0 ? 0 : -1;
}

/* Print one run's line: the answer quick mode would have given and, where it gave none
 * (--until-converged and not converged, or the run reached -t first), the full run's figure
 * as what it reported. */
static void report(const char *path, const replay *r)
{
    const qw_estimate *e = qw_result(&r->w);
    qw_answer a = r->open ? qw_answer_of(&r->w, r->time_s) : (qw_answer){ 0, 0, 0, -1, 0 };
    int conv = r->open && r->w.state == QW_CONVERGED && a.rate_bps > 0;
    int answered = a.rate_bps > 0 && (conv || (!r->until_converged && !r->ran_out));
    double fig = answered ? a.rate_bps : r->truth_bps;
    const char *name = strrchr(path, '/');
    const char *hold = r->open ? qw_hold_name(qw_hold_of(&r->w)) : "not_opened";
    int covered = answered && a.lo_bps <= r->truth_bps && r->truth_bps <= a.hi_bps;
    double drain_s = r->drained_t >= 0 ? r->drained_t - r->close_t : -1;

    /* rates and the interval with more digits than the checks against the run's own JSON
     * figures resolve (0.0005 Mbit/s, 0.005 %): at three digits a value on a rounding tie
     * printed half a unit away and failed such a check */
    printf("%s\t%s\t%.6f\t%.6f\t%d\t%d\t%.6f\t%.2f\t%.5f\t%.6f\t%.6f\t%d\t%s\t%.3f\t%.3f\t%s\t%d"
           "\t%.6f\t%d\t%s\t%u\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n",
           name ? name + 1 : path, r->bbr ? "bbr" : r->cubic ? "cubic" : "reno",
           r->truth_bps / 1e6, a.rate_bps / 1e6, conv, answered, fig / 1e6,
           100.0 * (fig - r->truth_bps) / r->truth_bps, a.ci_frac * 100, a.lo_bps / 1e6,
           a.hi_bps / 1e6, covered, a.rate_bps > 0 ? qw_bound_name(a.by) : "-", r->ss_t,
           qw_end_t(&r->w), qw_basis_name(e->basis) ? qw_basis_name(e->basis) : "-",
           e->batches, r->prober_quick_bps / 1e6, r->prober_converged, hold ? hold : "-",
           r->w.undone_events, r->open ? qw_due_t(&r->w) : -1, r->close_t, drain_s,
           r->p.sample_s, r->open ? qw_queue_share(&r->w) : NAN);
}

/* Parse the options into g_set; returns the index of the first file, or -1. */
static int parse_args(int argc, char **argv, int *verbose)
{
    int i = 1;

    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        char o = argv[i][1];
        double *v = o == 'T' ? &g_set.tolerance_pct : o == 'm' ? &g_set.min_ms
                  : o == 'M' ? &g_set.max_ms : o == 'R' ? &g_set.deadline_rtts : NULL;

        if (o == 'v') {
            *verbose = 1;
        } else if (o == 'S') {
            g_set.redetect = 1;
        } else if (o == 'u') {
            g_set.until_converged = 1;
        } else if (v && i + 1 < argc) {
            char *end;

            *v = strtod(argv[++i], &end);
            if (*end || *v < 0)
                return -1;
        } else {
            return -1;
        }
    }
    return i < argc ? i : -1;
}

/* Replay every file named on the command line. */
int main(int argc, char **argv)
{
    static replay r;
    int verbose = 0, first = parse_args(argc, argv, &verbose);

    if (first < 0) {
        fprintf(stderr, "usage: qwreplay [-v] [-S] [-T PCT] [-m MS] [-M MS] [-R RTTS] [-u] RUN.jsonl...\n");
        return 2;
    }
    r.verbose = verbose;
    printf("run\tcc\ttruth_mbps\tpred_mbps\tconverged\tanswered\tfigure_mbps\terr_pct\tci_pct"
           "\tlo_mbps\thi_mbps\tcovered\tbound_by\tss_t\tend_t\tbasis\tbatches\tprober_quick_mbps"
           "\tprober_converged\thold\tundone\tdue_t\tclose_t\tdrain_s\tsample_s\tqueue_share\n");
    for (int i = first; i < argc; i++) {
        if (r.verbose)
            fprintf(stderr, "%s\n", argv[i]);
        if (replay_file(argv[i], &r) < 0) {
            fprintf(stderr, "qwreplay: %s: not a finished validate run\n", argv[i]);
            continue;
        }
        report(argv[i], &r);
    }
    return 0;
}
