/* qwbound.c: the quick answer's interval, built from the evidence the window has (qw_bound
 * in quickwin.h).
 *
 * A window that converged has a narrow statistical interval and nothing that says the rate
 * still moves. A window that reached its deadline first answers all the same, and what kept
 * it open becomes a term of the interval instead of a reason to run on:
 * - statistics: the batches' scatter (qw_predict's prediction interval);
 * - short: too few batches for an interval: the spread of the counted time's quarters;
 * - levels: the rate changed level (cross traffic starting or stopping): the rest of the
 *   run may sit at any of the levels seen, so the interval spans them (BBR: STARTUP's
 *   plateau is one when the window's rate is a change of level away from it);
 * - sawtooth (Reno, CUBIC): no level cycle seen and no queue that keeps the link full
 *   through a cut: after a cut cwnd is beta x (1 + B) BDP with a buffer of B BDP, and the
 *   link idles until cwnd is back at one BDP; the long-run share that leaves
 *   (qw_sawtooth_share) of the capacity the window saw is the lower end;
 * - random loss (Reno, CUBIC, fewer than three whole loss cycles): k loss events in n
 *   packets bound the loss-event rate (Poisson, 95 %), and at that rate TCP's loss
 *   response (Mathis et al. for Reno, RFC 9438 for CUBIC) may hold cwnd's peaks below the
 *   buffer's top: the same share, from a lower peak; it rises as packets pass (these two,
 *   and cwnd's spread under random losses seen, are qwfloor.c's qw_loss_floor);
 * - BBR: its rate over a gain cycle averages its bandwidth estimate, so the estimate (the
 *   largest delivery rate of the last 10 rounds) bounds the rate from above; but in its
 *   long-term bandwidth mode (qw_window.lt_bw) it paces at a lower average that it leaves
 *   within 48 rounds: the rest of the run may return to the largest estimate seen (lt_bw);
 *   and a window shorter than one gain cycle saw only some of its phases, so the rest of the
 *   run may run up to that estimate too (bbr_cycle; qwbbr.c);
 * - growing (Reno, CUBIC): cwnd still grew with no standing queue and no cut from the
 *   buffer's top: the link's capacity was not reached, so the capacity seen bounds nothing;
 *   the rate may rise as cwnd's growth law (Reno: a packet a round; CUBIC: RFC 9438's cubic
 *   from the latest cut) takes it, up to a capacity a queue proved (growth_ceiling);
 * - receiver's window: it, not cwnd or the path, held the rate for most of the window:
 *   the path was never probed, and the receiver may open its window at any time, up to the
 *   largest its window scale can express (qw_rwnd_ceiling);
 * - shared (Reno, CUBIC): the RTT rose less with cwnd than the flow's own rate explains,
 *   so other traffic shared the queue and the rate was a share, which moves: up to the
 *   link's rate as the queue drained (qwshare.c's qw_shared_ceiling);
 * - capacity: no side is above the largest rate the counted time's quarters ran at (unless
 *   growing, held by the receiver's window, or a share of a shared queue).
 * The widest side names its evidence (quick_bound_by). The terms map a steady rate r to the
 * run's figure as qw_predict does: run = quick + (r - steady) x (its share of the run). */
#include "qwint.h"

#include <math.h>
#include <stddef.h>

#define QW_QUARTERS 4           /* level pieces of the counted time */
#define RWND_HELD 1.25          /* BBR's probing gain (qw_rwnd_ceiling) */
#define RWND_STILL 1.01         /* a window within 1 % of its smallest held still */

/* Rates (bytes/s) of QW_QUARTERS equal pieces of the counted slices since measuring began
 * (transients the window dropped included); returns how many were formed. */
static int quarter_rates(const qw_window *w, double *rate)
{
    double total = 0, acc_b = 0, acc_s = 0;
    int k = 0;

    for (int i = 0; i < w->n; i++)
        if (!w->s[i].excluded)
            total += w->s[i].t1 - w->s[i].t0;
    if (total <= 0)
        return 0;
    for (int i = 0; i < w->n && k < QW_QUARTERS; i++) {
        if (w->s[i].excluded)
            continue;
        acc_b += (double)w->s[i].bytes;
        acc_s += w->s[i].t1 - w->s[i].t0;
        if (acc_s >= total / QW_QUARTERS * 0.999 || i == w->n - 1) {
            rate[k++] = acc_b / acc_s;
            acc_b = acc_s = 0;
        }
    }
    return k;
}

/* The path's min RTT in seconds (the latest slice's smoothed RTT before one was seen): the
 * shortest a round can take, which the upper ends divide cwnd by. */
double qw_min_rtt_s(const qw_window *w)
{
    return (w->min_rtt_us ? w->min_rtt_us : w->slice_rtt_us) / 1e6;
}

/* The round trip with no queue in seconds, as the queues are read over (qw_no_queue_rtt_us:
 * the smoothed RTT's floor, or the min RTT if larger; the latest slice's smoothed RTT before
 * either is known). The lower ends and the answer divide cwnd by it: a window of W delivers
 * W per round that rounds actually take, and under jitter the min RTT is the lowest draw:
 * 8.8 ms on a 15 ms path with +-3 ms of jitter, where the smoothed RTT never read below
 * 18.1 ms (median 21.6). From 4 s to 20 s there, CUBIC's cwnd under 0.03 % loss averaged
 * 94.7 kB and carried 33.9 Mbit/s: 35 over the median, 42 over the floor, 86 over the min
 * RTT. The upper ends keep the min RTT, the shortest a round can take. Over this floor
 * they would be wrong: the queue that proves a capacity is read over the floor too, and
 * jitter of half the RTT reads as a queue at any cwnd. On 150 Mbit/s x 8 ms with normal
 * 3 ms jitter a "queue" at 7 kB capped them at 7.5-15 Mbit/s, where cwnd carried 23-35
 * once the kernel had learned the path's reordering. */
