/* qwfloor.c: the lowest long-run rate a loss-based cc's evidence allows (qw_loss_floor, the
 * lower end of the quick answer's interval for Reno and CUBIC; qwbound.c builds the rest):
 * - sawtooth: a cut from cwnd's peak leaves beta x that peak, and below one BDP the link
 *   idles (qw_sawtooth_share);
 * - random loss: the loss events the window saw in its packets bound the loss-event rate
 *   (Poisson, 95 %), and TCP's loss response (Mathis et al.; RFC 9438) at that rate may hold
 *   cwnd's peaks below the buffer's top (qw_loss_window_pkts);
 * - cwnd's spread under the random losses seen (qwspread.c): clusters of cuts take cwnd below
 *   TCP's mean window. */
#include "qwint.h"

#include <math.h>

#define RENO_K 1.2247           /* sqrt(3/2): Mathis et al. */

/* Long-run share of the link a loss-based flow keeps when its cwnd peaks at top BDPs and
 * each cut sets it to beta x top: cwnd grows linearly between cuts (Reno; CUBIC's concave
 * growth leaves the low part sooner, so this is its lower bound). Below one BDP the link
 * idles and the rate is cwnd / the round trip with no queue (qw_no_queue_rtt_s); from one BDP up
 * a queue keeps it full. */
double qw_sawtooth_share(double beta, double top)
{
    double bottom = beta * top, below;

    if (top <= 0)
        return 0;
    if (top <= 1.0)
        return (1.0 + beta) / 2.0 * top;
    if (bottom >= 1.0)
        return 1.0;
    below = (1.0 - bottom) / (top - bottom);    /* share of the cycle below one BDP */
    return 1.0 - below * (1.0 - bottom) / 2.0;
}

/* The average window (packets) one loss-based flow keeps at loss-event rate p and RTT
 * rtt_s: Reno's 1.22 / sqrt(p) (Mathis et al.); CUBIC the larger of that (its Reno-friendly
 * region) and 1.054 x (RTT / p)^(3/4) (RFC 9438 section 5.1, C 0.4, beta 0.7). */
double qw_loss_window_pkts(int cubic, double p, double rtt_s)
{
    double w_pkts = RENO_K / sqrt(p);

    if (cubic) {
        double k = pow(QW_CUBIC_C * (3.0 + 0.7) / (4.0 * (1.0 - 0.7)), 0.25);

        w_pkts = fmax(w_pkts, k * pow(rtt_s, 0.75) / pow(p, 0.75));
    }
    return w_pkts;
}

/* Poisson: the 95 % upper bound of the mean given k events (chi-square / 2), k >= 0. */
static double poisson_upper95(uint32_t k)
{
    static const double u[] = { 3.00, 4.74, 6.30, 7.75, 9.15, 10.51, 11.84, 13.15, 14.43,
                                15.71, 16.96 };

    return k < sizeof u / sizeof u[0] ? u[k] : k + 1.645 * sqrt((double)k) + 1.5;
}

/* Where cwnd peaks, in BDPs of bdp_bytes: the mean of the peaks the window's cuts came at
 * (cwnd summed over the streams), the quantity a cut scales; before any cut, 1 + the deepest
 * queue seen, slow-start's overshoot included (the smoothed RTT reads a little above the
 * queue: on a 0.25-BDP buffer at 20 ms, 0.31). */
double qw_peak_top(const qw_window *w, double bdp_bytes)
{
    double sum = 0;
    int k = 0;

    for (int i = 0; i < w->npeaks; i++) {
        sum += (double)w->peak[i];
        k++;
    }
    if (k > 0 && bdp_bytes > 0)
        return sum / k / bdp_bytes;
    return 1.0 + qw_deepest_queue(w);
}

/* The random loss events the window saw: stream by stream, or as the aggregate counted them
 * if more (one recovery already begun when the window opened counts only there). With eight
 * CUBIC streams on 0.2 % loss some stream was in a recovery most of the time, and the
 * aggregate's 7 events in 11,636 packets put the loss rate at 0.1 % at most, where the
 * streams' cwnd settles twice as high as it did (42 -> 25 Mbit/s over the 20 s run). */
uint32_t qw_random_loss_events(const qw_window *w)
{
    return w->random_stream_events > w->random_events ? w->random_stream_events
                                                      : w->random_events;
}

