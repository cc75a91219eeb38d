/* quickwin.c: the converging quick window (see quickwin.h).
 *
 * Why batch means over whole cycles. Successive per-RTT rates of one TCP flow are far from
 * independent: a Reno / CUBIC flow follows a sawtooth (cwnd grows until a loss, is cut by
 * beta, grows again), a BBR flow in PROBE_BW cycles its pacing gain through 8 phases of one
 * min RTT each. The standard error of a mean of correlated slices, computed as if they were
 * independent, is too small. Batch means fix that when each batch is long compared with
 * the correlation, so the batches are cut where the process renews itself:
 * - loss-based cc with congestion events in the window: a batch is whole sawtooth cycles,
 *   from one cwnd reduction to another (a cut resets the sawtooth: the regenerative
 *   method), and the part after the last reduction is left out;
 * - BBR: a batch is whole gain cycles, 8 x min RTT of counted time; until three are
 *   complete, RTT slices batched as on the time basis below if a standing queue kept the
 *   bottleneck busy in every slice (then the gain cycle leaves no mark on the rate);
 * - neither (no congestion event yet: cwnd limited by the receiver or a deep buffer): a
 *   batch is at least two RTT slices, with a fixed number of batches (at most 10), so the
 *   batches lengthen as the window does (Schmeiser's fixed-number-of-batches rule).
 * The mean rate is the ratio estimator (total bytes / total time) and its interval uses
 * Student's t with batches - 1 degrees of freedom, which stays wide while batches are few,
 * at the level of the planned check it is read at (qw_plan_checks: the levels sum to 95 % over
 * the checks, so that stopping at the first narrow one keeps its coverage). On top of the
 * interval, the window must look stationary: the rates of its
 * first and second halves agree within QW_STATIONARY, (loss-based cc) cwnd is not
 * still climbing back to where slow-start left it, and (BBR) its bandwidth estimate is
 * not still rising.
 *
 * BBR's PROBE_RTT (4 packets in flight for 200 ms every 10 s) is not steady state: its
 * slices, and the slice right after it, are left out and the window extends across them.
 * The window does not start in DRAIN or PROBE_RTT or in a loss recovery.
 *
 * A loss-based cc's own rules (its cycles, the queue that proves a cut leaves the link
 * full, loss-free packets) are in qwloss.c; the full run's figure predicted from the
 * window, in qwpredict.c; its interval, in qwbound.c and qwbbr.c; when it answers (the
 * deadline and the planned checks), in qwdue.c; what slow-start and BBR's gains tell it, in
 * qwseen.c; changes of level and which are the flow's own transients, in qwlevel.c;
 * congestion events counted and undone, in qwundo.c; Student's t, in qwstats.c; the
 * codes' names and what they mean in words, in qwnames.c. */
#include "qwint.h"

#include <math.h>
#include <string.h>

#define QW_MIN_CYCLE_BATCHES 3  /* whole cycles needed before their batches are used */
#define QW_MIN_TIME_BATCHES 5   /* time batches needed (t with 4 dof: 2.78) */
#define QW_SLICES_PER_TIME_BATCH 2

/* Open the window at the end of slow-start (t_s, cwnd there, whether a loss ended it). */
void qw_open(qw_window *w, const qw_params *p, double t_s, uint64_t exit_cwnd_bytes,
             int after_loss)
{
    memset(w, 0, sizeof(*w));
    w->p = *p;
    w->p.max_s = qw_due_s(p, t_s);
    w->state = QW_OPEN;
    w->open_t = t_s;
    w->start_t = -1;
    w->end_t = -1;
    w->deadline_t = t_s + w->p.max_s;
    w->event_t = t_s;
    w->cruise_t = -1;
    w->exit_cwnd_bytes = exit_cwnd_bytes;
    w->start_after_loss = w->open_after_loss = after_loss;
    w->recovery_end_t = after_loss ? t_s : -1;
    w->est.ci_frac = -1;
    w->check_alpha = w->due_alpha = QW_ALPHA;
    w->hold = QW_HOLD_NOT_STARTED;
}

/* What kept the window open at its latest slice. */
qw_hold qw_hold_of(const qw_window *w)
{
    return w->hold;
}

/* Units (consecutive counted stretches, which batches group) of at least len seconds of
 * counted (not excluded) slices each: [begin, end) slice index pairs in ub / ue; returns the
 * count. */
static int units_of_time(const qw_window *w, double len, int *ub, int *ue)
{
    int u = 0, from = -1;
    double acc = 0;

    for (int i = w->first; i < w->n; i++) {
        if (w->s[i].excluded)
            continue;
        if (from < 0)
            from = i;
        acc += w->s[i].t1 - w->s[i].t0;
        if (acc >= len * QW_SLACK) {
            ub[u] = from;
            ue[u++] = i + 1;
            from = -1;
            acc = 0;
        }
    }
    return u;
}