double qw_no_queue_rtt_s(const qw_window *w)
{
    uint32_t base = qw_no_queue_rtt_us(w->srtt_floor_us, w->min_rtt_us);

    return (base ? base : w->slice_rtt_us) / 1e6;
}

/* Smallest and largest of n rates. */
static void range_of(const double *rate, int n, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = 0;
    for (int i = 0; i < n; i++) {
        *lo = fmin(*lo, rate[i]);
        *hi = fmax(*hi, rate[i]);
    }
}

/* The mean rate of the window's slices with a standing queue, bytes/s: the link's rate (a
 * queue builds only at a full link); 0 when no slice kept one. */
static double queued_rate(const qw_window *w)
{
    double b = 0, s = 0;

    for (int i = 0; i < w->n; i++) {
        if (w->s[i].excluded || !(w->s[i].q_lo_min >= QW_BUSY_QUEUE))
            continue;
        b += (double)w->s[i].bytes;
        s += w->s[i].t1 - w->s[i].t0;
    }
    return s > 0 ? b / s : 0;
}

/* The capacity the window saw, bytes/s: the mean rate of its slices with a standing queue
 * (a queue builds only at a full link), at least the fastest quarter of the counted time. */
double qw_capacity_seen(const qw_window *w)
{
    double q[QW_QUARTERS], qlo, qhi;

    range_of(q, quarter_rates(w, q), &qlo, &qhi);
    return fmax(queued_rate(w), fmax(qhi, w->est.rate_bps / 8.0));
}

/* Poisson: the 95 % lower bound of the mean given k events (chi-square / 2), k >= 0. */
static double poisson_lower95(uint32_t k)
{
    static const double l[] = { 0.0, 0.0513, 0.355, 0.818, 1.366, 1.970, 2.613, 3.285, 3.981,
                                4.695, 5.425 };

    return k < sizeof l / sizeof l[0] ? l[k] : fmax(0, k - 1.645 * sqrt((double)k));
}

/* Seconds from measuring's start to the latest slice's end; 0 before any slice. */
double qw_counted_s(const qw_window *w)
{
    return w->n ? w->s[w->n - 1].t1 - w->start_t : 0;
}

/* The share of the time since measuring began (to the latest slice's end) by which a
 * per-stream cumulative time in microseconds grew from us0 to us; 0 before any time passed. */
static double time_share(const qw_window *w, uint64_t us0, uint64_t us)
{
    double span_s = qw_counted_s(w);

    return span_s > 0 ? (double)(us - us0) / (span_s * 1e6) : 0;
}

/* 1 if the stream was mostly receiver- or send-buffer-limited since measuring began: its
 * cwnd does not grow (the kernel grows cwnd only while it limits the sender), so no growth
 * law lifts the rate; a loss still cuts cwnd (qw_loss_floor, rest_expected). */
int qw_mostly_limited(const qw_window *w)
{
    return time_share(w, w->limited_us0, w->limited_us) >= 0.5;
}

/* The largest rate (bytes/s) the receivers' windows allow, when they held the rate and may
 * open; 0 otherwise, and when the receiver's buffer is fixed (qw_params.rwnd_fixed).
 * - They held it when the sender waited on them for a quarter of the window or more
 *   (tcpi_rwnd_limited: all of it for Reno and CUBIC, the probe rounds and some more for
 *   BBR) and, at their smallest since measuring began, they allowed no more than the rate at
 *   the min RTT with BBR's probing gain on top: a wider window lets cwnd or the probes past
 *   it, and the path sets the rate (400 Mbit/s x 200 ms: BBR's inflight cap of two BDPs met
 *   a 20 MB window a fifth of the time). Their smallest, not their latest: a receiver that
 *   opens its window as the quick window closes is the rate about to rise.
 * - Then the rate is the window's, not the path's, which the window never probed. Linux
 *   grows a receive buffer only when a round trip delivers more than the one before, which a
 *   flow its window holds does not, so the window may stay (4.0 Mbit/s for 20 s on a
 *   100 Mbit/s x 180 ms path, 90 KB) or open seconds later (the same path: 85 KB growing to
 *   142 KB in steps while the window measured 6.0 Mbit/s, then 3.2 MB; 13.6 over 20 s).
 * - It can open no further than 65535 << the peer's window scale (RFC 7323), the upper
 *   end; unknown (runs recorded before it was): scale 14, and a window that held still
 *   counts as the receiver's largest, as it can be at any scale.
 * - Except a window that held still (within 1 %) at a size the receiver's largest can be:
 *   Linux takes the smallest scale that fits the largest buffer the socket may grow to
 *   (tcp_rmem[2], or SO_RCVBUF when set), so that buffer is over half the top and its window
 *   (tcp_win_from_space: a quarter of the buffer or more) over an eighth. A receiver at its
 *   largest (4,464,000 bytes of scale 7's 8,388,480 at tcp_rmem[2] = 6 MB on a 300 Mbit/s x
 *   140 ms path) or with its buffer fixed (iperf -s -w 256K: 366,736 bytes of 524,280) keeps
 *   it; one that is still growing moves it, and a stalled one sits far below. */
double qw_rwnd_ceiling(const qw_window *w)
{
    double top = w->rwnd_top_bytes ? (double)w->rwnd_top_bytes
                                    : (double)QW_WINDOW_TOP(14) * qw_streams(w);
    double rtt = qw_min_rtt_s(w);

    if (w->p.rwnd_fixed || rtt <= 0 ||
        (double)w->rwnd_min_bytes / rtt > RWND_HELD * w->est.rate_bps / 8.0 ||
        time_share(w, w->rwnd_limited_us0, w->rwnd_limited_us) < 0.25)
        return 0;
    if ((double)w->rwnd_max_bytes <= RWND_STILL * (double)w->rwnd_min_bytes &&
        (!w->rwnd_top_bytes || (double)w->rwnd_min_bytes >= top / 8))
        return 0;
    return top / rtt;
}

