/* measure.c: the sampler that reads TCP_INFO every --sample-ms, feeds the slow-start
 * detectors and decides the end (the sender thread is sender.c). */
#include "measure.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "output.h"

#define INST_WINDOW_S 0.5
/* Unsent data queued in the kernel is limited to this much sending time: enough to
 * ride out a sender's scheduling delay even in slow-start (which sends at twice the
 * delivery rate), small enough that stopping is quick (the kernel would otherwise
 * queue up to a cwnd more, another RTT to drain). */
#define LOWAT_S 0.04
#define LOWAT_MIN_BYTES (16u * 1024)

/* Initialise the detectors, set t = 0 and announce the first phase: the sender
 * (sender.c) starts writing right after this. */
void measure_begin(qp_run *r)
{
    ss_cc cc = ss_cc_from_name(r->congestion);

    for (int i = 0; i < r->n; i++)
        ss_init(&r->streams[i].det, SS_ALGO_AUTO, cc);
    ss_sum_init(&r->ss_sum);
    r->t0 = net_now();
    r->started = 1;
    r->next_interval_t = r->o->interval_s;
    out_phase(r->o->mode == MODE_FULL ? "full" : "slow_start", 0.0);
}

/* inst_bps from a history of (t, acked) points (oldest first) and the current point:
 * bytes acked over the last 500 ms, or since t = 0 while t < 0.5 s. */
double measure_inst_bps(const qp_point *hist, int n, double t, uint64_t acked)
{
    qp_point base = { 0.0, 0 };

    if (t <= 0)
        return 0.0;
    /* The newest point at least 500 ms old; t = 0 (nothing acked) before that. */
    for (int i = n - 1; i >= 0; i--) {
        if (hist[i].t <= t - INST_WINDOW_S + 1e-9) {
            base = hist[i];
            break;
        }
    }
    if (t - base.t <= 0 || acked < base.acked)
        return 0.0;
    return (double)(acked - base.acked) * 8.0 / (t - base.t);
}

/* Append (t, acked) to the bounded history ring. */
static void ring_push(qp_run *r, double t, uint64_t acked)
{
    int idx = (r->ring_head + r->ring_len) % r->ring_cap;

    if (r->ring_len == r->ring_cap) {
        r->ring_head = (r->ring_head + 1) % r->ring_cap;
        idx = (r->ring_head + r->ring_len - 1) % r->ring_cap;
    } else {
        r->ring_len++;
    }
    r->ring[idx] = (qp_point){ t, acked };
}

/* inst_bps over the ring (copied oldest first). */
static double ring_inst_bps(const qp_run *r, double t, uint64_t acked)
{
    qp_point tmp[r->ring_len > 0 ? r->ring_len : 1];

    for (int i = 0; i < r->ring_len; i++)
        tmp[i] = r->ring[(r->ring_head + i) % r->ring_cap];
    return measure_inst_bps(tmp, r->ring_len, t, acked);
}

/* Keep the stream's unsent queue at about LOWAT_S of its delivery rate. */
static void tune_lowat(qp_stream *s)
{
    uint64_t want = (uint64_t)((double)s->ti.delivery_rate_bps / 8.0 * LOWAT_S);
    int v;

    /* No rate before the first ACKs: leave the kernel's default until there is one. */
    if (s->ti.delivery_rate_bps == 0)
        return;
    if (want < LOWAT_MIN_BYTES)
        want = LOWAT_MIN_BYTES;
    if (want > INT32_MAX)
        want = INT32_MAX;
    /* Only sizeable changes: each setsockopt takes the socket lock from the sender. */
    if (s->lowat_bytes && want * 4 < s->lowat_bytes * 5 && want * 5 > s->lowat_bytes * 4)
        return;
    v = (int)want;
    if (setsockopt(s->fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, sizeof(v)) == 0)
        s->lowat_bytes = want;
}

/* The share of cwnd r's congestion control keeps at a loss: tcp_cubic.c's beta is 717/1024;
 * Reno (and, to be safe, anything unknown) halves. */