/* Sum the counted bytes and seconds of slices [b, e). */
void qw_unit_sum(const qw_window *w, int b, int e, double *bytes, double *secs)
{
    for (int i = b; i < e; i++) {
        if (w->s[i].excluded)
            continue;
        *bytes += (double)w->s[i].bytes;
        *secs += w->s[i].t1 - w->s[i].t0;
    }
}

/* Group nu units into at most QW_MAX_BATCHES batches of per units (the last takes the
 * rest); fill bytes / secs, return the batch count. */
static int make_batches(const qw_window *w, const int *ub, const int *ue, int nu, int per,
                        double *bytes, double *secs, int *first)
{
    int nb = nu / per;

    if (nb > QW_MAX_BATCHES)
        nb = QW_MAX_BATCHES;
    for (int b = 0; b < nb; b++) {
        int last = b == nb - 1 ? nu : (b + 1) * per;

        first[b] = ub[b * per];
        bytes[b] = secs[b] = 0;
        for (int k = b * per; k < last; k++)
            qw_unit_sum(w, ub[k], ue[k], &bytes[b], &secs[b]);
    }
    return nb;
}

/* 1 if every counted slice since measuring began kept a standing queue of QW_BUSY_QUEUE
 * BDP at its lowest, read from the smallest smoothed RTT over the streams (a stream whose
 * RTT estimate lags, in a recovery, must not prove it). Then the bottleneck never idled
 * in the counted part: whatever cwnd or the pacing gain did, the flow got what the link
 * gives it.
 * - BBR: the gain cycle leaves no mark on the rate (the 0.75 phase drained the queue
 *   without emptying it, the 1.25 phase only lengthened it), so the window need not wait
 *   for three whole cycles of 8 min RTTs to cut batches at them: RTT slices batched as on
 *   the time basis measure the same rate. On a 200 ms path three cycles take 4.8 s, which
 *   a window opened after STARTUP and DRAIN and bounded by --quick-max-ms seldom has (the
 *   large matrix's 200 ms BBR runs fell back with `few_batches` in 18 of 24). Without a
 *   standing queue (BBR in PROBE_BW alone on a path seldom keeps one: a 0.75 phase drains
 *   it) the cycle can show, and whole cycles stay the basis.
 * - Loss-based cc: cwnd climbing back towards slow-start's level after the cut that ended
 *   it no longer moves the rate: a larger cwnd only lengthens the queue (see
 *   converged()). */
int qw_link_busy(const qw_window *w)
{
    return qw_queued_share(w, w->first, w->n) >= 1.0;
}

/* Choose the basis and form the batches; returns the batch count (0 if none). On the
 * loss-cycle basis *tail_from is the first slice after the last whole cycle. */
static int form_batches(const qw_window *w, qw_basis *basis, double *bytes, double *secs,
                        int *first, int *tail_from)
{
    static int ub[QW_MAX_SLICES], ue[QW_MAX_SLICES];
    int nu, min_b, per;

    if (w->p.bbr) {
        double cyc = QW_BBR_GAIN_CYCLE * qw_min_rtt_s(w);

        *basis = QW_BASIS_BBR_CYCLES;
        nu = units_of_time(w, cyc, ub, ue);
        min_b = QW_MIN_CYCLE_BATCHES;
        per = 1;
        if (nu < QW_MIN_CYCLE_BATCHES && qw_link_busy(w)) {
            *basis = QW_BASIS_TIME;
            nu = units_of_time(w, 0, ub, ue);
            min_b = QW_MIN_TIME_BATCHES;
            per = QW_SLICES_PER_TIME_BATCH;
        }
    } else if ((nu = qw_units_loss_cycles(w, ub, ue)) >= QW_MIN_CYCLE_BATCHES) {
        *basis = QW_BASIS_LOSS_CYCLES;
        min_b = QW_MIN_CYCLE_BATCHES;
        per = 1;
        *tail_from = ue[nu - 1];
    } else {
        *basis = QW_BASIS_TIME;
        nu = units_of_time(w, 0, ub, ue);
        min_b = QW_MIN_TIME_BATCHES;
        per = QW_SLICES_PER_TIME_BATCH;
    }
    while (nu / per > QW_MAX_BATCHES)
        per++;
    if (nu / per < min_b)
        return nu / per >= 2 ? -make_batches(w, ub, ue, nu, per, bytes, secs, first) : 0;
    return make_batches(w, ub, ue, nu, per, bytes, secs, first);
}

/* 1 if the batch rates of the first h and the last h of nb batches differ significantly
 * (Welch's t, 95 %): a change of level, not the batches' own scatter. */