/* 1 if cwnd fell more than two cuts (beta^2) below the peak the latest congestion event
 * cut (slow-start's exit before one was seen): more than one overflow of the buffer explains.
 * Reordering does it: a 100 Mbit/s x 40 ms path with +-5 ms of jitter each way cut Reno
 * five times in a row after slow-start, from 1.28 MB to 58 kB, and its cwnd took the rest
 * of the run to climb back (14 Mbit/s at 1.5 s, 46 at 5.9 s, 69.9 over 20 s). */
static int cut_below_cycle(const qw_window *w)
{
    double top = w->npeaks ? (double)w->peak[w->npeaks - 1] : (double)w->exit_cwnd_bytes;

    return (double)w->cwnd_low_bytes < w->p.beta * w->p.beta * top;
}

/* 1 if the window's evidence leaves the link's capacity above its rate (qwint.h): a
 * loss-based cc, neither mostly receiver- or send-buffer-limited nor settled into three whole
 * cycles, whose cwnd grew since its latest cut (or since measuring began), with no standing
 * queue of its own in the latest slice and no cut from the top of a buffer seen in the
 * window (every congestion event it counted may be random), or cuts deeper than the
 * buffer's (cut_below_cycle). Its cwnd grows every round until the buffer overflows, and
 * with no queue the rate grows with it. A queue shown shared (qw_queue_shared) is no
 * exception: there the flow's rate is its share of the link, cwnd over all that is in
 * flight, and that share grows with cwnd while the others' bytes hold. CUBIC against BBR on
 * 150 Mbit/s x 130 ms (1.5-BDP buffer) left slow-start at 100 kB and climbed with no loss
 * for 20 s, 3.6 -> 54 Mbit/s a second; its window read 7.3 with the queue shared (0.24), and
 * the run made 29.3. */
int qw_growing(const qw_window *w)
{
    if (w->p.bbr || w->p.beta <= 0 || w->n == 0 || qw_mostly_limited(w) ||
        (w->est.basis == QW_BASIS_LOSS_CYCLES && w->est.batches >= 3))
        return 0;
    return (w->events == w->random_events || cut_below_cycle(w)) &&
           w->slice_cwnd0 > w->cwnd_low_bytes &&
           (!(w->s[w->n - 1].q_lo_min >= QW_BUSY_QUEUE) || qw_queue_shared(w));
}

/* The largest capacity (bytes/s) the evidence allows: a standing queue holds only while
 * more than a BDP is in flight, and cwnd bounds what is in flight, so a queue seen with
 * cwnd W in congestion avoidance says the capacity is below W / min RTT
 * (qw_window.queue_cwnd_bytes); slow-start's bursts queue with less (qw_slow_start_bdp
 * allows for them). INFINITY when no queue was seen. */
static double capacity_ceiling(const qw_window *w, double min_rtt)
{
    double c = INFINITY;

    if (qw_queue_shared(w))
        return c;
    if (w->queue_cwnd_bytes > 0)
        c = (double)w->queue_cwnd_bytes / min_rtt;
    if (w->ss_bdp_bytes > 0)
        c = fmin(c, (double)w->ss_bdp_bytes / min_rtt);
    return c;
}

/* The capacity (bytes/s) a cut at the top of a buffer allows: the loss came with more than
 * a BDP in flight, so the capacity is below the cwnd it cut over the min RTT
 * (qw_window.top_cut_bytes); INFINITY when every event counted may be random. */
static double cut_ceiling(const qw_window *w, double min_rtt)
{
    return w->top_cut_bytes && !qw_queue_shared(w) ? (double)w->top_cut_bytes / min_rtt
                                                   : INFINITY;
}

/* cwnd's growth (bytes, summed over the streams) dt seconds after the window's end with no
 * loss: Reno one MSS a round a stream (a round lasts rtt: the min RTT for an upper end,
 * qw_no_queue_rtt_s for the answer); CUBIC (RFC 9438)
 * C x (t - K)^3 MSS from its epoch, with t - K at the window's end at most since, the seconds
 * since the latest cut (or the window's opening), plus a round for its target's look-ahead,
 * or Reno's if more. */
static double cwnd_growth(const qw_window *w, double since, double dt, double rtt)
{
    double mss = qw_mss(w->mss_bytes);
    int streams = qw_streams(w);
    double reno = streams * mss * dt / rtt;

    if (w->p.beta <= 0.6)
        return reno;
    return fmax(reno, streams * mss * QW_CUBIC_C * (pow(since + dt + rtt, 3) - pow(since, 3)));
}

/* The largest rate (bytes/s) the loss events seen allow: k events not at the top of a buffer
 * (nor following another recovery on a reordering path: qw_random_losses_shown) in n
 * packets put the loss-event rate above poisson_lower95(k) / n at 95 %, and at that
 * rate each stream's window averages qw_loss_window_pkts and peaks at 2 / (1 + beta) x that,
 * over min RTT at most; INFINITY when no such event was seen. */
static double loss_ceiling(const qw_window *w, double min_rtt)
{
    double mss = qw_mss(w->mss_bytes), packets = qw_packets_measured(w), p, peak;
    int streams = qw_streams(w);

    if (qw_random_losses_shown(w) == 0 || packets < 1)
        return INFINITY;
    p = fmin(1.0, poisson_lower95(qw_random_losses_shown(w)) / packets);
    peak = 2.0 / (1.0 + w->p.beta) * qw_loss_window_pkts(w->p.beta > 0.6, p, min_rtt);
    return streams * peak * mss / min_rtt;
}