static double cc_beta(const qp_run *r)
{
    return ss_cc_from_name(r->congestion) == SS_CC_CUBIC ? 717.0 / 1024 : 0.5;
}

/* Read one stream's TCP_INFO (and BBR's state when bbr) and feed its detector at t; beta
 * is the cc's cut (cc_beta). */
static void sample_stream(qp_stream *s, double t, int bbr, double beta)
{
    qw_cut_view view;
    char msg[128];
    ss_sample ss;
    ss_rule rule;
    uint64_t ssthresh0 = s->ti.ssthresh_bytes;
    uint32_t retrans0 = s->ti.total_retrans;
    int rec0 = s->ti.ca_state >= 2;

    s->cut = QW_CUT_NONE;   /* a failed read must not report the last verdict again */
    if (tcpinfo_read(s->fd, &s->ti, msg, sizeof(msg)) < 0)
        return;
    s->ssthresh_set = qw_ssthresh_set(ssthresh0, s->ti.ssthresh_bytes);
    s->began_event = qw_stream_event(rec0, s->ti.ca_state >= 2, retrans0, s->ti.total_retrans,
                                     s->ssthresh_set, bbr);
    view = (qw_cut_view){ .t_s = t, .cwnd_bytes = s->ti.cwnd_bytes, .rtt_us = s->ti.rtt_us,
                          .mss_bytes = s->ti.mss_bytes,
                          .reordering_segments = s->ti.reordering_segments, .beta = beta };
    s->cut = qw_cut_step(&s->cut_track, s->began_event, s->ti.ca_state >= 2, &view);
    if (bbr)
        tcpinfo_read_bbr(s->fd, &s->ti);
    s->overshoot_recovery = qw_overshoot_step(s->overshoot_recovery, s->ti.ca_state >= 2,
        s->ti.has_bbr ? qw_bbr_mode_from_gains(s->ti.bbr_pacing_gain, s->ti.bbr_cwnd_gain)
                      : QW_BBR_NONE, ssthresh0);
    s->acked = s->ti.bytes_acked > s->preamble_bytes ? s->ti.bytes_acked - s->preamble_bytes : 0;
    s->sent = stream_sent(s);
    if (s->ti.snd_wnd_bytes > s->max_snd_wnd_bytes)
        s->max_snd_wnd_bytes = s->ti.snd_wnd_bytes;
    tune_lowat(s);
    if (s->rule != SS_RULE_NONE)
        return;
    ss = (ss_sample){ .t_s = t, .cwnd_bytes = s->ti.cwnd_bytes,
                      .ssthresh_bytes = s->ti.ssthresh_bytes, .rtt_us = s->ti.rtt_us,
                      .rttvar_us = s->ti.rttvar_us, .mss_bytes = s->ti.mss_bytes,
                      .delivery_rate_bps = s->ti.delivery_rate_bps,
                      .bytes_acked = s->acked, .total_retrans = s->ti.total_retrans,
                      .bbr_pacing_gain = s->ti.bbr_pacing_gain,
                      .ca_state = s->ti.ca_state };
    rule = ss_feed(&s->det, &ss);
    if (rule == SS_RULE_NONE)
        return;
    s->rule = rule;
    s->ss_t = t;
    s->ss_cwnd_bytes = s->ti.cwnd_bytes;
}

/* Sum the streams' latest readings into a. */
static void aggregate(const qp_run *r, out_agg *a)
{
    for (int i = 0; i < r->n; i++) {
        const qp_stream *s = &r->streams[i];

        a->bytes_sent += s->sent;
        a->bytes_acked += s->acked;
        a->cwnd_bytes += s->ti.cwnd_bytes;
        a->retransmits += s->ti.total_retrans;
    }
}

/* The least steady BBR mode over the streams: PROBE_RTT, DRAIN, STARTUP, PROBE_BW. */
static qw_bbr_mode worst_mode(qw_bbr_mode a, qw_bbr_mode b)
{
    static const int rank[] = { [QW_BBR_NONE] = 0, [QW_BBR_PROBE_BW] = 1,
                                [QW_BBR_STARTUP] = 2, [QW_BBR_DRAIN] = 3, [QW_BBR_PROBE_RTT] = 4 };

    return rank[b] > rank[a] ? b : a;
}