static int halves_differ(const double *bytes, const double *secs, int nb, int h)
{
    double m[2] = { 0, 0 }, v[2] = { 0, 0 }, rate[QW_MAX_BATCHES], se;

    if (h < 2)
        return 0;
    for (int i = 0; i < nb; i++)
        rate[i] = bytes[i] / secs[i];
    for (int k = 0; k < 2; k++) {
        int from = k ? nb - h : 0;

        for (int i = from; i < from + h; i++)
            m[k] += rate[i] / h;
        for (int i = from; i < from + h; i++)
            v[k] += (rate[i] - m[k]) * (rate[i] - m[k]) / (h - 1);
    }
    se = sqrt((v[0] + v[1]) / h);
    if (se <= 0)
        return m[0] != m[1];
    return fabs(m[1] - m[0]) / se > qw_t95(2 * h - 2);
}

/* 1 if slices [from, to) ran at a level the batches (rate r) do not: apart by more than
 * QW_LEVEL_CHANGE of the rate and beyond the batches' scatter scaled to their length (a
 * stretch's mean varies as a batch's does, by length; the batches' mean too; 95 %). */
int qw_stretch_differs(const qw_window *w, int from, int to, const double *bytes,
                       const double *secs, int nb, double r)
{
    double hb = 0, hs = 0, tb = 0, var = 0;

    if (nb < 2 || to <= from)
        return 0;
    qw_unit_sum(w, from, to, &hb, &hs);
    if (hs <= 0 || fabs(hb / hs - r) <= QW_LEVEL_CHANGE * r)
        return 0;
    for (int i = 0; i < nb; i++) {
        tb += secs[i] / nb;
        var += (bytes[i] / secs[i] - r) * (bytes[i] / secs[i] - r) / (nb - 1);
    }
    return fabs(hb / hs - r) > qw_t95(nb - 1) * sqrt(var * tb / hs + var / nb);
}

/* 1 if the slices since measuring began that no batch counts ([0, upto): transients
 * dropped after slow-start, the part before the first whole cycle) ran at a level the
 * batches do not (qw_stretch_differs) while the flow was taking what the path gives it:
 * - loss-based cc: a standing queue kept the link full through most of them
 *   (qw_mostly_full). At a full link the flow's rate is the link's share whatever its cwnd
 *   does. (An off-matrix path, Reno at 5 Mbit/s x 30 ms, 2.5 BDP buffer, 40 % cross
 *   traffic 2 s on / 3 s off: the window dropped the on phase's 2.9 Mbit/s as transients,
 *   counted whole loss cycles from 1.5 s on, all in the off phase, and converged on 4.8:
 *   +16.6 %.)
 * - BBR: PROBE_BW in every counted slice, head and batches, the test the halves get
 *   (level_changed_at_full_link): its rate is its bandwidth estimate (a max over 10
 *   rounds) x the gain cycle, and the estimate moves only with the path. (The bench's
 *   8-stream row with 75 Mbit/s cross traffic 500 ms on / 1500 ms off: halves 3-9 % apart
 *   dropped an on phase at 222 Mbit/s as a transient, and the window converged on the
 *   off phase after it at 297: +6.2 % from the 20 s figure.)
 * So that part was no transient of the flow's own: the path's share changed (cross
 * traffic on or off) and may change back. */
static int head_differs(const qw_window *w, int upto, const double *bytes, const double *secs,
                        int nb, double r)
{
    if (upto < 2)
        return 0;
    if (w->p.bbr ? !qw_all_probe_bw(w, 0, w->n) : w->p.beta <= 0 || !qw_mostly_full(w, 0, upto))
        return 0;
    return qw_stretch_differs(w, 0, upto, bytes, secs, nb, r);
}

/* Recompute the estimate, its interval at level alpha (the planned check's: qw_plan_checks);
 * 1 if it is complete enough to be judged (enough batches). *mid is the first slice of the
 * second half of the batches. */
static int estimate(qw_window *w, double alpha, double *half_diff, int *mid)
{
    double bytes[QW_MAX_BATCHES], secs[QW_MAX_BATCHES], b1 = 0, s1 = 0, b2 = 0, s2 = 0;
    qw_basis basis = QW_BASIS_NONE;
    int first[QW_MAX_BATCHES], tail_from = 0;
    int nb = form_batches(w, &basis, bytes, secs, first, &tail_from), full = nb > 0, h;
    double ci, r;

    w->tail_above = w->head_differs = w->last_differs = 0;
    if (nb < 0)
        nb = -nb;
    if (nb == 0)
        return 0;
    r = qw_batch_ci(bytes, secs, nb, alpha, &ci);
    /* the batches hold every whole cycle, so r is the cycles' rate */
    w->tail_above = basis == QW_BASIS_LOSS_CYCLES && qw_tail_above_cycles(w, tail_from, r);
    w->head_differs = head_differs(w, first[0], bytes, secs, nb, r);
    w->last_differs = qw_last_slice_differs(w, bytes, secs, nb, r);
    w->est.rate_bps = r * 8.0;
    w->est.ci_frac = ci;
    w->est.batches = nb;
    w->est.basis = basis;
    w->est.counted_s = 0;
    for (int i = 0; i < nb; i++)
        w->est.counted_s += secs[i];
    /* Stationarity: the first and the second half of the batches give the same rate. */
    h = nb / 2;
    for (int i = 0; i < h; i++) {
        b1 += bytes[i], s1 += secs[i];
        b2 += bytes[nb - 1 - i], s2 += secs[nb - 1 - i];
    }
    *half_diff = s1 > 0 && s2 > 0 && r > 0 ? fabs(b2 / s2 - b1 / s1) / r : INFINITY;
    *mid = first[nb - h];
    w->halves_differ = halves_differ(bytes, secs, nb, h);
    return full;
}