/* Seconds from cwnd's growth epoch to t_end, the time cwnd_growth counts from: the latest
 * cut, or the window's opening if later; with several streams each has its own latest cut,
 * and the window's opening bounds them all. */
static double growth_since(const qw_window *w, double t_end)
{
    return t_end - (w->p.streams > 1 ? w->open_t : fmax(w->open_t, w->event_t));
}

/* The steady rate (bytes/s over the counted part and the rest of the run, pr->rest_s) of
 * the counted part at the rate measured, then cwnd / min RTT as cwnd grows from its latest
 * value by its law (cwnd_growth), up to the capacity a queue or a cut at a buffer's top
 * proved (capacity_ceiling, cut_ceiling) and below lossy (bytes/s); 0 where no time is left. */
static double grown_rate(const qw_window *w, const qw_prediction *pr, double lossy)
{
    double min_rtt = qw_min_rtt_s(w);
    double rate = w->est.rate_bps / 8.0, t_end = w->s[w->n ? w->n - 1 : 0].t1;
    double done = qw_counted_s(w), to_go = pr->rest_s - done, sum = 0, cap;
    double since = growth_since(w, t_end);
    int steps = 64;

    if (min_rtt <= 0 || rate <= 0 || to_go <= 0 || pr->rest_s <= 0)
        return 0;
    cap = fmax(rate, fmin(capacity_ceiling(w, min_rtt), cut_ceiling(w, min_rtt)));
    for (int k = 0; k < steps; k++) {
        double dt = (k + 0.5) * to_go / steps;
        double r = ((double)w->slice_cwnd0 + cwnd_growth(w, since, dt, min_rtt)) / min_rtt;

        sum += fmin(cap, fmax(rate, fmin(r, lossy))) * to_go / steps;
    }
    return (rate * done + sum) / pr->rest_s;
}

/* cwnd's growth over the rest of the run (grown_rate) below the rate the random losses seen
 * hold it (loss_ceiling), bytes/s. */
static double grown_below_losses(const qw_window *w, const qw_prediction *pr)
{
    return grown_rate(w, pr, loss_ceiling(w, qw_min_rtt_s(w)));
}

/* The growing term's upper side (grown_below_losses); 0 when the term does not apply
 * (qw_growing). */
static double growth_ceiling(const qw_window *w, const qw_prediction *pr)
{
    return qw_growing(w) ? grown_below_losses(w, pr) : 0;
}

/* The receiver_window term's upper side for Reno / CUBIC after a cut the kernel kept: the
 * receiver may open its window at once, but the rate then follows cwnd, which grows from
 * where it is by the cc's law below the rate the random losses seen hold it
 * (grown_below_losses). INFINITY otherwise: a flow that never cut is still in slow-start (no
 * ssthresh), which doubles cwnd each round once the window opens, and BBR's probes raise
 * its estimate by a quarter each gain cycle. */
static double rwnd_growth_ceiling(const qw_window *w, const qw_prediction *pr)
{
    double g;

    if (w->p.bbr || w->p.beta <= 0 || w->events <= w->undone_events)
        return INFINITY;
    g = grown_below_losses(w, pr);
    return g > 0 ? g : INFINITY;
}

/* Reno / CUBIC on a path that reorders packets: the upper side when the kernel undid a cut
 * in the window (qwundo.c: DSACKs showed every retransmission of a recovery spurious), 0
 * otherwise. The window's kept cuts may then be reordering too (RACK marks a packet lost
 * once later ones are acked past its reordering window, and an undo needs every
 * retransmission of the recovery shown spurious), and Linux learns the path's reordering as
 * the run goes on: each DSACK round widens RACK's window by a quarter of the min RTT, up to
 * the smoothed RTT (tcp_rack_update_reo_wnd), and raises its dupthresh (tp->reordering), so
 * such cuts thin out and cwnd grows on. A held-out path, CUBIC on 50 Mbit/s x 8 ms with
 * +-3 ms of jitter in netem's order: 6 cuts undone and 5 kept in 1 s windows with cwnd at
 * 7-14 kB; the windows read 8.0 and 11.4 Mbit/s (4.8-12.0, 10.0-12.4), and their runs, at
 * 6-12 Mbit/s for 3 s, then about 30, gave 26.9 and 26.2 over 20 s. Nothing in the window
 * says how soon the kernel is done learning, so the upper side is cwnd's growth with no
 * further cut (grown_rate, the random losses seen not holding it: they may be reordering),
 * up to a capacity a queue or a cut at a buffer's top proved. BBR ignores such verdicts. */
static double reorder_ceiling(const qw_window *w, const qw_prediction *pr)
{
    if (w->p.bbr || w->p.beta <= 0 || w->undone_events == 0 || w->n == 0 || qw_mostly_limited(w))
        return 0;
    return grown_rate(w, pr, INFINITY);
}

/* The random-loss floor (floor_rate, the long run at the loss-event rate p that
 * qw_random_loss_rate leaves open) as the steady rate over the run from the window's start
 * (pr->rest_s): the counted part at the rate measured, then cwnd's descent to the floor.
 * At p per packet each loss cuts one stream's cwnd by beta, so the streams' summed cwnd
 * loses p x (1 - beta) / streams of itself per packet sent, from where it is
 * (w->slice_cwnd0); between losses it grows, a round at a time, at the pace that balances
 * the losses at the mean window TCP's loss response keeps (qw_loss_window_pkts, W*: the
 * mean-field law rest_expected follows). Packets leave at cwnd / the round trip with no
 * queue (qw_no_queue_rtt_s), or at the rate measured while cwnd holds more than that in flight,
 * when a queue stands and a round lasts cwnd / that rate. Reaching the long run takes
 * several cuts: at 1e-4 on 95 Mbit/s x 40 ms with 1500-byte frames and a 1-BDP buffer, one
 * a 1.3 s at the link's rate, and about 7 s from 2 BDP of cwnd to the floor's with no growth
 * between them. With that growth left out, the lower end sat 0.2-4.8 % of the rate (median
 * 2.3) lower on the 71 kept runs the term bounds (CUBIC at 100 Mbit/s x 50 ms, 1-BDP
 * buffer: 81.3 -> 84.6 against a 20 s figure of 98.4); coverage the same.
 * Only while no random loss was seen: then the floor is what a loss not yet seen would do,
 * and it would start from the cwnd the flow has. Once random losses cut it, the flow may
 * be part-way down already, and p counts only the losses judged random (one at a queue near
 * the deepest counts as the buffer's): on held-out lossy paths (0.2 % at 180 ms) the
 * descent from that p read the lower end above the 20 s figure. The long run alone then. */