/* The loss events the random-loss floor and the estimate's descent count: the random ones
 * (qw_random_loss_events), or every one where the queue cannot tell a random loss from a full
 * buffer's (qw_queue_tells_random: several streams on a deep buffer). TCP's loss response
 * holds whatever the losses' cause (a sawtooth at a buffer's top has the mean window its
 * loss rate gives), so counting a full buffer's losses moves the estimate little; the
 * upper side (loss_ceiling) counts only the losses shown random. */
uint32_t qw_floor_loss_events(const qw_window *w)
{
    uint32_t all = w->stream_events > w->events ? w->stream_events : w->events;

    return qw_queue_tells_random(w) ? qw_random_loss_events(w) : all;
}

/* The random loss events the window saw (qw_random_loss_events) less those that followed
 * another recovery on a path whose reordering the kernel has learned (qw_follows_recovery):
 * what the upper side may take as random loss holding the rate down. */
uint32_t qw_random_losses_shown(const qw_window *w)
{
    uint32_t agg = w->random_events - w->follow_events;
    uint32_t per_stream = w->random_stream_events - w->follow_stream_events;

    return per_stream > agg ? per_stream : agg;
}

/* The loss-event rate per packet that the floor's events (qw_floor_loss_events) in the packets
 * since measuring began leave open at 95 % (Poisson); 1 before a packet. */
double qw_random_loss_rate(const qw_window *w)
{
    double packets = qw_packets_measured(w);

    return packets >= 1 ? fmin(1.0, poisson_upper95(qw_floor_loss_events(w)) / packets) : 1.0;
}

/* 1 if the window's cuts left the link full although some were random (w->random_events):
 * after every cut (each peak less one stream's share of beta's cut) the summed cwnd still
 * held a BDP of cap, so the rate measured is cap at any loss rate that let cwnd stay there,
 * and the cycles show nothing of where random loss takes cwnd. On a lossy path (0.1 % at
 * 60 ms, 1-BDP buffer) such cycles are slow-start's cwnd coming down cut by cut (peaks of
 * 1735, 1682, 1360 and 1109 kB over a 745 kB BDP), at the link's rate for 4 s of a 20 s run
 * that ends at 65 % of it. Cuts at the buffer's top alone are the sawtooth's own. */
static int cuts_kept_link_full(const qw_window *w, double cap, double base_rtt)
{
    int streams = qw_streams(w);
    double low = INFINITY;

    if (w->random_events == 0 || w->npeaks == 0)
        return 0;
    for (int i = 0; i < w->npeaks; i++)
        low = fmin(low, (double)w->peak[i]);
    return low * (1.0 - (1.0 - w->p.beta) / streams) >= cap * base_rtt;
}

/* Where random loss at p per packet (each stream's window averaging qw_loss_window_pkts
 * and peaking at 2 / (1 + beta) x that) has the summed cwnd peak, in BDPs of cap at the
 * round trip with no queue. */
static double random_loss_top(const qw_window *w, double p, double cap, double base_rtt)
{
    double mss = qw_mss(w->mss_bytes);
    double peak = 2.0 / (1.0 + w->p.beta) * qw_loss_window_pkts(w->p.beta > 0.6, p, base_rtt);

    return qw_streams(w) * peak * mss / (cap * base_rtt);
}

/* The share of the mean-field long run that cwnd's spread under the random losses seen
 * keeps (qwspread.c), at most 1. The mean-field reads TCP at its mean window under the loss
 * rate p that qw_random_loss_rate leaves open, cut from top BDPs of cap at most: mean of the
 * link (qw_sawtooth_share). Clusters of cuts take cwnd below that mean window, and below the
 * BDP, even when the mean is above it. 1 while no random loss was seen (or p is 0: no
 * packet yet): the unseen rate's floor is what one loss would do from the cwnd the flow has
 * (loss_descent), not a loss process the window has shown. */
static double spread_ratio(const qw_window *w, double p, double cap, double base_rtt,
                           double top, double mean)
{
    double mss = qw_mss(w->mss_bytes), spread;

    if (qw_random_loss_events(w) == 0 || p <= 0)
        return 1.0;
    spread = qw_spread_share(w->p.beta, p, cap * base_rtt / mss, top, qw_streams(w), base_rtt);
    return mean > spread ? spread / mean : 1.0;
}

/* 1 if a loss-based window's floor is its cycles' (qw_loss_floor): three or more whole
 * sawtooth cycles whose peaks do not fall (qw_peaks_level), and whose cuts did not all
 * leave the link full (cuts_kept_link_full), so they measured the loss process's mean. */
int qw_cycles_floor(const qw_window *w, double cap)
{
    double base_rtt = qw_no_queue_rtt_s(w);

    return w->est.basis == QW_BASIS_LOSS_CYCLES && w->est.batches >= 3 && qw_peaks_level(w) &&
           !cuts_kept_link_full(w, cap, base_rtt);
}

