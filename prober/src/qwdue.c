/* qwdue.c: when the quick window answers (quickwin.h, qwint.h): the deadline after slow-start,
 * brought forward by the drain the backlog leaves for, and the planned checks whose levels
 * sum to the answer's 95 %. */
#include "qwint.h"

#include <math.h>

#define QW_CHECK_STEP 0.25      /* checks every quarter of --quick-ms after the first: an
                                   answer comes at most that much after its gates passed.
                                   More checks share QW_ALPHA thinner, but the t quantile
                                   grows slowly with it: replayed on the kept runs, BBR's
                                   default-matrix answers came 0.3 s sooner at the median
                                   than with half of --quick-ms, coverage the same */
#define QW_DUE_SHARE 0.5        /* ... and the deadline's share of it (qw_plan_checks): most
                                   Reno and CUBIC windows answer there (a fifth widened
                                   Reno's median interval from 16 to 21 % on replay) */
#define QW_SS_ALLOWANCE_S 1.0   /* slow-start's share of the answer's time (qw_due_s): a
                                   second, or QW_SS_ROUNDS of the path's RTT if longer */
#define QW_SS_ROUNDS 10         /* doubling each round, slow-start takes 10 initial windows
                                   to 10,000 packets, past the BDP of most paths */
#define QW_DUE_KEEP 0.9         /* ... but a late slow-start takes at most a tenth of the
                                   window: the evidence that bounds the interval (loss-free
                                   packets, batches) grows with its length, and a window cut by
                                   a quarter widened a 140 ms path's interval from 8 to 17 % */

/* Seconds after slow-start ended at open_t that the answer is due: p->max_s, brought
 * forward for a slow-start that ran past its allowance (a second, or ten rounds of the
 * path's RTT: delay jitter holding off its exit, HyStart's delay test misled) so that the
 * answer still comes max_s plus the allowance after the first byte, down to QW_DUE_KEEP of
 * max_s, never below --quick-ms. */
double qw_due_s(const qw_params *p, double open_t)
{
    double allowance = fmax(QW_SS_ALLOWANCE_S, QW_SS_ROUNDS * p->base_rtt_s);
    double due = fmax(p->max_s + allowance - open_t, QW_DUE_KEEP * p->max_s);

    due = fmin(p->max_s, due);
    return fmax(due, fmin(p->min_s, p->max_s));
}

/* The window's loss events that may recur among a stopped sender's backlog: any with BBR,
 * those not at the top of the buffer otherwise, since a sender that stopped writing no
 * longer fills the queue. */
static uint32_t backlog_loss_events(const qw_window *w)
{
    return w->p.bbr ? w->events : w->random_events;
}

/* 1 if a loss among backlog_bytes is likely (5 % or more) at the rate of events in the
 * packets measured. */
static int backlog_loss_likely(const qw_window *w, uint32_t events, double backlog_bytes)
{
    double packets = qw_packets_measured(w), mss = qw_mss(w->mss_bytes);

    if (events == 0 || packets < 1)
        return 0;
    return 1.0 - exp(-(double)events / packets * backlog_bytes / mss) >= 0.05;
}

/* The backlog the streams leave to drain, in bytes at their summed rate: each stream's
 * (backlog[i], written and not yet acked) leaves at its share of the rate, and that share is
 * its share of the summed cwnd (the streams share one path's round trip), but not below 1 / n
 * of it: a stream with a small share takes more once the others are done, so the old
 * estimate (the busiest stream's backlog at an n-th of the rate) bounds it. And all the
 * streams' bytes leave at no more than the summed rate. With 4 CUBIC streams on 100 Mbit/s x
 * 180 ms one stream held 8.5 MB at 75 of 85 Mbit/s, the others 0.24-0.56 MB: n x the busiest
 * read 34 MB, 2.9 s of drain, and the window closed 0.74 s after slow-start (its deadline
 * was 4 s after it); the busiest at its own share drains in about 0.9 s. */
uint64_t qw_drain_bytes(const uint64_t *backlog, const uint64_t *cwnd, int n)
{
    double sum = 0, cwnd_sum = 0, last = 0;

    for (int i = 0; i < n; i++) {
        sum += (double)backlog[i];
        cwnd_sum += (double)cwnd[i];
    }
    for (int i = 0; i < n; i++) {
        double own = (double)n * (double)backlog[i];

        if (cwnd[i] > 0)
            own = fmin(own, (double)backlog[i] * cwnd_sum / (double)cwnd[i]);
        last = fmax(last, own);
    }
    return (uint64_t)fmax(sum, last);
}

/* Keep the largest backlog of the last half to whole second. The sender refills a stream's
 * socket buffer in bursts, when it falls below its low-water mark: just before a refill the
 * backlog reads low, and a window that closed on that reading met the refill at its next
 * sample (the dial-up row's drain: 0.4 s read, 0.83 s taken). Half a second holds a refill
 * cycle at the rates where it matters (the cycle is the low-water mark's time at the rate). */
void qw_track_backlog(qw_window *w, const qw_sample *s)
{
    if (s->t_s - w->backlog_t0 >= 0.5) {
        w->backlog_max[1] = w->backlog_max[0];
        w->backlog_max[0] = 0;
        w->backlog_t0 = s->t_s;
    }
    if (s->backlog_bytes > w->backlog_max[0])
        w->backlog_max[0] = s->backlog_bytes;
}

/* What is left to drain when the sender stops, in bytes at the summed rate: the most the
 * streams held over the last half to whole second (qw_track_backlog, qw_drain_bytes). */
static double backlog_held(const qw_window *w)
{
    uint64_t held = w->backlog_max[0] > w->backlog_max[1] ? w->backlog_max[0] : w->backlog_max[1];

    return (double)held;
}

/* 1 if a loss among the backlog a run leaves when its sender stops is likely (qwint.h): 5 %
 * or more at the rate of the window's loss events, counted stream by stream where that
 * counts more (any stream's loss holds the end back). The full run's end drains as the quick
 * window's does (drain_s), but one event is an occurrence, not a rate: a lone
 * event in a BBR window is usually STARTUP's overshoot still draining (10 Mbit/s x 200 ms,
 * 2-BDP buffer: one loss in DRAIN, then none in the 16 s after it). */
int qw_tail_loss_likely(const qw_window *w)
{
    uint32_t events = backlog_loss_events(w);

    if (w->random_stream_events > events)
        events = w->random_stream_events;
    return events >= 2 && backlog_loss_likely(w, events, backlog_held(w));
}

/* Seconds from the window's close to the answer, once measuring began. Every byte written
 * must be acked first, and a stream's backlog (its socket buffer as well as its flight)
 * leaves at about its share of the rate measured so far (Little's law: in the last bench the
 * socket buffer made the drain 1.3-1.5 smoothed RTTs on clean single-stream paths, and the
 * answer came late; its share is its share of the summed cwnd: qw_drain_bytes); the stream
 * that finishes last sets it, and the most the streams held over the last second counts
 * (qw_track_backlog, which has already taken in s). At least one smoothed
 * RTT (the slowest stream's), and two with several streams, as they finish unevenly. A lost
 * packet near the end of the backlog is repaired only after a loss probe (RACK-TLP, RFC 8985:
 * 2 SRTT after the last send) and the retransmission's round trip: three more smoothed RTTs
 * where such a loss is likely (4-stream BBR on a lossy 150 ms path drained in 6.7-10
 * smoothed RTTs). The rate is never taken below the connection's own average since its first
 * byte: a recovery that stalls delivery early in the window says nothing of the rate the path
 * drains at (a held-out BBR path at 20 Mbit/s x 8 ms with +-1 ms of netem-order jitter
 * delivered nothing for 0.14 s; the window's rate read 0.5 Mbit/s, its drain 3.3 s, and the
 * window stopped at 0.24 s with no estimate, so the quick run fell back to the full test). */
static double drain_s(const qw_window *w, const qw_sample *s)
{
    double srtt = s->rtt_us / 1e6, t = s->t_s - w->began_t, rate, backlog, drain;
    int streams = qw_streams(w);

    /* the rate is read over two round trips at least: over fewer it reads the flight's bursts */
    if (t < 2 * srtt || s->delivered_bytes <= w->start_delivered)
        return (streams > 1 ? 2 : 1) * srtt;
    rate = (double)(s->delivered_bytes - w->start_delivered) / t;
    if (s->t_s > 0)
        rate = fmax(rate, (double)s->delivered_bytes / s->t_s);
    backlog = backlog_held(w);
    drain = fmax((streams > 1 ? 2 : 1) * srtt, backlog / rate);
    return backlog_loss_likely(w, backlog_loss_events(w), backlog) ? drain + 3 * srtt : drain;
}

/* Bring the deadline forward to the latest time the window may close at s and still answer
 * by --quick-max-ms: the drain as it stands now, and one sampling period, since the window
 * closes only at a sample and the next one may come after it; never later than planned when
 * measuring began (plan_t), and not before two round trips of measuring (qw_feed also waits
 * for the first slice): an answer a little late beats a window closed before it measured
 * anything, which would run the full test instead. */
void qw_update_deadline(qw_window *w, const qw_sample *s)
{
    double t;

    if (w->p.deadline_rtts <= 0)
        return;
    t = w->open_t + w->p.max_s - w->p.sample_s - drain_s(w, s);
    w->deadline_t = fmin(w->plan_t, fmax(t, w->began_t + 2.0 * s->rtt_us / 1e6));
}

/* Plan the window's checks: the first after min_s of measuring, then every QW_CHECK_STEP
 * x min_s, and the deadline last. The window stops at the first check whose gates pass, so
 * which check it answers at depends on the data (optional stopping: checked at every slice,
 * an interval that each time holds the truth 95 % of the time holds it less often at the
 * first slice where it looks narrow). The chance that the interval it answers with misses
 * is at most the sum of the chances at each check (Bonferroni), so the statistics term is
 * at levels that sum to QW_ALPHA over the plan: QW_DUE_SHARE at the deadline, where every
 * window that has not stopped answers, the rest shared by the checks before it (all at the
 * deadline when none comes before it). The deadline may come sooner than planned
 * (qw_update_deadline): then some checks are never made, and the sum is smaller. */
void qw_plan_checks(qw_window *w)
{
    double first = w->began_t + w->p.min_s, last = w->open_t + w->p.max_s;
    int early;

    if (w->p.deadline_rtts > 0)
        last = fmin(last, w->plan_t);

    w->check_step_s = QW_CHECK_STEP * w->p.min_s;
    early = last > first + 1e-9 ? (int)ceil((last - first) / w->check_step_s - 1e-9) : 0;
    w->next_check_t = first;
    w->due_alpha = early > 0 ? QW_ALPHA * QW_DUE_SHARE : QW_ALPHA;
    w->check_alpha = early > 0 ? QW_ALPHA * (1 - QW_DUE_SHARE) / early : QW_ALPHA;
}

/* Put the answer off from deadline_rtts rounds to --quick-max-ms after slow-start for a
 * window whose rate changed level at a full link (the caller's test); 1 if it is now due
 * later than s. The rounds are the time TCP's own dynamics take; a change of level is the
 * path's (cross traffic coming and going) or the hosts' (on loopback the CPU is the
 * bottleneck, and the scheduler moves the rate by 10-40 % from one second to the next),
 * and those keep their own time, not the RTT's: a window of 100 rounds on a short path has
 * seen one or two of their levels, while the run's figure is the mix of all it will have
 * (loopback on a 2-core host, 20 validate runs of 20 s, every window `varying`: answered 1 s
 * after the first byte, 7 intervals of 20 held the run's figure; measured to 4 s, 13, the
 * 4 s of levels spanning more of what the scheduler gives). Only the new deadline answers
 * from here on: the old one's share of QW_ALPHA (due_alpha) moves to it, and the checks
 * between them are not made (a changed level holds the window open for good, so none
 * would stop it), so the plan's levels still sum to QW_ALPHA. Once per window: the plan is
 * then at --quick-max-ms already. */
int qw_put_off(qw_window *w, const qw_sample *s)
{
    double last = w->open_t + w->p.max_s;

    if (w->p.deadline_rtts <= 0 || w->plan_t >= last - 1e-9)
        return 0;
    w->plan_t = last;
    w->next_check_t = INFINITY;
    qw_update_deadline(w, s);
    return !qw_past_deadline(w, s->t_s);
}

/* 1 if the answer is due at t (the deadline, as it stands). */
int qw_past_deadline(const qw_window *w, double t)
{
    return t >= w->deadline_t - 1e-9;
}

/* 1 if a slice closing at t is a planned check (the deadline is one); moves the plan on. */
int qw_at_check(qw_window *w, double t)
{
    double slack = w->p.sample_s / 2;   /* a slice closes at a sample: timer jitter */

    if (qw_past_deadline(w, t))
        return 1;
    if (t < w->next_check_t - slack)
        return 0;
    while (w->next_check_t <= t + slack)
        w->next_check_t += w->check_step_s;
    return 1;
}

/* The share of the run's figure its end may lose to streams starved into retransmission
 * timeouts; 0 while the path holds two packets a stream and no stream was in a timeout at
 * most samples. Outside a timeout Linux keeps every
 * stream's cwnd at two packets or more (the ssthresh floor of Reno and CUBIC; BBR's least
 * target is four), so with less of the path than that a stream (the BDP at the capacity seen
 * plus the deepest queue) the streams' least flights overflow the buffer every round, losses
 * come faster than two or three packets in flight can repair by duplicate ACKs, and some
 * stream is always in a retransmission timeout, backed off (doubled at each one that fails:
 * RFC 6298; many flows on a thin link, Morris 1997). The run's end waits for every stream's
 * last bytes, and a stream starved at -t holds them until its backed-off timer fires, which
 * can be later than the prober's drain waits: the figure is then the bytes by -t over -t and
 * the whole drain. Eight BBR streams on 5 Mbit/s x 15 ms (a 27 kB buffer at 9000-byte
 * frames: four packets of path for eight) had six streams in a timeout with 55 packets
 * outstanding through most of each run; the window read the link's 4.8 Mbit/s, and three
 * of four 20 s runs waited out the 5 s drain for them: 4.02-4.13. */
double qw_timeouts_share(const qw_window *w)
{
    double mss = qw_mss(w->mss_bytes), end = w->slice_rtt_us / 1e6, pipe;

    /* the cheap tests first: the window asks at every check, and the capacity scans slices */
    if (w->p.drain_max_s <= end || w->p.full_s <= 0)
        return 0;
    /* The kernel's own reading first: some stream in a timeout (ca_state Loss) at most
     * samples is the starvation the packet count below infers, also where that count reads
     * two packets a stream or a little more (16 Reno streams on 5 Mbit/s x 30 ms, 1500 B:
     * 2.02 a stream, some stream in Loss at every sample, and the 20 s runs' ends waited
     * 0.8-1.6 s, 4.6 against 4.8 Mbit/s read). */
    if (2 * w->timeout_samples <= w->samples) {
        pipe = qw_capacity_seen(w) * qw_no_queue_rtt_s(w) * (1.0 + qw_deepest_queue(w));
        if (pipe <= 0 || pipe >= QW_SSTHRESH_FLOOR * mss * qw_streams(w))
            return 0;
    }
    /* qw_predict's figure has the last bytes acked a smoothed RTT after -t */
    return (w->p.drain_max_s - end) / (w->p.full_s + w->p.drain_max_s);
}