/* 1 if BBR's bandwidth filter (QW_BBR_BW_ROUNDS rounds, a round about the latest slice's
 * smoothed RTT) spans at least the sampling period, so that each estimate the window reads
 * carries the filter's memory of the reads before it and a rise between two reads is the
 * filter's. Shorter, each read is the largest delivery rate of a few rounds since the last,
 * and two reads differ by the spread of those rates: on loopback 10 rounds take 0.3 ms
 * against 20 ms samples, and the estimates read 27.6-149.7 Gbit/s slice to slice at a
 * steady 70-75. */
int qw_bw_filter_smooth(const qw_window *w)
{
    return QW_BBR_BW_ROUNDS * (w->slice_rtt_us / 1e6) >= w->p.sample_s;
}

/* Close the current slice at sample s and start the next one. */
static void close_slice(qw_window *w, const qw_sample *s)
{
    qw_slice *sl = &w->s[w->n++];

    sl->t0 = w->slice_t0;
    sl->t1 = s->t_s;
    sl->bytes = s->delivered_bytes > w->slice_bytes0 ? s->delivered_bytes - w->slice_bytes0 : 0;
    sl->events = w->events;
    sl->q_min = w->slice_qmin;
    sl->q_lo_min = w->slice_qlo_min;
    w->slice_qmin = w->slice_qlo_min = INFINITY;
    sl->probe_bw = !w->slice_not_bw;
    sl->bw_bps = s->bw_bps;
    sl->cwnd0_bytes = w->slice_cwnd0;
    sl->cwnd_bytes = s->cwnd_bytes;
    w->slice_not_bw = s->bbr_mode != QW_BBR_PROBE_BW;
    /* PROBE_RTT, and the round after it (cwnd is restored but the pipe refills), are not
     * the steady state a long run spends nearly all its time in. */
    sl->excluded = w->slice_probe_rtt || w->after_probe_rtt;
    if (sl->excluded)
        w->est.excluded_s += sl->t1 - sl->t0;
    w->after_probe_rtt = w->slice_probe_rtt;
    w->slice_probe_rtt = s->bbr_mode == QW_BBR_PROBE_RTT;
    /* Climbing back: below where slow-start left cwnd and still growing. */
    w->climbing = !w->p.bbr && s->cwnd_bytes < w->exit_cwnd_bytes &&
                  s->cwnd_bytes > w->slice_cwnd0;
    w->slice_t0 = s->t_s;
    w->slice_bytes0 = s->delivered_bytes;
    w->slice_cwnd0 = s->cwnd_bytes;
    w->slice_rtt_us = s->rtt_us;
}

/* Slice length: a whole number of RTTs, at least one sample period (and short enough
 * that max_s fits in the slice array). */
static double slice_len(const qw_window *w)
{
    double floor_s = fmax(w->p.sample_s, w->p.max_s / (QW_MAX_SLICES - 1));
    double rtt = w->slice_rtt_us / 1e6;

    if (rtt <= 0)
        return floor_s;
    return ceil(floor_s / rtt - 1e-9) * rtt;
}

/* The standing queue in BDPs that a smoothed RTT of srtt_us shows: (srtt - base) / base
 * (a queue only builds at a full link, whose rate x base RTT is the BDP), the base the RTT
 * with no queue: the smoothed RTT's floor, or the min RTT if larger (qw_queue_over); 0
 * without either. */
double qw_queue_at(const qw_window *w, uint32_t srtt_us)
{
    return qw_queue_over(srtt_us, w->srtt_floor_us, w->min_rtt_us);
}

/* The deepest standing queue seen, in BDPs: the window's, or slow-start's overshoot before
 * it opened if deeper. Every queue seen is a depth the buffer holds. */
double qw_deepest_queue(const qw_window *w)
{
    return fmax(w->max_queue, qw_queue_at(w, w->seen_rtt_us));
}

/* The standing queue in BDPs at s, from the largest smoothed RTT over the streams. */
double qw_queue_bdps(const qw_window *w, const qw_sample *s)
{
    return qw_queue_at(w, s->rtt_us);
}