/* Loss-based cc: the lowest long-run rate (bytes/s) the evidence allows, and which evidence
 * set it (*by; the rate itself when nothing lowers it):
 * - a cut from cwnd's peak (qw_peak_top: the peaks cuts came at, else the deepest queue seen)
 *   leaves cwnd at beta x that peak: qw_sawtooth_share of the capacity cap;
 * - random loss not yet ruled out: after k loss events that did not come at the top of the
 *   buffer (w->random_events) in n packets since measuring began its rate is below
 *   poisson_upper95(k) / n at 95 %, and at that rate each stream's
 *   window averages qw_loss_window_pkts and peaks at 2 / (1 + beta) x that, which may be
 *   below the buffer's top. CUBIC's window there grows with the round trip (RFC 9438:
 *   RTT^0.75), and a flow that random loss holds below the link's rate keeps no queue: the
 *   round trip with no queue (qw_no_queue_rtt_s), not the slice's. The slice's, a standing queue
 *   included, read the window twice what the path keeps (4 CUBIC streams on 100 Mbit/s x
 *   180 ms, 1.5-BDP buffer, 0.2 % loss: 455 ms of smoothed RTT against 180, a floor of
 *   81 Mbit/s against a 20 s figure of 57.6, and 64 with the base round trip).
 * - the spread of cwnd under the random losses seen (spread_ratio): clusters of cuts take
 *   cwnd below TCP's mean window, and below the BDP when that mean is above it, so each of
 *   the two above keeps only the spread's share of the mean-field's long run.
 * A stream that a window (the receiver's, or its send buffer) held is no exception: a loss
 * cuts cwnd, not that window, and once cwnd is below it, cwnd sets the rate (a Linux
 * server's 4.46 MB window held CUBIC at 149 Mbit/s on 150 Mbit/s x 180 ms with 0.005 % loss,
 * cwnd at slow-start's 8.9 MB; a burst of losses at 15 s cut cwnd to 2.3 MB, and the 20 s
 * figure came out 10 % under the window's); the descent (loss_descent) starts from the cwnd
 * it has, so the cuts its headroom over the window absorbs cost nothing. A window that holds
 * three whole cycles has measured the rate under the losses it saw, not their rarer
 * clusters: its floor is the rate measured times the spread's share, unless the cycles'
 * cuts kept the link full (cuts_kept_link_full: then they hold only the link's rate) or
 * their peaks fall (qw_peaks_level: cwnd still on its way down from slow-start's level to
 * where the losses hold it; an off-bench path, CUBIC on 100 Mbit/s x 60 ms with 0.03 %
 * loss, two streams: peaks of 876, 741 and 622 kB, and the window's last three cycles read
 * 64 Mbit/s as a floor against a 20 s figure of 41). Where random losses were among its
 * cuts, nor is it above the mean-field's floor when the loss rate they leave open has TCP's
 * window peak below the cycles' peaks: a few cycles' gaps between random losses are a few
 * draws of the loss process, and a run's later gaps may be shorter (Reno, two streams on
 * 20 Mbit/s x 30 ms with 0.2 % loss: four cycles at level peaks near the buffer's top read
 * 19.3 Mbit/s, a floor of 18.7 and a converged answer, and clusters of losses later held
 * the 20 s figure to 17.1). */
double qw_loss_floor(const qw_window *w, double cap, qw_bound_by *by)
{
    double base_rtt = qw_no_queue_rtt_s(w), rate = w->est.rate_bps / 8.0;
    double top, p = 0, top_p = INFINITY, share, spread, floor_rate;

    *by = QW_BOUND_SAWTOOTH;
    if (w->p.bbr || w->p.beta <= 0 || cap <= 0 || base_rtt <= 0 || rate <= 0)
        return rate;
    top = qw_peak_top(w, cap * base_rtt);
    if (qw_packets_measured(w) >= 1) {
        p = qw_random_loss_rate(w);
        top_p = random_loss_top(w, p, cap, base_rtt);
    }
    share = qw_sawtooth_share(w->p.beta, fmin(top, top_p));
    spread = spread_ratio(w, p, cap, base_rtt, top, share);
    if (spread < 1.0)
        *by = QW_BOUND_RANDOM_LOSS;
    if (top_p < top)
        *by = QW_BOUND_RANDOM_LOSS;
    floor_rate = spread * share * cap;
    if (qw_cycles_floor(w, cap))
        return top_p < top && qw_random_loss_events(w) > 0 ? fmin(spread * rate, floor_rate)
                                                            : spread * rate;
    return floor_rate < rate ? floor_rate : rate;
}