static double loss_descent(const qw_window *w, const qw_prediction *pr, double floor_rate)
{
    double base_rtt = qw_no_queue_rtt_s(w);
    double mss = qw_mss(w->mss_bytes), rate = w->est.rate_bps / 8.0;
    double done = qw_counted_s(w), to_go = pr->rest_s - done;
    double win = (double)w->slice_cwnd0, sum = 0, dt, wstar, cut;
    double p = qw_random_loss_rate(w);
    int streams = qw_streams(w), steps = 256;

    if (qw_random_loss_events(w) > 0 || w->n == 0 || base_rtt <= 0 || p <= 0 || to_go <= 0 ||
        floor_rate >= rate)
        return floor_rate;
    dt = to_go / steps;
    wstar = streams * qw_loss_window_pkts(w->p.beta > 0.6, p, base_rtt) * mss;
    cut = p * (1.0 - w->p.beta) / mss / streams;
    for (int k = 0; k < steps; k++) {
        double sent = fmin(rate, win / base_rtt), round = fmax(base_rtt, win / rate);

        sum += fmax(floor_rate, sent) * dt;
        /* semi-implicit, as rest_expected's: stable at any loss rate and step */
        win = (win + cut * wstar * wstar / round * dt) / (1.0 + cut * sent * dt);
    }
    return fmin(rate, (rate * done + sum) / pr->rest_s);
}

static double rest_expected(const qw_window *w, const qw_prediction *pr);

/* qw_loss_floor over the run that pr predicts (NULL: the long run alone): the random-loss
 * floor reached by its descent (loss_descent); *by as qw_loss_floor sets it. A cycles' floor
 * (qw_cycles_floor) is the spread's share of the rate they measured, taken as the loss
 * process's mean. The answer is the mean-field's expectation under the losses the window
 * counted (rest_expected); where that reads the rest of the run lower, the cycles ran above
 * where those losses hold cwnd, and the spread applies to the expectation. Held out, CUBIC on
 * 50 Mbit/s x 15 ms (0.3-BDP buffer, 0.03 % loss): a window whose cycles at level peaks read
 * 39.0 had a floor of 34.5, the expectation 34.1, and the 20 s figure was 33.9. */
static double run_loss_floor(const qw_window *w, double cap, const qw_prediction *pr,
                             qw_bound_by *by)
{
    double floor_rate = qw_loss_floor(w, cap, by), rate = w->est.rate_bps / 8.0, expected;

    if (pr && rate > 0 && qw_cycles_floor(w, cap)) {
        expected = rest_expected(w, pr);
        if (expected < rate)
            floor_rate *= expected / rate;
    }
    return *by == QW_BOUND_RANDOM_LOSS && pr ? loss_descent(w, pr, floor_rate) : floor_rate;
}

/* 1 if the window measured cwnd climbing back after a cut with the link not full
 * (qw_growing), and no cycle: every slice it counted came after its latest cut, or that cut
 * went deeper than one overflow of the buffer explains (cut_below_cycle). Its rate is the
 * climb's, and TCP's growth law takes cwnd on up to the link. A climb between cuts inside
 * the window is the sawtooth's own, which the rate measured already averages. */
static int climbing_back(const qw_window *w)
{
    return qw_growing(w) && (cut_below_cycle(w) || w->event_t <= w->start_t);
}

/* Loss-based cc: the steady rate (bytes/s, over the run from the window's start,
 * pr->rest_s) that TCP's laws make likeliest from where the window left cwnd; the rate
 * measured when neither random losses (two or more) nor a climb back (climbing_back) say
 * it moves, and for a stalled window (its rate is the connection's average: no law of
 * TCP's moves it).
 * - Random losses: a window that opens at slow-start's exit on a lossy path measures cwnd
 *   coming down from the exit's overshoot, not where the losses hold it: on 100 Mbit/s x
 *   60 ms with 0.1 % loss a CUBIC window rated 90 Mbit/s over 3.7 s, and the 20 s run 61.5
 *   (its 16 s after the window about 53). The rest of the run follows TCP's mean window
 *   under loss: each stream's cwnd w loses (1 - beta) w at each loss, p per packet sent,
 *   and grows at the pace that balances that at the average window TCP's loss response
 *   keeps (qw_loss_window_pkts, W*): dw/dt = p (1 - beta) (W*^2 / RTT - r w) / MSS,
 *   from the cwnd it has, at r = w / RTT, RTT the round trip with no queue (qw_no_queue_rtt_s).
 *   p is the median of the loss-event rate that k random events (every event where the
 *   queue cannot tell: qw_floor_loss_events) in n packets leave (Jeffreys' prior: about
 *   (k + 1/6) / n). 4 CUBIC streams on 150 Mbit/s x 90 ms, 2.5-BDP buffer, 0.2 % loss:
 *   no loss read random, 146.5 against a 20 s figure of 91.7; every loss counted, 119.2. One event is
 *   an occurrence, not a rate: on a 400 Mbit/s x 200 ms path with no random loss,
 *   slow-start's second cut counted as one, and its "rate" would have had the flow collapse
 *   in a run that held the link.
 * - A climb back: with no random loss to model, cwnd grows by its law (cwnd_growth, as the
 *   growing term's upper side has it). Reordering cut Reno on a jittered 100 Mbit/s x
 *   40 ms path from 1.28 MB to 58 kB, and its window read 36 Mbit/s while the 20 s run,
 *   climbing a packet a round, made 69.9.
 * r never goes above the rate measured, or in a climb back above the sawtooth's share of
 * the capacity seen (the rate while a queue stood: the link carried it): a rate below what
 * the losses allow is otherwise held by something they do not lift (a share of the link
 * under cross traffic, the link). The interval (qw_bound) keeps what the evidence allows
 * either way. */