/* 1 if a loss recovery at s keeps the window from starting or stopping there. A
 * loss-based cc cuts cwnd in it: a transient. So does BBR's STARTUP, whose recoveries
 * are its overshoot of the buffer. In PROBE_BW they are not: BBR's rate is its model's
 * (bandwidth x gain), which "does not react directly to packet losses" (tcp_bbr.c); in a
 * recovery it only holds cwnd near what is in flight for a round, and the delivered
 * count (acked + SACKed) runs on. On a lossy path, a shallow buffer or with several
 * streams some BBR stream is in a recovery nearly all the time: that is its steady
 * state, and waiting for a moment without one left such windows unstarted for 5 s.
 * Except the recovery STARTUP's overshoot began, which can last into PROBE_BW: hundreds
 * of packets were lost at once, and holding cwnd at what is in flight (packet
 * conservation, bbr_set_cwnd_to_recover_or_restore) leaves the pipe short of them until
 * they are repaired. The lab's 150 Mbit/s x 70 ms path delivered 56 and 88 Mbit/s in
 * two samples of such a repair, 0.1 s into PROBE_BW; the first gain cycle read 4 % below
 * the next, the halves test dropped it and the run took 1.2 s longer. So a stream still
 * in the recovery it entered in STARTUP or DRAIN (overshoot_recovery) blocks as in
 * STARTUP, for at most one gain cycle (8 min RTTs) after the window opened: that repair
 * ended 0.36 s (5 min RTTs) after slow-start did there, and a stream whose window holds
 * more packets than one random loss in a round leaves a recovery only to enter the next,
 * so that the samples may never see it out of one. Past the bound a recovery is taken
 * to be PROBE_BW's own. Several Reno or CUBIC streams are treated alike, their slow-start's
 * overshoots blocking as STARTUP's: after those one stream's cut takes (1 - beta) / N of
 * the N streams' cwnd. A Reno stream peaking at W packets cuts once a cycle of W / 2 rounds
 * and spends about one round in recovery, so with the streams' cuts apart some stream is in
 * one about 2 N / W of the time, always once W <= 2 N: 16 Reno streams on 5 Mbit/s x 30 ms
 * (1500 B, a few packets each) were at every sample, the window started only at half of
 * --quick-max-ms, measured 0.1-0.3 s and 3 of 6 missed. That is the aggregate's steady
 * state, as PROBE_BW's recoveries are BBR's. One stream's recovery is the whole flow's
 * cut: it always blocks. */
static int recovery_blocks(const qw_window *w, const qw_sample *s)
{
    double bound_s = QW_BBR_GAIN_CYCLE * w->min_rtt_us / 1e6;

    if (!s->in_recovery)
        return 0;
    if (w->p.bbr ? s->bbr_mode != QW_BBR_PROBE_BW : qw_streams(w) == 1)
        return 1;
    return s->overshoot_recovery && s->t_s - w->open_t < bound_s;
}

/* The window's parallel streams, at least 1. */
int qw_streams(const qw_window *w)
{
    return w->p.streams > 1 ? w->p.streams : 1;
}

/* Packets delivered since measuring began, in the largest MSS seen. */
double qw_packets_measured(const qw_window *w)
{
    return (double)(w->delivered_bytes - w->start_delivered) / qw_mss(w->mss_bytes);
}

/* Start measuring at s if it is a steady moment, or at once when half of --quick-max-ms went
 * by without one (one stream on a lossy path, a recovery in every sample: the answer must
 * still come by the deadline); 1 if started. */
static int try_start(qw_window *w, const qw_sample *s)
{
    int waited = s->t_s - w->open_t >= w->p.max_s / 2;

    if (!waited && (recovery_blocks(w, s) || s->bbr_mode == QW_BBR_DRAIN || s->bbr_mode == QW_BBR_PROBE_RTT))
        return 0;
    w->started = 1;
    w->start_t = w->began_t = w->slice_t0 = s->t_s;
    w->slice_bytes0 = w->est.start_bytes = w->start_delivered = s->delivered_bytes;
    /* The answer is due deadline_rtts rounds after the window opened (a path's dynamics
     * run in rounds), no sooner than --quick-ms of measuring, and done by --quick-max-ms:
     * the window closes the drain's time before it (qw_update_deadline, at every sample). */
    w->plan_t = fmax(s->t_s + w->p.min_s, w->open_t + w->p.deadline_rtts * s->rtt_us / 1e6);
    qw_update_deadline(w, s);
    qw_plan_checks(w);
    w->slice_cwnd0 = w->cwnd_low_bytes = s->cwnd_bytes;
    w->slice_rtt_us = s->rtt_us;
    w->prev_retrans = s->retrans;
    w->prev_recovery = 0;
    w->limited_us0 = s->limited_us;
    w->rwnd_limited_us0 = s->rwnd_limited_us;
    w->rwnd_min_bytes = w->rwnd_max_bytes = s->rwnd_bytes;
    w->clean_from_bytes = s->delivered_bytes;
    w->slice_qmin = w->slice_qlo_min = INFINITY;
    w->slice_not_bw = s->bbr_mode != QW_BBR_PROBE_BW;
    return 1;
}