/* The quick window's view of this sample: sums, the largest and smallest RTT, the backlog
 * to drain (qw_drain_bytes), the worst BBR mode. */
static void window_sample(const qp_run *r, double t, qw_sample *q)
{
    uint64_t backlog[QP_MAX_STREAMS], cwnd[QP_MAX_STREAMS];

    memset(q, 0, sizeof(*q));
    q->t_s = t;
    q->bbr_cruising = r->n > 0;
    for (int i = 0; i < r->n; i++) {
        const qp_tcpinfo *ti = &r->streams[i].ti;
        uint32_t mrtt = ti->bbr_min_rtt_us ? ti->bbr_min_rtt_us : ti->min_rtt_us;

        backlog[i] = r->streams[i].sent > r->streams[i].acked
                         ? r->streams[i].sent - r->streams[i].acked : 0;
        cwnd[i] = ti->cwnd_bytes;
        q->delivered_bytes += r->streams[i].acked + (uint64_t)ti->sacked_segments * ti->mss_bytes;
        q->cwnd_bytes += ti->cwnd_bytes;
        q->retrans += ti->total_retrans;
        q->in_recovery |= ti->ca_state >= 2;
        q->in_timeout |= ti->ca_state == SS_CA_LOSS;
        q->overshoot_recovery |= r->streams[i].overshoot_recovery;
        q->ssthresh_set |= r->streams[i].ssthresh_set;
        q->stream_events += (uint32_t)r->streams[i].began_event;
        q->cuts_kept += r->streams[i].cut == QW_CUT_KEPT;
        q->cuts_undone += r->streams[i].cut == QW_CUT_UNDONE;
        q->limited_us += (ti->rwnd_limited_us + ti->sndbuf_limited_us) / (uint64_t)r->n;
        q->rwnd_limited_us += ti->rwnd_limited_us / (uint64_t)r->n;
        q->rwnd_bytes += ti->snd_wnd_bytes;
        q->rwnd_top_bytes += QW_WINDOW_TOP(ti->snd_wscale);
        if (ti->rtt_us > q->rtt_us)
            q->rtt_us = ti->rtt_us;
        if (ti->rtt_us && (q->rtt_lo_us == 0 || ti->rtt_us < q->rtt_lo_us))
            q->rtt_lo_us = ti->rtt_us;
        if (ti->mss_bytes > q->mss_bytes)
            q->mss_bytes = ti->mss_bytes;
        if (ti->reordering_segments > q->reordering_segments)
            q->reordering_segments = ti->reordering_segments;
        if (mrtt && (q->min_rtt_us == 0 || mrtt < q->min_rtt_us))
            q->min_rtt_us = mrtt;
        q->bw_bps += ti->has_bbr ? ti->bbr_bw_bps : 0;
        q->bbr_cruising &= ti->has_bbr && qw_bbr_cruising(ti->bbr_pacing_gain, ti->bbr_cwnd_gain);
        if (ti->has_bbr)
            q->bbr_mode = worst_mode(q->bbr_mode,
                                     qw_bbr_mode_from_gains(ti->bbr_pacing_gain, ti->bbr_cwnd_gain));
    }
    q->backlog_bytes = qw_drain_bytes(backlog, cwnd, r->n);
}

/* The largest smoothed RTT among the streams (0 while none is valid). */
static uint32_t largest_rtt_us(const qp_run *r)
{
    uint32_t rtt = 0;

    for (int i = 0; i < r->n; i++)
        if (r->streams[i].ti.rtt_us > rtt)
            rtt = r->streams[i].ti.rtt_us;
    return rtt;
}

/* 1 when the streams together have left slow-start at time t, with out's ss_t and ss_rule
 * set: every one has, or (plateau: several BBR streams whose sum stopped growing) all but
 * one (ss_streams_left). */
