/* qwloss.c: the quick window's rules for a loss-based cc (Reno, CUBIC): where its sawtooth
 * cycles renew, and whether the window knows what the sawtooth does to the rate (see
 * quickwin.c for the window itself and why it batches whole cycles). */
#include "qwint.h"

#include <math.h>

#define QW_QUEUE_SAME 0.75      /* queues within this ratio are the same level: the
                                   smoothed RTT (gain 1/8 per ACK) trails the queue and
                                   delay jitter blurs it */
#define QW_TREND_PEAKS 5        /* cwnd peaks from which their trend, beside their range,
                                   can show they do not fall: see qw_peaks_level() */
#define QW_CLEAN_PACKETS 5000  /* at most this many loss-free packets are asked for (rules
                                   out random loss >= 1e-3 at 99.3 %): see loss_free() */

/* The window's whole sawtooth cycles, cut to cut, as units for batches: [begin, end) slice
 * index pairs in ub / ue; returns the count. */
int qw_units_loss_cycles(const qw_window *w, int *ub, int *ue)
{
    int u = 0, from = w->start_after_loss ? 0 : -1;
    uint32_t at = 0, per = (uint32_t)qw_streams(w);

    /* A slice whose end shows more events than the slice before holds a reduction: the
     * cycles run from one such slice end to the next. With n streams the aggregate renews
     * only when every stream's sawtooth has: a cycle is n reductions (one per stream on
     * average), else eight streams give three "cycles" in a fifth of a second. */
    if (from >= 0) {
        from = w->first;
        at = w->first ? w->s[w->first - 1].events : 0;
    }
    for (int i = w->first; i < w->n && u < QW_MAX_SLICES; i++) {
        uint32_t before = i ? w->s[i - 1].events : 0;

        if (w->s[i].events == before || (from >= 0 && w->s[i].events - at < per))
            continue;
        if (from >= 0 && i + 1 > from) {
            ub[u] = from;
            ue[u++] = i + 1;
        }
        from = i + 1;
        at = w->s[i].events;
    }
    return u;
}

/* 1 if the slices after the last whole loss cycle (from slice from on, at least two of
 * them) ran faster than the cycles' rate by more than QW_LEVEL_CHANGE of it. They
 * begin at a cut, where a sawtooth is at its slowest (or, with the link full, at the
 * link's rate, like the cycles): faster than the cycles is the path giving the flow more,
 * cross traffic gone. The batches leave this part out, so without this test a window
 * converged on the cycles while the rate after them had changed (an off-matrix path,
 * 40 % cross traffic 2 s on / 3 s off: four cycles at 30 Mbit/s, then 50 for the last
 * 0.3 s of the window, reported -28 %). */
int qw_tail_above_cycles(const qw_window *w, int from, double cycles_rate)
{
    double bytes = 0, secs = 0;

    if (w->n - from < 2 || cycles_rate <= 0)
        return 0;
    qw_unit_sum(w, from, w->n, &bytes, &secs);
    return secs > 0 && bytes / secs > cycles_rate * (1 + QW_LEVEL_CHANGE);
}

/* 1 if more than half of the counted slices [from, to) held a standing queue of
 * (1 - beta) / beta BDP: a cut there leaves the link full. */
int qw_mostly_full(const qw_window *w, int from, int to)
{
    int full = 0, all = 0;

    for (int i = from; i < to; i++) {
        if (w->s[i].excluded)
            continue;
        all++;
        full += w->s[i].q_min >= (1.0 - w->p.beta) / w->p.beta;
    }
    return all > 0 && 2 * full > all;
}

/* Loss-based cc: 1 if the latest slice holds no congestion event yet ran at a level the
 * batches do not (qw_stretch_differs). The flow's own dips come with its cuts; without one,
 * the path changed under it in this very slice, and the window must not stop on it. (An
 * off-matrix path, CUBIC at 400 Mbit/s x 60 ms with 40 % cross traffic 2 s on / 3 s off:
 * the window had counted the off phase at 397 Mbit/s; the cross traffic came back with a
 * queue that proved the link full, and the window converged on that slice, itself at 288,
 * on +22.9 %.) */