/* The interval's terms that hold a window whose rate looks stationary at sample s: each
 * that would take a side of the interval further from the estimate than the tolerance
 * (the receiver's window, the sawtooth, random loss, growth, timeouts, a reordering path's
 * first overflow, a shared queue); QW_HOLD_NONE when none does. */
static qw_hold evidence_holds(const qw_window *w, const qw_sample *s)
{
    qw_hold saw;

    /* the receiver's window, not the path, set the rate, and no wait tells whether or when
     * the receiver opens it (qw_rwnd_ceiling) */
    if (qw_rwnd_ceiling(w) * 8 > (1 + w->p.tolerance) * w->est.rate_bps)
        return QW_HOLD_RWND;
    saw = qw_sawtooth_known(w, s);
    if (saw != QW_HOLD_NONE)
        return saw;
    saw = qw_loss_floor_hold(w);
    if (saw != QW_HOLD_NONE)
        return saw;
    if (qw_growing(w))
        return QW_HOLD_GROWING;
    if (qw_timeouts_share(w) > w->p.tolerance)
        return QW_HOLD_TIMEOUTS;
    if (qw_reorder_overflow_holds(w))
        return QW_HOLD_REORDER_OVERFLOW;
    /* the interval's shared term (qw_shared_ceiling): the share may grow to the rate the
     * queue drained, 1 / 0.6 of the rate or more wherever the queue reads shared */
    if (qw_drained_share(w) > 0)
        return QW_HOLD_SHARED;
    return QW_HOLD_NONE;
}

/* What keeps the window from stopping at sample s with the estimate just computed (full:
 * it had enough batches; QW_HOLD_NONE: it may stop). A change of level at a full link
 * holds it for good, so that comes first: it is the reason a window that gave up gives. */
static qw_hold converged(const qw_window *w, const qw_sample *s, int full, double half_diff)
{
    const qw_estimate *e = &w->est;
    qw_hold saw;

    if (w->varying)
        return QW_HOLD_VARYING;
    if (!full)
        return QW_HOLD_FEW_BATCHES;

    /* One transient after slow-start is expected and dropped for free. A window that had
     * to drop a second has seen the rate change level again: the path may be varying
     * (cross traffic on and off), not settling, so it spans twice min_s, and a change back
     * within that time shows in its halves or its interval. */
    if (s->t_s - w->start_t < w->p.min_s * (w->drops > 1 ? 2 : 1) * QW_SLACK)
        return QW_HOLD_SHORT;
    if (e->ci_frac < 0)
        return QW_HOLD_FEW_BATCHES;
    if (e->ci_frac > w->p.tolerance)
        return QW_HOLD_INTERVAL;
    if (half_diff > QW_STATIONARY)
        return QW_HOLD_HALVES;
    if (w->tail_above)
        return QW_HOLD_TAIL;
    if (w->head_differs)
        return QW_HOLD_HEAD;
    if (w->last_differs)
        return QW_HOLD_LAST_SLICE;
    if (e->basis != QW_BASIS_LOSS_CYCLES && recovery_blocks(w, s))
        return QW_HOLD_RECOVERY;
    /* cwnd climbing back to where slow-start left it (CUBIC after HyStart and a cut): the
     * rate climbs with it until a standing queue shows the link is full (from there on a
     * larger cwnd only lengthens the queue): now and through a cut (qw_link_full), or in
     * every counted slice (qw_link_busy), so that no part of the estimate was read below it */
    if (e->basis != QW_BASIS_LOSS_CYCLES && w->climbing && !qw_link_full(w, s) &&
        !qw_link_busy(w))
        return QW_HOLD_CLIMBING;
    if (w->bw_rising)
        return QW_HOLD_BW_RISING;
    /* a rate pinned to the long-term bandwidth returns to the max filter's when the mode ends */
    if (w->lt_bw && (double)w->bw_max_bps - e->rate_bps > w->p.tolerance * e->rate_bps)
        return QW_HOLD_LT_BW;
    saw = evidence_holds(w, s);
    if (saw != QW_HOLD_NONE)
        return saw;
    return s->bbr_mode == QW_BBR_PROBE_RTT ? QW_HOLD_PROBE_RTT : QW_HOLD_NONE;
}

/* Take from sample s what the window tracks whether or not it has started measuring: the
 * path's min RTT and the smoothed RTT's floor, the MSS, the counters the kernel keeps (bytes
 * delivered, time limited by a window), the receiver's window, the kernel's reordering degree,
 * the backlog and the cruise. */