static int streams_left_ss(qp_run *r, double t, int plateau)
{
    int done = 0, last = -1;

    for (int i = 0; i < r->n; i++) {
        if (r->streams[i].rule == SS_RULE_NONE)
            continue;
        done++;
        if (last < 0 || r->streams[i].ss_t >= r->streams[last].ss_t)
            last = i;
    }
    if (!ss_streams_left(r->n, done, plateau))
        return 0;
    if (done == r->n) {
        r->out.ss_t = r->streams[last].ss_t;
        r->out.ss_rule = r->streams[last].rule;
    } else {
        r->out.ss_t = t;
        r->out.ss_rule = SS_RULE_STREAMS_PLATEAU;
    }
    return 1;
}

/* When the streams have left slow-start: record it, print it, open the quick window. */
static void check_ss_end(qp_run *r, const out_agg *a)
{
    qw_params p = { .tolerance = r->o->quick_tolerance_pct / 100.0,
                    .min_s = r->o->quick_ms / 1000.0, .max_s = r->o->quick_max_ms / 1000.0,
                    .sample_s = r->o->sample_ms / 1000.0, .streams = r->n,
                    .deadline_rtts = QP_DEADLINE_RTTS, .full_s = r->o->time_s,
                    .rwnd_fixed = !r->o->iperf2 && r->o->window_bytes > 0,
                    .drain_max_s = run_drain_max_s(r->o) };
    uint64_t exit_cwnd = 0;
    int after_loss = 0, plateau;
    qw_sample q;

    /* the quick window's witnesses of the buffer and the capacity (qw_ss_see); a full run
     * has no window */
    if (!r->quick_open && r->o->mode != MODE_FULL) {
        window_sample(r, a->t, &q);
        qw_ss_see(&r->ss_seen, &q);
    }
    if (r->out.ss_ended)
        return;
    /* A BBR stream's startup ends only when its own delivery stops growing, and in a pipe the
     * others have filled it grows for seconds by taking their share: the pipe is full when the
     * sum stops growing. A loss-based stream's ends at its first loss, and its doubling in a
     * full pipe meets one within a round or two: those wait for every stream. */
    plateau = r->n > 1 && ss_cc_from_name(r->congestion) == SS_CC_BBR &&
              ss_sum_feed(&r->ss_sum, a->t, a->bytes_acked, largest_rtt_us(r));
    if (!streams_left_ss(r, a->t, plateau))
        return;
    r->out.ss_ended = 1;
    out_ss_end(r);
    if (r->o->mode == MODE_FULL)
        return;
    for (int i = 0; i < r->n; i++) {
        const qp_stream *s = &r->streams[i];

        exit_cwnd += ss_exit_cwnd(s);
        after_loss |= s->ti.total_retrans > 0;
    }
    /* the min RTT as the window's samples read it (qwreplay opens on the same) */
    window_sample(r, a->t, &q);
    p.base_rtt_s = q.min_rtt_us / 1e6;
    p.bbr = ss_cc_from_name(r->congestion) == SS_CC_BBR;
    p.beta = cc_beta(r);
    qw_open(&r->qw, &p, a->t, exit_cwnd, after_loss);
    qw_seen(&r->qw, &r->ss_seen);
    r->quick_open = 1;
    out_phase("measuring", a->t);
}