static double rest_expected(const qw_window *w, const qw_prediction *pr)
{
    double base_rtt = qw_no_queue_rtt_s(w), mss = qw_mss(w->mss_bytes);
    double rate = w->est.rate_bps / 8.0, packets = qw_packets_measured(w);
    double t_end = w->n ? w->s[w->n - 1].t1 : 0, done = qw_counted_s(w);
    double to_go = pr->rest_s - done, top = rate, cap, since = growth_since(w, t_end);
    uint32_t k = qw_floor_loss_events(w);
    int streams = qw_streams(w), steps = 256, growing = climbing_back(w);
    double p, wstar = 0, win, cut, sum = 0, dt;

    if (w->p.bbr || w->p.beta <= 0 || (k < 2 && !growing) || packets < 1 || w->n == 0 ||
        base_rtt <= 0 || to_go <= 0 || rate <= 0 || w->stalled)
        return rate;
    if (growing) {
        cap = qw_capacity_seen(w);
        top = fmax(rate, qw_sawtooth_share(w->p.beta, qw_peak_top(w, cap * base_rtt)) * cap);
    }
    p = k >= 2 ? fmin(1.0, (k + 1.0 / 6.0) / packets) : 0;
    if (p > 0)
        wstar = qw_loss_window_pkts(w->p.beta > 0.6, p, base_rtt) * mss;
    win = (double)w->slice_cwnd0 / streams;
    cut = p * (1.0 - w->p.beta) / mss;
    dt = to_go / steps;
    for (int i = 0; i < steps; i++) {
        double r;

        if (p > 0) {
            r = fmin(top / streams, win / base_rtt);
            /* semi-implicit: stable at any loss rate and step, and cwnd stays positive */
            win = (win + cut * wstar * wstar / base_rtt * dt) / (1.0 + cut * r * dt);
        } else {
            win = ((double)w->slice_cwnd0 + cwnd_growth(w, since, (i + 0.5) * dt, base_rtt)) /
                  streams;
            r = fmax(fmin(top / streams, win / base_rtt), rate / streams);
        }
        sum += r * dt;
    }
    return (rate * done + streams * sum) / pr->rest_s;
}

/* Loss-based cc: what holds the window while the lowest rate its evidence allows (an
 * incomplete sawtooth, random loss not yet ruled out: qw_loss_floor) is further below its
 * estimate than the tolerance: the answer's interval (qw_bound) carries that floor, so a
 * window that stopped before it rose would report an interval wider than the tolerance. */
qw_hold qw_loss_floor_hold(const qw_window *w)
{
    qw_bound_by by;
    qw_prediction pr = { 0 };
    double rate = w->est.rate_bps / 8.0, floor_rate;

    if (w->p.full_s > 0)
        pr = qw_predict(w, w->p.full_s);
    floor_rate = run_loss_floor(w, qw_capacity_seen(w), w->p.full_s > 0 ? &pr : NULL, &by);

    if (rate <= 0 || rate - floor_rate <= w->p.tolerance * rate)
        return QW_HOLD_NONE;
    return by == QW_BOUND_RANDOM_LOSS ? QW_HOLD_RANDOM_LOSS : QW_HOLD_SAWTOOTH;
}

/* A window that delivered nothing over its counted time (qw_window.stalled): the rest of the
 * run may deliver nothing, or come back to the rate slow-start reached (its fastest sampling
 * period, a rate the path carried; the steady rate, the connection's average since its
 * first byte, if more). Not cwnd over the min RTT: on loopback that read 830 Gbit/s. */
static double stall_ceiling(const qw_window *w)
{
    return fmax(w->est.rate_bps / 8.0, w->ss_peak_rate);
}

/* BBR: its bandwidth estimate (bytes/s, summed over the streams: bw_max_bps) as an upper
 * end, but no faster than the connection delivered over any of its slices or slow-start's
 * sampling periods (ss_peak_rate): a rate the path carried. BBR's own rate samples each span
 * one round trip, well under a millisecond on loopback or a LAN, where the host's batching
 * of segments and ACKs reads bursts as bandwidth (loopback: 610 Gbit/s held as the estimate
 * in a run that delivered 36-40 Gbit/s in every 20 ms); over longer rounds a slice spans one
 * too, and the cap is the estimate itself. */
static double bbr_bw_carried(const qw_window *w)
{
    double fastest = w->ss_peak_rate;

    for (int i = 0; i < w->n; i++)
        if (w->s[i].t1 > w->s[i].t0)
            fastest = fmax(fastest, (double)w->s[i].bytes / (w->s[i].t1 - w->s[i].t0));
    return fmin(w->bw_max_bps / 8.0, fastest);
}