static void track_sample(qw_window *w, const qw_sample *s)
{
    if (s->min_rtt_us && (w->min_rtt_us == 0 || s->min_rtt_us < w->min_rtt_us))
        w->min_rtt_us = s->min_rtt_us;
    /* the floor is the RTT with no queue only if it reaches back to the connection's first
     * rounds, before any queue could build: slow-start's samples seed it (qw_seen) */
    if (w->srtt_floor_us)
        qw_srtt_floor(&w->srtt_floor_us, s);
    if (s->mss_bytes > w->mss_bytes)
        w->mss_bytes = s->mss_bytes;
    w->delivered_bytes = s->delivered_bytes;
    w->limited_us = s->limited_us;
    w->rwnd_limited_us = s->rwnd_limited_us;
    if (w->started) {
        w->rwnd_min_bytes = s->rwnd_bytes < w->rwnd_min_bytes ? s->rwnd_bytes : w->rwnd_min_bytes;
        w->rwnd_max_bytes = s->rwnd_bytes > w->rwnd_max_bytes ? s->rwnd_bytes : w->rwnd_max_bytes;
    }
    w->rwnd_top_bytes = s->rwnd_top_bytes;
    w->reordering_segments = s->reordering_segments;
    qw_track_backlog(w, s);
    qw_track_cruise(w, s);
}

/* Close the slice that sample s ends, estimate and judge the window; 1 if it converged at a
 * planned check (w->state is then QW_CONVERGED). */
static int close_and_judge(qw_window *w, const qw_sample *s)
{
    double half_diff = INFINITY;
    int check = qw_at_check(w, s->t_s), full, mid = 0;

    close_slice(w, s);
    full = estimate(w, qw_past_deadline(w, s->t_s) ? w->due_alpha : w->check_alpha, &half_diff,
                    &mid);
    w->bw_rising = qw_bw_rising(w);
    if (full && !w->ss_level_differs && qw_plateau_differs(w))
        w->varying = w->ss_level_differs = 1;
    w->hold = converged(w, s, full, half_diff);
    if (w->hold == QW_HOLD_NONE && check) {
        w->state = QW_CONVERGED;
        w->end_t = s->t_s;
        return 1;
    }
    if (w->hold != QW_HOLD_NONE)
        qw_follow_level(w, full, half_diff, mid);
    return 0;
}

/* Stop the window at sample s if its deadline passed (with a slice to answer from, or -t
 * reached) or its slices are full; a change of level at a full link may put the deadline
 * off (qw_put_off). */
static void stop_if_due(qw_window *w, const qw_sample *s)
{
    int met;

    /* a change of level at a full link keeps its own time, not the RTT's (qw_put_off) */
    if (qw_past_deadline(w, s->t_s) && w->n > 0 && w->n < QW_MAX_SLICES && w->varying &&
        qw_put_off(w, s))
        return;
    if (!((qw_past_deadline(w, s->t_s) && (w->n > 0 || s->t_s >= w->open_t + w->p.max_s)) ||
          w->n >= QW_MAX_SLICES))
        return;
    /* the deadline is the last check: gates that passed at a slice since the last one (at a
     * stricter level) pass at it */
    met = w->hold == QW_HOLD_NONE && w->n > 0;
    /* a slice is a whole number of round trips: one of a deep buffer's several-second
     * smoothed RTT (a slow uplink) may not have closed by the deadline; close it short so
     * that the window answers with what it measured instead of running to -t */
    if (w->n == 0 && s->t_s > w->slice_t0)
        close_slice(w, s);
    qw_stop(w);
    if (met)
        w->state = QW_CONVERGED;
}

/* Feed the next sample; returns the state after it (QW_OPEN while measuring). */
qw_state qw_feed(qw_window *w, const qw_sample *s)
{
    if (w->state != QW_OPEN)
        return w->state;
    track_sample(w, s);
    if (!w->started) {
        qw_track_recovery(w, s);
        if (try_start(w, s))
            w->hold = QW_HOLD_FEW_BATCHES;
        else if (s->t_s - w->open_t >= w->p.max_s * QW_SLACK)
            qw_stop(w);
        return w->state;
    }
    qw_track_share(w, s);
    qw_count_events(w, s);
    qw_track_recovery(w, s);
    w->samples++;
    w->timeout_samples += s->in_timeout != 0;
    if (s->bbr_mode == QW_BBR_PROBE_RTT)
        w->slice_probe_rtt = 1;
    if (s->bbr_mode != QW_BBR_PROBE_BW)
        w->slice_not_bw = 1;
    if (s->t_s - w->slice_t0 >= slice_len(w) * QW_SLACK && close_and_judge(w, s))
        return w->state;
    /* due by --quick-max-ms with the drain as it stands now, not as it stood at the start
     * (the answer came 0.2-0.5 s late on 120-200 ms paths whose queue had filled since), nor
     * at its most pessimistic moment (a rate read low over the first slices) */
    qw_update_deadline(w, s);
    stop_if_due(w, s);
    return w->state;
}