/* Close the quick window with the window's verdict, at time t with sent bytes written. */
static void close_quick(qp_run *r, double t, uint64_t sent)
{
    const qw_estimate *e = qw_result(&r->qw);
    qw_answer a = qw_answer_of(&r->qw, r->o->time_s);
    double start = qw_start_t(&r->qw);

    r->quick_closed = 1;
    r->out.quick_end_t = t;
    r->out.quick_bytes_sent = sent;
    if (start < 0 || e->rate_bps <= 0 || a.rate_bps <= 0)
        return;
    r->out.quick_entered = 1;
    r->out.quick_converged = r->qw.state == QW_CONVERGED;
    r->out.quick_answered = r->out.quick_converged || !r->o->until_converged;
    r->out.quick_window_s = qw_end_t(&r->qw) - start;
    r->out.quick_bps = a.rate_bps;
    r->out.quick_lo_bps = a.lo_bps;
    r->out.quick_hi_bps = a.hi_bps;
    r->out.quick_bound = a.by;
    r->out.quick_ci_frac = a.ci_frac;
    r->out.quick_steady_bps = e->rate_bps;
    r->out.quick_steady_ci_frac = e->ci_frac;
    r->out.quick_batches = e->batches;
    r->out.quick_basis = e->basis;
    r->out.quick_excluded_s = e->excluded_s;
    r->out.quick_hold = qw_hold_of(&r->qw);
}

/* Feed the open quick window; close it when it converged or gave up. */
static void feed_quick(qp_run *r, const out_agg *a)
{
    qw_sample q;

    if (!r->quick_open || r->quick_closed)
        return;
    window_sample(r, a->t, &q);
    if (qw_feed(&r->qw, &q) == QW_OPEN)
        return;
    close_quick(r, a->t, a->bytes_sent);
    /* validate goes on to the full run; quick mode too when it was asked to run until
     * converged and did not (the paper's fallback: the full run's figure is the result) */
    if (r->o->mode == MODE_VALIDATE || !r->out.quick_answered)
        out_phase("full", a->t);
}

/* Print the human interval line when one is due. */
static void maybe_interval(qp_run *r, const out_agg *a)
{
    double iv = r->o->interval_s;

    if (iv <= 0 || a->t + 1e-9 < r->next_interval_t)
        return;
    out_interval(r, r->interval_t0, a->t);
    for (int i = 0; i < r->n; i++) {
        r->streams[i].iv_acked0 = r->streams[i].acked;
        r->streams[i].iv_retr0 = r->streams[i].ti.total_retrans;
    }
    r->interval_t0 = a->t;
    while (r->next_interval_t <= a->t + 1e-9)
        r->next_interval_t += iv;
}

/* A sender's write failure as an error; 0 if every sender is fine. */
static int check_senders(const qp_run *r, qp_err *e)
{
    for (int i = 0; i < r->n; i++) {
        int en = atomic_load(&r->streams[i].send_errno);

        if (en) {
            QP_ERR(e, "io", "writing to data stream %d: %s", r->streams[i].id, strerror(en));
            return -1;
        }
    }
    return 0;
}

/* Take one sample at time t: TCP_INFO, detectors, events; 0 or -1 with e set. */
static int take_sample(qp_run *r, double t, qp_err *e)
{
    out_agg a = { .t = t };

    int bbr = ss_cc_from_name(r->congestion) == SS_CC_BBR;
    double beta = cc_beta(r);

    for (int i = 0; i < r->n; i++)
        sample_stream(&r->streams[i], t, bbr, beta);
    aggregate(r, &a);
    a.inst_bps = ring_inst_bps(r, t, a.bytes_acked);
    a.cumu_bps = t > 0 ? (double)a.bytes_acked * 8.0 / t : 0.0;
    ring_push(r, t, a.bytes_acked);
    r->last_t = t;
    r->last_acked = a.bytes_acked;
    r->last_sent = a.bytes_sent;
    out_sample(r, &a);
    check_ss_end(r, &a);
    feed_quick(r, &a);
    maybe_interval(r, &a);
    return check_senders(r, e);
}

/* Read what the server said on the control socket mid-test: always an error. */
static int control_event(qp_run *r, qp_err *e)
{
    int st;

    if (iperf3_read_state(&r->rd, r->o->connect_timeout_s, &st, e) < 0) {
        if (strcmp(e->code, "eof") == 0)
            QP_ERR(e, "protocol", "the server closed the control connection during the test");
        return -1;
    }
    return iperf3_unexpected(&r->rd, st, ST_TEST_RUNNING, r->o->connect_timeout_s, e);
}