/* 1 if a loss-based flow's window has seen no cut it kept to its end (every one it counted
 * the kernel undid, or none, or one still in its recovery as the window closed: whether
 * more follow is not seen yet) on a path whose reordering the kernel has learned
 * (tcpi_reordering above its default of 3, which only a packet arriving that far out of
 * order raises), and cwnd is not held by a window: the buffer's first overflow is still to
 * come, or only began, and there it may cost cut after cut. Through netem-order jitter
 * (1500-byte frames, 90-130 ms, tcpi_reordering at 100-300) every overflow's recovery was
 * followed by another, a round or two apart, each cutting cwnd by beta again: five to eight
 * in a row after the first overflow of a 2.5-BDP buffer (CUBIC, 150 Mbit/s x 90 ms:
 * 2.85 -> 0.17 MB a stream in 2.5 s, hundreds of DSACKs, so many retransmissions were
 * spurious, but not all, and no cut was undone). A window that saw no cut saw none of
 * this. */
int qw_reorder_overflow(const qw_window *w)
{
    uint32_t seen = w->events - (w->mark.pending ? 1 : 0);

    if (w->p.bbr || w->p.beta <= 0 || w->n == 0 || qw_mostly_limited(w))
        return 0;
    return w->reordering_segments > QW_KERNEL_REORDERING && seen <= w->undone_events;
}

/* The lowest steady rate (bytes/s) over the run pr predicts when the buffer's first overflow
 * on a reordering path (qw_reorder_overflow) comes as the window closes and cuts cwnd round
 * after round; 0 when that does not apply. How many rounds the cuts go on for, no law says
 * (they stop when a recovery finds no more losses), so each stream's cwnd goes to the
 * kernel's floor for ssthresh and grows back by its cc's law at the round trip with no
 * queue: Reno a packet a round; CUBIC its cubic from there (C t^3 packets, its largest
 * window before the last cut a few packets) or its Reno-friendly 3 (1 - beta) / (1 + beta)
 * a round (RFC 9438), whichever is larger, up to the rate measured. The counted part keeps
 * the rate measured. The overflow cannot come sooner, and where the window says the buffer
 * is deeper the floor is still the lowest its evidence allows. */
double qw_reorder_overflow_floor(const qw_window *w, const qw_prediction *pr)
{
    double rtt = qw_no_queue_rtt_s(w), mss = qw_mss(w->mss_bytes), rate = w->est.rate_bps / 8.0;
    double done = qw_counted_s(w), to_go = pr->rest_s - done;
    double friendly = w->p.beta > 0.6 ? 3.0 * (1.0 - w->p.beta) / (1.0 + w->p.beta) : 1.0;
    double sum = 0, dt;
    int streams = qw_streams(w), steps = 256;

    if (!qw_reorder_overflow(w) || rtt <= 0 || to_go <= 0 || rate <= 0)
        return 0;
    dt = to_go / steps;
    for (int k = 0; k < steps; k++) {
        double tau = (k + 0.5) * dt, pkts = QW_SSTHRESH_FLOOR + friendly * tau / rtt;

        if (w->p.beta > 0.6)
            pkts = fmax(pkts, QW_SSTHRESH_FLOOR + QW_CUBIC_C * tau * tau * tau);
        sum += fmin(rate, streams * pkts * mss / rtt) * dt;
    }
    return (rate * done + sum) / pr->rest_s;
}

/* 1 while the floor for a reordering path's first overflow (qw_reorder_overflow_floor, over
 * the run p.full_s predicts) is further below the estimate than the tolerance, or while it
 * applies to a run of unknown length: the answer's interval carries it, so a window that
 * stopped then would report an interval wider than the tolerance. On short paths cwnd grows
 * back within a second or so and the floor is near the rate: those windows converge as they
 * would without it (CUBIC on 100 Mbit/s x 8 ms: 94 against 96.5 a second in). */
int qw_reorder_overflow_holds(const qw_window *w)
{
    qw_prediction pr;
    double rate = w->est.rate_bps / 8.0, floor_rate;

    if (!qw_reorder_overflow(w))
        return 0;
    if (w->p.full_s <= 0)
        return 1;
    pr = qw_predict(w, w->p.full_s);
    floor_rate = qw_reorder_overflow_floor(w, &pr);
    return floor_rate > 0 && rate - floor_rate > w->p.tolerance * rate;
}