/* Count every slice since measuring began again. The parts the window dropped ran at
 * levels the path set (cross traffic on and off: w->varying, QW_HOLD_HEAD), or the rate
 * kept changing level until the deadline (QW_HOLD_SHORT), not one transient of the flow's
 * own; a run's figure is the mix of such levels, so the answer at the deadline is measured
 * over all of them (qw_bound spans them). So, too, for BBR in PROBE_BW throughout whose drops
 * left fewer batches than an interval needs at the deadline (QW_HOLD_FEW_BATCHES): its rate
 * there is its bandwidth estimate x the gain cycle, so a head that differed was the path's
 * (or the path's jitter's: two gain cycles alone gave +-84 % on 150 Mbit/s x 70 ms, +-2 ms,
 * whose whole window read 3.8 % and held the 20 s figure). Not for Reno and CUBIC: their
 * dropped head is their own, cwnd coming down from slow-start's level (on a held-out path
 * with 0.2 % loss counting it again read +152 %). */
static void undo_drops(qw_window *w)
{
    if (w->first == 0 || w->n == 0)
        return;
    qw_count_from(w, 0, w->open_after_loss);
}

/* At the deadline: count at least the shortest window (--quick-ms) back from the latest
 * slice, taking back the latest drops that left less. A drop keeps the part after a
 * transient to measure the steady state in; one in the last moments before the deadline
 * leaves no time for that. For Reno and CUBIC what it keeps is the last fraction of a
 * sawtooth cycle: Reno on 100 Mbit/s x 40 ms with 30 % cross traffic (a half-BDP buffer)
 * dropped all but its last 0.38 s and read -20.5 % (64.8, 50.7-78.6, against 81.5); over
 * its last second it reads 79.2 (63.0-79.4). */
static void keep_shortest(qw_window *w)
{
    double t_end;
    int k;

    if (w->first == 0 || w->n == 0)
        return;
    t_end = w->s[w->n - 1].t1;
    k = w->first;
    while (k > 0 && t_end - w->s[k].t0 < w->p.min_s * QW_SLACK)
        k--;
    if (k < w->first)
        qw_count_from(w, k, k == 0 ? w->open_after_loss : 0);
}

/* A window that delivered nothing over the time it counted (the path or the server stopped;
 * retransmission timeouts backing off) still answers: its rate is the connection's average
 * since the first byte, slow-start's bytes and the stall both in it, and the interval
 * (qw_bound: stalled) runs from the stall lasting to the run's end to the rate slow-start
 * reached coming back. Not answering would run the full test, which the deadline promises
 * not to do. */
static void answer_stall(qw_window *w)
{
    double t_end;

    if (w->n == 0 || w->est.rate_bps > 0 || w->delivered_bytes == 0)
        return;
    t_end = w->s[w->n - 1].t1;
    if (t_end <= 0)
        return;
    w->stalled = 1;
    w->est.rate_bps = (double)w->delivered_bytes * 8.0 / t_end;
    w->est.ci_frac = -1;
}

/* Close a window still open as not converged, with the estimate so far. */
void qw_stop(qw_window *w)
{
    double half_diff;
    int mid;

    if (w->state != QW_OPEN)
        return;
    w->state = QW_GAVE_UP;
    w->end_t = w->n ? w->s[w->n - 1].t1 : w->open_t;
    /* the plateau's test needs no batches: a gain cycle's mean is the estimate's level */
    if (!w->varying && qw_plateau_differs(w))
        w->varying = w->ss_level_differs = 1;
    if (w->varying || w->hold == QW_HOLD_HEAD ||
        (w->hold == QW_HOLD_SHORT && !qw_only_own_climbs(w)) ||
        (w->hold == QW_HOLD_FEW_BATCHES && w->drops > 0 && w->p.bbr && qw_all_probe_bw(w, 0, w->n)))
        undo_drops(w);
    keep_shortest(w);
    if (w->n && estimate(w, w->due_alpha, &half_diff, &mid) == 0 && w->est.batches == 0) {
        /* Too short for batches: the plain mean of what was counted, no interval. */
        double b = 0, t = 0;

        qw_unit_sum(w, w->first, w->n, &b, &t);
        w->est.rate_bps = t > 0 ? b * 8.0 / t : 0;
        w->est.counted_s = t;
        w->est.ci_frac = -1;
    }
    answer_stall(w);
}

/* The latest estimate (rate 0 before the first batch). */
const qw_estimate *qw_result(const qw_window *w)
{
    return &w->est;
}

/* When measuring began, -1 if it never did. */
double qw_start_t(const qw_window *w)
{
    return w->start_t;
}

/* When the window closed, -1 while open. */
double qw_end_t(const qw_window *w)
{
    return w->end_t;
}

/* When the answer is due, from the first byte: slow-start's end and qw_due_s's share. */
double qw_due_t(const qw_window *w)
{
    return w->open_t + w->p.max_s;
}