/* Sleep until deadline, watching the control socket; 0, 1 on a signal, -1 on error. */
static int wait_tick(qp_run *r, double deadline, qp_err *e)
{
    char msg[128];
    int w;

    if (net_interrupted)
        return 1;
    if (r->ctrl < 0) {
        double left = deadline - net_now();

        if (left > 0 && poll(NULL, 0, (int)(left * 1000.0) + 1) < 0 && net_interrupted)
            return 1;
        return 0;
    }
    if (net_reader_pending(&r->rd) > 0)
        return control_event(r, e);
    w = net_wait_readable(r->ctrl, deadline, msg, sizeof(msg));
    if (w == NET_ERR_INTR)
        return 1;
    if (w < 0) {
        QP_ERR(e, "io", "%s", msg);
        return -1;
    }
    return w == 1 ? control_event(r, e) : 0;
}

/* 1 if the mode's end is reached at time t. */
static int should_end(const qp_run *r, double t)
{
    if (t >= r->o->time_s - 1e-9)
        return 1;
    return r->o->mode == MODE_QUICK && r->quick_closed && r->out.quick_answered;
}

/* Sample until the mode's end (or a signal); 0 when the test should end normally,
 * -1 with e set on a server or socket error. */
int measure_loop(qp_run *r, qp_err *e)
{
    double period = r->o->sample_ms / 1000.0;
    double next = r->t0 + period;

    for (;;) {
        int w = wait_tick(r, next, e);
        double now;

        if (w < 0)
            return -1;
        if (w > 0) {
            r->out.interrupted = 1;
            return 0;
        }
        now = net_now();
        if (now < next)
            continue;
        /* A late tick is taken now; missed ticks are skipped, not bunched up. */
        next += period;
        if (next < now)
            next = now + period;
        if (take_sample(r, now - r->t0, e) < 0)
            return -1;
        if (should_end(r, now - r->t0))
            return 0;
    }
}

/* Read the final counters after the drain and fill r->out. */
void measure_final(qp_run *r)
{
    qp_outcome *o = &r->out;
    uint64_t rtt_sum = 0;
    char msg[128];

    /* A window still open when -t or a signal ended the run is measured as far as it got. */
    if (r->quick_open && !r->quick_closed) {
        qw_stop(&r->qw);
        close_quick(r, r->last_t, r->last_sent);
        /* the run reached -t (or a signal) before the deadline: its own figure is the
         * answer, as a full run's is */
        r->out.quick_answered = r->out.quick_converged;
    }
    o->bytes_sent = o->bytes_acked = 0;
    o->retransmits = 0;
    o->min_rtt_us = 0;
    for (int i = 0; i < r->n; i++) {
        qp_stream *s = &r->streams[i];

        if (tcpinfo_read(s->fd, &s->ti, msg, sizeof(msg)) == 0)
            s->acked = s->ti.bytes_acked > s->preamble_bytes
                           ? s->ti.bytes_acked - s->preamble_bytes : 0;
        s->sent = stream_sent(s);
        o->bytes_sent += s->sent;
        o->bytes_acked += s->acked;
        o->retransmits += s->ti.total_retrans;
        rtt_sum += s->ti.rtt_us;
        if (s->ti.min_rtt_us && (o->min_rtt_us == 0 || s->ti.min_rtt_us < o->min_rtt_us))
            o->min_rtt_us = s->ti.min_rtt_us;
    }
    o->rtt_us = r->n ? (uint32_t)(rtt_sum / (uint64_t)r->n) : 0;
    /* The MSS grows after the first data on some paths (loopback: 32768 -> 65483). */
    if (r->n && r->streams[0].ti.mss_bytes)
        r->mss_bytes = r->streams[0].ti.mss_bytes;
}

/* Print the human report's last, partial interval. */
void measure_last_interval(qp_run *r)
{
    out_agg a = { .t = r->out.elapsed_s };

    if (r->o->interval_s <= 0 || a.t - r->interval_t0 < 0.01)
        return;
    aggregate(r, &a);
    r->next_interval_t = a.t;
    maybe_interval(r, &a);
}