int qw_last_slice_differs(const qw_window *w, const double *bytes, const double *secs,
                          int nb, double r)
{
    int last = w->n - 1;

    if (w->p.bbr || last < 1 || w->s[last].excluded || w->s[last].events != w->s[last - 1].events)
        return 0;
    return qw_stretch_differs(w, last, w->n, bytes, secs, nb, r);
}

/* 1 if no loss was seen over enough packets delivered to rule out random loss that would
 * matter. The link-full proof covers the losses of a full buffer, not random ones: those
 * cut again at any cwnd (at 0.1 % they halve a 100 Mbit/s x 60 ms flow's rate: on the
 * lab's lossy path windows that ended between two random losses read +70 %). A window of
 * W packets survives random loss only while p <= 1.5 / W^2 (Mathis et al.: rate = 1.22 MSS
 * / (RTT sqrt p)), and n loss-free packets rule out p >= 5 / n at 99.3 % ((1 - p)^n <=
 * e^-5): so 10 / 3 W^2 clean packets, W the whole cwnd (all streams: the stricter), at most
 * QW_CLEAN_PACKETS, which rules out p >= 1e-3. (At 95 %, 3,000, a lossy-path run whose
 * 3,400 packets after a cut went loss-free by chance read +90 %.) Rarer random loss on a
 * large window is not ruled out (that would take more packets than a 20 s run sends): such
 * a path can read high. */
static int loss_free(const qw_window *w, const qw_sample *s)
{
    double mss = qw_mss(w->mss_bytes), win = s->cwnd_bytes / mss;
    double need = fmin(QW_CLEAN_PACKETS, 5.0 / 1.5 * win * win);

    /* delivered counts SACKed segments x MSS, which can step back a little as they are
     * cumulatively acked: never let that wrap */
    if (s->delivered_bytes <= w->clean_from_bytes)
        return 0;
    return (double)(s->delivered_bytes - w->clean_from_bytes) >= need * mss;
}

/* 1 if a buffer at least depth BDPs deep keeps the link full through a cut from it: depth
 * is at least (1 - beta) / beta. The proof assumes cuts come from a full buffer; a loss seen
 * at a queue clearly below the deepest one the buffer has held (less than QW_QUEUE_SAME of
 * it) is a random loss, which cuts again at any cwnd: the proof is void. */
static int cut_leaves_link_full(const qw_window *w, double depth, double deepest)
{
    if (w->p.beta <= 0 || (w->events && w->loss_queue < QW_QUEUE_SAME * deepest))
        return 0;
    return depth >= (1.0 - w->p.beta) / w->p.beta;
}

/* 1 if the standing queue proves the link is full and stays full through a cut now (a full
 * buffer holds at least the queue seen now). */
int qw_link_full(const qw_window *w, const qw_sample *s)
{
    return cut_leaves_link_full(w, qw_queue_bdps(w, s), w->max_queue);
}

/* 1 if the buffer has been seen to hold (1 - beta) / beta BDP: the largest standing queue
 * seen, slow-start's overshoot before the window opened included, was that deep. Every
 * queue seen is a depth the buffer holds, so a cut from a full buffer leaves cwnd at beta
 * x (1 + that depth) BDP or more, still the BDP: the link stays full through it, as
 * qw_link_full's proof says of the queue seen now. Slow-start's overshoot is the usual
 * witness, as it ends on a full buffer: Reno at 100 Mbit/s x 140 ms, 2-BDP buffer, 4
 * streams showed 419 ms of smoothed RTT at its loss (2 BDP of queue), then cut to 1.5 BDP
 * and climbs back by one packet per round a stream, so that its queue reaches qw_link_full's
 * 1 BDP only seconds later and a whole sawtooth cycle takes longer than a 20 s run.
 * Void, as qw_link_full's proof is, once a loss came at a queue clearly below that depth. */
static int buffer_deep(const qw_window *w)
{
    double seen = qw_deepest_queue(w);

    return cut_leaves_link_full(w, seen, seen);
}