/* Widen [*lo, *hi] (steady bytes/s) to the levels the rest of the run may sit at when the
 * rate changed level at a full link (qw_window.varying): then something outside the flow
 * set it (cross traffic, a host's scheduler), on a schedule the window cannot see, and the
 * rest of the run may sit at a level it did not see. The batches (whole cycles of the
 * flow's own, so a batch's rate is a level, not a phase of a cycle) are a sample of the
 * levels the path gives, and one more falls within t(n - 1) x their spread x sqrt(1 + 1/n)
 * of their mean (the prediction interval of one more draw, at the deadline's level: the
 * statistics term's interval of the mean, est.ci_frac, x sqrt(n + 1)); the rest of the run
 * as one such level is the least it averages over. The range of the levels seen alone held
 * that the levels seen are all there are, as with the lab's on / off source: on loopback,
 * where the host's two cores set a rate that wanders by 10-30 % over seconds, the 20 s
 * figure fell outside that range in 10 of 20 runs (18 of 20 inside with this). */
static void unseen_levels(const qw_window *w, double steady, double *lo, double *hi)
{
    double half;

    if (!w->varying || w->est.batches < 2 || w->est.ci_frac <= 0)
        return;
    half = w->est.ci_frac * sqrt(w->est.batches + 1.0) * steady;
    *lo = fmin(*lo, fmax(0, steady - half));
    *hi = fmax(*hi, steady + half);
}

/* A term's sides (steady bytes/s) widen the bounds; by names the term that set the wider. */
static void widen(qw_bounds *b, double lo, double hi, qw_bound_by by)
{
    if (lo < b->lo)
        b->lo = lo;
    if (hi > b->hi)
        b->hi = hi;
    if (fmax(b->steady - lo, hi - b->steady) > b->width) {
        b->width = fmax(b->steady - lo, hi - b->steady);
        b->by = by;
    }
}

/* The sampling term: the prediction interval's sampling part, back to the steady rate (the
 * end's part is on the figure: bound_to_figure adds it after the cap), or, with too little
 * for batches, the range of the quarters' rates (short; up to the capacity seen with fewer
 * than two quarters). */
static void bound_sampling(const qw_prediction *pr, int nq, double qlo, double qhi, double cap,
                           qw_bounds *b)
{
    double half;

    if (!(pr->ci_frac >= 0)) {
        widen(b, nq >= 2 ? qlo : 0, nq >= 2 ? qhi : cap, QW_BOUND_SHORT);
        return;
    }
    half = pr->sampling_frac * pr->rate_bps / 8.0 / fmax(pr->steady_share, 1e-9);
    widen(b, b->steady - half, b->steady + half, QW_BOUND_STATISTICS);
}

/* The levels term, for a window that answered at its deadline with the rate changing level:
 * the range of the quarters' rates, the levels not seen (unseen_levels) and, for BBR,
 * STARTUP's plateau, a level the path gave too (plateau_differs). Returns the plateau's rate
 * when it lifts the cap on the upper side, else 0. */
static double bound_levels(const qw_window *w, double qlo, double qhi, qw_bounds *b)
{
    double llo = qlo, lhi = qhi, plateau = 0;

    if (w->state == QW_CONVERGED ||
        !(w->varying || w->hold == QW_HOLD_HEAD || w->hold == QW_HOLD_HALVES ||
          w->hold == QW_HOLD_LAST_SLICE ||
          ((w->drops > 0 || w->hold == QW_HOLD_SHORT) && !qw_only_own_climbs(w))))
        return 0;
    if (w->ss_level_differs)
        plateau = w->ss_rate;
    unseen_levels(w, b->steady, &llo, &lhi);
    widen(b, fmin(llo, plateau ? plateau : llo), fmax(lhi, plateau), QW_BOUND_LEVELS);
    return plateau;
}

/* The lower side's terms: the random-loss or sawtooth floor over the run (run_loss_floor)
 * and a reordering path's first overflow (qw_reorder_overflow_floor). */
static void bound_floors(const qw_window *w, const qw_prediction *pr, double cap, qw_bounds *b)
{
    qw_bound_by by;
    double floor_rate = run_loss_floor(w, cap, pr, &by);
    double overflow = qw_reorder_overflow_floor(w, pr);

    if (floor_rate < b->steady)
        widen(b, floor_rate, b->steady, by);
    if (overflow > 0 && overflow < b->steady)
        widen(b, overflow, b->steady, QW_BOUND_REORDER_OVERFLOW);
}

/* The upper side's terms, each of which may take the rate past the capacity seen: cwnd
 * still growing towards a capacity not reached yet, BBR's long-term rate, a part of a gain
 * cycle or a rising estimate, the receiver's window, reordering, and a share of a queue
 * shown shared. carried is BBR's
 * estimate as an upper end (bbr_bw_carried). Returns the largest such upper side, the cap's
 * lift. */
static double bound_ceilings(const qw_window *w, const qw_prediction *pr, double carried,
                             qw_bounds *b)
{
    double ceiling = growth_ceiling(w, pr), lt = 0, rising, rwnd, reorder, shared;
    double rounds = qw_bbr_rounds_counted(w);

    if (ceiling > b->steady)
        widen(b, b->steady, ceiling, QW_BOUND_GROWING);
    if (w->p.bbr && w->lt_bw && carried > b->steady) {
        lt = carried;
        widen(b, b->steady, lt, QW_BOUND_LT_BW);
    }
    if (qw_bbr_part_cycle(rounds))
        widen(b, b->steady * qw_bbr_part_cycle_low(rounds), fmax(b->steady, carried),
              QW_BOUND_BBR_CYCLE);
    rising = qw_bbr_trend_ceiling(w, pr);
    if (rising > b->steady)
        widen(b, b->steady, rising, QW_BOUND_BW_RISING);
    rwnd = fmin(qw_rwnd_ceiling(w), rwnd_growth_ceiling(w, pr));
    if (rwnd > b->steady)
        widen(b, b->steady, rwnd, QW_BOUND_RWND);
    reorder = reorder_ceiling(w, pr);
    if (reorder > b->steady)
        widen(b, b->steady, reorder, QW_BOUND_REORDERING);
    shared = qw_shared_ceiling(w, pr);
    if (shared > b->steady)
        widen(b, b->steady, shared, QW_BOUND_SHARED);
    return fmax(fmax(fmax(rwnd, shared), fmax(ceiling, rising)), fmax(lt, reorder));
}

/* Map the steady bounds to the run's figure, as qw_predict maps the steady rate, then add
 * the end's uncertainty, which no cap on the steady rate bounds: how long the last bytes
 * took to drain is a matter of time, not of rate (a capacity-limited flow's figure read
 * above an interval whose upper side the capacity seen had cut to 0.02 %); a window too
 * short for batches (short: the quarters' range, 0.1 % on a flat BBR rate) keeps it too.
 * The run's end waiting for streams starved into timeouts is on the figure, below only. */
static void bound_to_figure(const qw_window *w, const qw_prediction *pr, qw_bounds *b)
{
    double starved = qw_timeouts_share(w) * pr->rate_bps;
    double e = pr->end_frac * pr->rate_bps, tail = pr->tail_frac * pr->rate_bps, dlo, dhi;

    b->lo_bps = pr->rate_bps + (b->lo - b->steady) * 8.0 * pr->steady_share;
    b->hi_bps = pr->rate_bps + (b->hi - b->steady) * 8.0 * pr->steady_share;
    if (!(pr->end_frac > 0 || pr->tail_frac > 0 || starved > 0))
        return;
    dlo = pr->rate_bps - b->lo_bps;
    dhi = b->hi_bps - pr->rate_bps;
    b->lo_bps = fmax(0, pr->rate_bps - sqrt(dlo * dlo + e * e + tail * tail + starved * starved));
    b->hi_bps = pr->rate_bps + sqrt(dhi * dhi + e * e);
    /* the wider side, and the drain's wait the most of it */
    if (starved > dlo && pr->rate_bps - b->lo_bps > b->hi_bps - pr->rate_bps)
        b->by = QW_BOUND_TIMEOUTS;
}

/* The interval of the run's figure pr->rate_bps from the window's evidence (quickwin.h). */
qw_bounds qw_bound(const qw_window *w, const qw_prediction *pr)
{
    qw_bounds b = { .by = QW_BOUND_STATISTICS };
    double q[QW_QUARTERS], qlo, qhi, cap, lift;
    /* BBR's estimate as an upper end, read once: it scans every slice */
    double carried = w->p.bbr ? bbr_bw_carried(w) : 0;
    int nq = quarter_rates(w, q);

    if (pr->rate_bps <= 0 || w->est.rate_bps <= 0)
        return b;
    b.steady = b.lo = b.hi = w->est.rate_bps / 8.0;
    range_of(q, nq, &qlo, &qhi);
    cap = qw_capacity_seen(w);
    bound_sampling(pr, nq, qlo, qhi, cap, &b);
    lift = bound_levels(w, qlo, qhi, &b);
    bound_floors(w, pr, cap, &b);
    /* the upper side: never above the capacity seen (unless cwnd still grows towards a
     * capacity not reached yet) */
    lift = fmax(lift, bound_ceilings(w, pr, carried, &b));
    /* BBR: the link carried at least the largest delivery rate its bandwidth filter kept
     * that a slice also delivered (bbr_bw_carried), standing queue or not (under jitter the
     * queue reads are noise, and a capacity read while a queue stood came out 1 % under the
     * rate the flow reached later). Not its
     * latest estimate: the filter keeps the last 10 rounds only, well under a millisecond on
     * loopback or a LAN, where it follows the host's scheduling, and BBR's probes find again
     * any rate the path gave earlier in the window (loopback, 12 runs of 10 s: the latest
     * estimate had set the upper end on 4, and 2 of their 10 s figures were above it). */
    if (w->p.bbr)
        cap = fmax(cap, carried);
    if (w->stalled) {
        double stall = stall_ceiling(w);

        widen(&b, 0, stall, QW_BOUND_STALLED);
        b.by = QW_BOUND_STALLED;
        lift = fmax(lift, stall);
    }
    /* Reno / CUBIC with no standing queue in any slice: the link was not shown full, and the
     * fastest quarter bounds its capacity only from below, so it caps nothing (the cap had
     * cut a climbing 10 Mbit/s x 200 ms Reno window's upper side to 8.64 against a 20 s
     * figure of 8.76; CUBIC at 400 Mbit/s x 200 ms, 351.8 against 356.4) */
    if (!w->p.bbr && (queued_rate(w) <= 0 || qw_queue_shared(w)))
        cap = INFINITY;
    b.hi = fmin(b.hi, fmax(cap, lift));
    b.lo = fmax(0, fmin(b.lo, b.steady));
    b.hi = fmax(b.hi, b.steady);
    bound_to_figure(w, pr, &b);
    return b;
}

/* The answer a window gives for a run of full_s seconds (quickwin.h). */
qw_answer qw_answer_of(const qw_window *w, double full_s)
{
    qw_prediction pr = qw_predict(w, full_s);
    qw_bounds b = qw_bound(w, &pr);
    qw_answer a = { 0, 0, 0, -1, b.by };

    if (pr.rate_bps <= 0)
        return a;
    a.lo_bps = b.lo_bps;
    a.hi_bps = b.hi_bps;
    a.rate_bps = pr.rate_bps +
                 (rest_expected(w, &pr) - b.steady) * 8.0 * pr.steady_share;
    a.rate_bps = fmin(fmax(a.rate_bps, a.lo_bps), a.hi_bps);
    a.ci_frac = fmax(a.hi_bps - a.rate_bps, a.rate_bps - a.lo_bps) / a.rate_bps;
    return a;
}