/* 1 if the cwnd peaks that the window's cycles were cut at do not fall. Falling peaks are a
 * sawtooth still on its way down from slow-start's level to where random loss holds it (the
 * lab's lossy path: peaks of 1.56, 1.37 and 1.07 MB while the rate stayed at the link's
 * 99 Mbit/s, then 55 for the rest of the run): its cycles so far are a transient, not the
 * steady state. Random loss cuts at any point of a cycle, so the peaks of a sawtooth that
 * has settled scatter without falling (a corpus path, CUBIC at 100 Mbit/s x 15 ms with
 * 0.2 % loss: 17 peaks between 268 and 384 KB around 370 for 4 s, the rate at the link's
 * 99.4 throughout, and a test of their range held the window open to the end). So the
 * peaks are level when the smallest is QW_QUEUE_SAME of the largest or, with QW_TREND_PEAKS
 * peaks or more, when their least-squares line does not fall by more than 1 - QW_QUEUE_SAME
 * from the first peak to the last (with fewer, a line cannot tell a fall from scatter). On a
 * steady fall the two agree (the line's ends are the first and last peak). */
int qw_peaks_level(const qw_window *w)
{
    double y[QW_MAX_PEAKS], lo = INFINITY, hi = 0, ym = 0, sxy = 0, sxx = 0, slope, xm;
    int k = 0;

    for (int i = 0; i < w->npeaks; i++) {
        if (w->peak_slice[i] < w->first)
            continue;
        y[k] = (double)w->peak[i];
        lo = fmin(lo, y[k]);
        hi = fmax(hi, y[k]);
        ym += y[k++];
    }
    if (hi == 0 || lo >= QW_QUEUE_SAME * hi)
        return 1;
    if (k < QW_TREND_PEAKS)
        return 0;
    ym /= k;
    xm = (k - 1) / 2.0;
    for (int i = 0; i < k; i++) {
        sxy += (i - xm) * (y[i] - ym);
        sxx += (i - xm) * (i - xm);
    }
    slope = sxy / sxx;
    return ym + slope * xm >= QW_QUEUE_SAME * (ym - slope * xm);
}

/* Loss-based cc: QW_HOLD_NONE if the window has seen what the sawtooth does to the rate,
 * or can tell that it does nothing to it; else what it lacks (QW_HOLD_SAWTOOTH, or
 * QW_HOLD_LOSS_FREE when only the loss-free packets are missing). A cut sets cwnd to beta x
 * cwnd, and the link stays full only if that is still at least the BDP, i.e. if the queue
 * at the cut is at least (1 - beta) / beta x BDP (0.43 BDP for CUBIC, 1 BDP for Reno). So
 * the window may stop when
 * - it holds whole sawtooth cycles (three or more, cut to cut: the loss-cycle basis) whose
 *   cwnd peaks do not fall (qw_peaks_level: not slow-start's level falling to where random
 *   loss holds cwnd);
 * - or the standing queue proves a full buffer's cut now would leave the link full
 *   (qw_link_full: a full buffer holds at least the queue seen now), or a deeper queue seen
 *   before did (buffer_deep) and a standing queue kept the link full throughout the
 *   counted part (qw_link_busy), and enough packets went by without a loss to rule out random
 *   loss that would matter (loss_free);
 * - or cwnd does not matter: the stream spent most of the window limited by the
 *   receiver's window or its send buffer (no sawtooth then: cwnd stops growing). */
qw_hold qw_sawtooth_known(const qw_window *w, const qw_sample *s)
{
    double span_us = (s->t_s - w->start_t) * 1e6;

    if (w->p.bbr)
        return QW_HOLD_NONE;
    if (w->est.basis == QW_BASIS_LOSS_CYCLES && qw_peaks_level(w))
        return QW_HOLD_NONE;
    if (span_us > 0 && (double)(s->limited_us - w->limited_us0) >= 0.5 * span_us)
        return QW_HOLD_NONE;
    if (!qw_link_full(w, s) && !(buffer_deep(w) && qw_link_busy(w)))
        return QW_HOLD_SAWTOOTH;
    return loss_free(w, s) ? QW_HOLD_NONE : QW_HOLD_LOSS_FREE;
}
