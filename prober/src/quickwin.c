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
 * The mean rate is the ratio estimator (total bytes / total time) and its 95 % interval
 * uses Student's t with batches - 1 degrees of freedom, which stays wide while batches
 * are few. On top of the interval, the window must look stationary: the rates of its
 * first and second halves agree within the tolerance, (loss-based cc) cwnd is not
 * still climbing back to where slow-start left it, and (BBR) its bandwidth estimate is
 * not still rising.
 *
 * BBR's PROBE_RTT (4 packets in flight for 200 ms every 10 s) is not steady state: its
 * slices, and the slice right after it, are left out and the window extends across them.
 * The window does not start in DRAIN or PROBE_RTT or in a loss recovery. */
#include "quickwin.h"

#include <math.h>
#include <string.h>

#define QW_SLACK 0.95           /* timer-jitter slack on "one RTT elapsed" */
#define QW_MIN_CYCLE_BATCHES 3  /* whole cycles needed before their batches are used */
#define QW_MIN_TIME_BATCHES 5   /* time batches needed (t with 4 dof: 2.78) */
#define QW_SLICES_PER_TIME_BATCH 2
#define QW_BBR_GAIN_CYCLE 8     /* PROBE_BW: 8 phases, each about one min RTT */
#define QW_BUSY_QUEUE 0.25      /* a standing queue this deep (BDPs) is one, not the min
                                   RTT's bias: the smoothed RTT averages delay jitter that
                                   the min RTT takes at its lowest (the lab's normal 2 ms
                                   jitter on 70 ms read 0.07-0.10 BDP of "queue" in
                                   slow-start's first rounds, the link nearly idle) */
#define QW_QUEUE_SAME 0.75      /* queues within this ratio are the same level: the
                                   smoothed RTT (gain 1/8 per ACK) trails the queue and
                                   delay jitter blurs it */
#define QW_LEVEL_CHANGE 3       /* halves this many tolerances apart with the link full are
                                   the path changing (cross traffic), not noise: see
                                   level_changed_at_full_link() */
#define QW_TREND_PEAKS 5        /* cwnd peaks from which their trend, beside their range,
                                   can show they do not fall: see peaks_level() */
#define QW_CLEAN_PACKETS 5000  /* at most this many loss-free packets are asked for (rules
                                   out random loss >= 1e-3 at 99.3 %): see loss_free() */
#define BBR_UNIT 256
#define BBR_MIN_RTT_WIN_S 10.0  /* tcp_bbr.c: bbr_min_rtt_win_sec */
#define BBR_PROBE_RTT_S 0.2     /* tcp_bbr.c: bbr_probe_rtt_mode_ms */
#define BBR_CWND_MIN_PACKETS 4  /* tcp_bbr.c: bbr_cwnd_min_target, cwnd in PROBE_RTT */

/* Open the window at the end of slow-start (t_s, cwnd there, whether a loss ended it). */
void qw_open(qw_window *w, const qw_params *p, double t_s, uint64_t exit_cwnd_bytes,
             int after_loss)
{
    memset(w, 0, sizeof(*w));
    w->p = *p;
    w->state = QW_OPEN;
    w->open_t = t_s;
    w->start_t = -1;
    w->end_t = -1;
    w->exit_cwnd_bytes = exit_cwnd_bytes;
    w->start_after_loss = after_loss;
    w->est.ci_frac = -1;
    w->hold = QW_HOLD_NOT_STARTED;
}

/* Record the largest smoothed RTT seen before the window opened (see quickwin.h). */
void qw_seen_rtt(qw_window *w, uint32_t rtt_us)
{
    w->seen_rtt_us = rtt_us;
}

/* Two-sided 95 % Student t quantile for dof degrees of freedom (dof >= 1). */
double qw_t95(int dof)
{
    static const double t[] = { 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131 };

    if (dof < 1)
        return INFINITY;
    if (dof <= (int)(sizeof(t) / sizeof(t[0])))
        return t[dof - 1];
    return dof <= 30 ? 2.09 : 1.96;
}

/* Ratio estimator over n batches (bytes, seconds): rate in bytes/s and the 95 %
 * half-width as a fraction of it (-1 when n < 2 or the rate is 0). */
double qw_batch_ci(const double *bytes, const double *secs, int n, double *ci_frac)
{
    double sb = 0, ss = 0, var = 0, r, se;

    *ci_frac = -1;
    for (int i = 0; i < n; i++) {
        sb += bytes[i];
        ss += secs[i];
    }
    if (ss <= 0)
        return 0;
    r = sb / ss;
    if (n < 2 || r <= 0)
        return r;
    /* Delta-method variance of a ratio of sums: residuals bytes_i - r * secs_i. */
    for (int i = 0; i < n; i++)
        var += (bytes[i] - r * secs[i]) * (bytes[i] - r * secs[i]);
    var /= (n - 1);
    se = sqrt(var / n) / (ss / n);
    *ci_frac = qw_t95(n - 1) * se / r;
    return r;
}

/* BBR's mode from TCP_CC_INFO's gains (x256); QW_BBR_NONE when both are 0. */
qw_bbr_mode qw_bbr_mode_from_gains(uint32_t pacing_gain, uint32_t cwnd_gain)
{
    if (pacing_gain == 0 && cwnd_gain == 0)
        return QW_BBR_NONE;
    /* bbr_update_gains: STARTUP paces at high_gain (2.89), DRAIN at 1/high_gain with the
     * startup cwnd gain kept, PROBE_RTT at 1 with cwnd gain 1, PROBE_BW at 1.25 / 0.75 /
     * 1 with cwnd gain 2. */
    if (pacing_gain >= 2 * BBR_UNIT)
        return QW_BBR_STARTUP;
    if (pacing_gain < BBR_UNIT / 2 && cwnd_gain > 2 * BBR_UNIT)
        return QW_BBR_DRAIN;
    if (pacing_gain == BBR_UNIT && cwnd_gain == BBR_UNIT)
        return QW_BBR_PROBE_RTT;
    return QW_BBR_PROBE_BW;
}

/* "startup", "drain", "probe_bw", "probe_rtt"; NULL for QW_BBR_NONE. */
const char *qw_bbr_mode_name(qw_bbr_mode m)
{
    switch (m) {
    case QW_BBR_STARTUP: return "startup";
    case QW_BBR_DRAIN: return "drain";
    case QW_BBR_PROBE_BW: return "probe_bw";
    case QW_BBR_PROBE_RTT: return "probe_rtt";
    case QW_BBR_NONE: break;
    }
    return NULL;
}

/* One stream's overshoot_recovery at a sample, from the previous one (see quickwin.h). */
int qw_overshoot_step(int prev, int in_recovery, qw_bbr_mode mode)
{
    return in_recovery && (prev || mode == QW_BBR_STARTUP || mode == QW_BBR_DRAIN);
}

/* "time", "loss_cycles", "bbr_cycles"; NULL for none. */
const char *qw_basis_name(qw_basis b)
{
    switch (b) {
    case QW_BASIS_TIME: return "time";
    case QW_BASIS_LOSS_CYCLES: return "loss_cycles";
    case QW_BASIS_BBR_CYCLES: return "bbr_cycles";
    case QW_BASIS_NONE: break;
    }
    return NULL;
}

/* What kept the window open at its latest slice. */
qw_hold qw_hold_of(const qw_window *w)
{
    return w->hold;
}

/* Each hold's name (JSON) and what it means (the human report). */
static const struct {
    const char *name, *text;
} hold_names[] = {
    [QW_HOLD_NOT_STARTED] = { "not_started", "a loss recovery, DRAIN or PROBE_RTT never ended" },
    [QW_HOLD_FEW_BATCHES] = { "few_batches", "too few cycles for an interval" },
    [QW_HOLD_SHORT] = { "short", "the rate kept changing level: too little was left after the "
                                 "last change" },
    [QW_HOLD_INTERVAL] = { "interval", "the interval stayed wider than the tolerance" },
    [QW_HOLD_HALVES] = { "halves", "the window's halves ran at different rates" },
    [QW_HOLD_VARYING] = { "varying", "the rate changed level with the link full (cross traffic?)" },
    [QW_HOLD_TAIL] = { "tail", "the part after the last cut ran faster than whole cycles" },
    [QW_HOLD_HEAD] = { "head", "the dropped start ran at another level with the link full" },
    [QW_HOLD_LAST_SLICE] = { "last_slice", "the latest round ran at another level" },
    [QW_HOLD_RECOVERY] = { "recovery", "a loss recovery was under way" },
    [QW_HOLD_CLIMBING] = { "climbing", "cwnd was still climbing back to slow-start's level" },
    [QW_HOLD_SAWTOOTH] = { "sawtooth", "too few level sawtooth cycles, and the queue did not "
                                       "prove the link stays full through a cut" },
    [QW_HOLD_LOSS_FREE] = { "loss_free", "too few loss-free packets to rule out random loss" },
    [QW_HOLD_PROBE_RTT] = { "probe_rtt", "BBR was in PROBE_RTT" },
    [QW_HOLD_BW_RISING] = { "bw_rising", "BBR's bandwidth estimate was still rising" },
};

#define NHOLDS (sizeof hold_names / sizeof hold_names[0])

/* "not_started", "few_batches", "short", "interval", ...; NULL for QW_HOLD_NONE. */
const char *qw_hold_name(qw_hold h)
{
    return h > QW_HOLD_NONE && (size_t)h < NHOLDS ? hold_names[h].name : NULL;
}

/* What the hold means, in words; NULL for QW_HOLD_NONE. */
const char *qw_hold_text(qw_hold h)
{
    return h > QW_HOLD_NONE && (size_t)h < NHOLDS ? hold_names[h].text : NULL;
}

/* Units (consecutive counted stretches) of the window, by basis: [begin, end) slice
 * index pairs in ub / ue; returns the count. */
static int units_loss_cycles(const qw_window *w, int *ub, int *ue)
{
    int u = 0, from = w->start_after_loss ? 0 : -1;
    uint32_t at = 0, per = w->p.streams > 1 ? (uint32_t)w->p.streams : 1;

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

/* Units of at least len seconds of counted (not excluded) slices each. */
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
static void unit_sum(const qw_window *w, int b, int e, double *bytes, double *secs)
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
            unit_sum(w, ub[k], ue[k], &bytes[b], &secs[b]);
    }
    return nb;
}

/* 1 if the slices after the last whole loss cycle (from slice from on, at least two of
 * them) ran faster than the cycles' rate by more than QW_LEVEL_CHANGE tolerances. They
 * begin at a cut, where a sawtooth is at its slowest (or, with the link full, at the
 * link's rate, like the cycles): faster than the cycles is the path giving the flow more,
 * cross traffic gone. The batches leave this part out, so without this test a window
 * converged on the cycles while the rate after them had changed (an off-matrix path,
 * 40 % cross traffic 2 s on / 3 s off: four cycles at 30 Mbit/s, then 50 for the last
 * 0.3 s of the window, reported -28 %). */
static int tail_above_cycles(const qw_window *w, int from, double cycles_rate)
{
    double bytes = 0, secs = 0;

    if (w->n - from < 2 || cycles_rate <= 0)
        return 0;
    unit_sum(w, from, w->n, &bytes, &secs);
    return secs > 0 && bytes / secs > cycles_rate * (1 + QW_LEVEL_CHANGE * w->p.tolerance);
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
static int link_busy(const qw_window *w)
{
    int counted = 0;

    for (int i = w->first; i < w->n; i++) {
        if (w->s[i].excluded)
            continue;
        if (!(w->s[i].q_lo_min >= QW_BUSY_QUEUE))
            return 0;
        counted++;
    }
    return counted > 0;
}

/* Choose the basis and form the batches; returns the batch count (0 if none). On the
 * loss-cycle basis *tail_from is the first slice after the last whole cycle. */
static int form_batches(const qw_window *w, qw_basis *basis, double *bytes, double *secs,
                        int *first, int *tail_from)
{
    static int ub[QW_MAX_SLICES], ue[QW_MAX_SLICES];
    int nu, min_b, per;

    if (w->p.bbr) {
        double cyc = QW_BBR_GAIN_CYCLE * (w->min_rtt_us ? w->min_rtt_us : w->slice_rtt_us) / 1e6;

        *basis = QW_BASIS_BBR_CYCLES;
        nu = units_of_time(w, cyc, ub, ue);
        min_b = QW_MIN_CYCLE_BATCHES;
        per = 1;
        if (nu < QW_MIN_CYCLE_BATCHES && link_busy(w)) {
            *basis = QW_BASIS_TIME;
            nu = units_of_time(w, 0, ub, ue);
            min_b = QW_MIN_TIME_BATCHES;
            per = QW_SLICES_PER_TIME_BATCH;
        }
    } else if ((nu = units_loss_cycles(w, ub, ue)) >= QW_MIN_CYCLE_BATCHES) {
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

/* 1 if more than half of the counted slices [from, to) held a standing queue of
 * (1 - beta) / beta BDP: a cut there leaves the link full. */
static int mostly_full(const qw_window *w, int from, int to)
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

/* 1 if slices [from, to) ran at a level the batches (rate r) do not: apart by more than
 * QW_LEVEL_CHANGE tolerances and beyond the batches' scatter scaled to their length (a
 * stretch's mean varies as a batch's does, by length; the batches' mean too; 95 %). */
static int stretch_differs(const qw_window *w, int from, int to, const double *bytes,
                           const double *secs, int nb, double r)
{
    double hb = 0, hs = 0, tb = 0, var = 0;

    if (nb < 2 || to <= from)
        return 0;
    unit_sum(w, from, to, &hb, &hs);
    if (hs <= 0 || fabs(hb / hs - r) <= QW_LEVEL_CHANGE * w->p.tolerance * r)
        return 0;
    for (int i = 0; i < nb; i++) {
        tb += secs[i] / nb;
        var += (bytes[i] / secs[i] - r) * (bytes[i] / secs[i] - r) / (nb - 1);
    }
    return fabs(hb / hs - r) > qw_t95(nb - 1) * sqrt(var * tb / hs + var / nb);
}

/* 1 if BBR was in PROBE_BW in every counted slice of [from, to) (PROBE_RTT left out). */
static int all_probe_bw(const qw_window *w, int from, int to)
{
    for (int i = from; i < to; i++)
        if (!w->s[i].excluded && !w->s[i].probe_bw)
            return 0;
    return 1;
}

/* 1 if the slices since measuring began that no batch counts ([0, upto): transients
 * dropped after slow-start, the part before the first whole cycle) ran at a level the
 * batches do not (stretch_differs) while the flow was taking what the path gives it:
 * - loss-based cc: a standing queue kept the link full through most of them
 *   (mostly_full). At a full link the flow's rate is the link's share whatever its cwnd
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
    if (w->p.bbr ? !all_probe_bw(w, 0, w->n) : w->p.beta <= 0 || !mostly_full(w, 0, upto))
        return 0;
    return stretch_differs(w, 0, upto, bytes, secs, nb, r);
}

/* Loss-based cc: 1 if the latest slice holds no congestion event yet ran at a level the
 * batches do not (stretch_differs). The flow's own dips come with its cuts; without one,
 * the path changed under it in this very slice, and the window must not stop on it. (An
 * off-matrix path, CUBIC at 400 Mbit/s x 60 ms with 40 % cross traffic 2 s on / 3 s off:
 * the window had counted the off phase at 397 Mbit/s; the cross traffic came back with a
 * queue that proved the link full, and the window converged on that slice, itself at 288,
 * on +22.9 %.) */
static int last_slice_differs(const qw_window *w, const double *bytes, const double *secs,
                              int nb, double r)
{
    int last = w->n - 1;

    if (w->p.bbr || last < 1 || w->s[last].excluded || w->s[last].events != w->s[last - 1].events)
        return 0;
    return stretch_differs(w, last, w->n, bytes, secs, nb, r);
}

/* Recompute the estimate; 1 if it is complete enough to be judged (enough batches).
 * *mid is the first slice of the second half of the batches. */
static int estimate(qw_window *w, double *half_diff, int *mid)
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
    r = qw_batch_ci(bytes, secs, nb, &ci);
    /* the batches hold every whole cycle, so r is the cycles' rate */
    w->tail_above = basis == QW_BASIS_LOSS_CYCLES && tail_above_cycles(w, tail_from, r);
    w->head_differs = head_differs(w, first[0], bytes, secs, nb, r);
    w->last_differs = last_slice_differs(w, bytes, secs, nb, r);
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

/* The first counted slice at whose end BBR's bandwidth estimate was within the tolerance
 * of its latest value: where its climb ended (w->first when it did not climb). */
static int climb_end(const qw_window *w)
{
    double to = (double)w->s[w->n - 1].bw_bps;
    int k = w->first;

    while (k < w->n - 1 && (1.0 + w->p.tolerance) * (double)w->s[k].bw_bps < to)
        k++;
    return k;
}

/* 1 if BBR's bandwidth estimate rose by more than the tolerance from the counted part's
 * first slice to its last. BBR paces at its estimate x the gain cycle, and the estimate
 * (the largest delivery rate of the last 10 rounds) only rises when a 1.25 probe finds
 * more: a flow whose STARTUP ended below the link's rate (random loss ended it early)
 * climbs towards it a cycle or so at a time, with the rate following. A corpus path, 50
 * Mbit/s x 15 ms, 0.3 BDP buffer, 0.2 % loss: the estimate went 44.7, 47.9, 49.6, 52.1
 * Mbit/s over the first 2 s and the rate 43.7, 47.6, 48.4, 49.7; windows that ended at
 * 1.2-1.4 s read 3.4 and 4.4 % low against intervals of 1.1 and 1.5 %. The rise is
 * BBR's own transient: the window drops it, up to where the estimate reached its latest
 * level (climb_end), as it drops one the halves show.
 * Only while the estimate was not already above the counted rate: each flow's estimate is
 * the largest of its own samples, taken during its own probe, when it borrows share from
 * the others, so the sum over several flows sits above what the link delivers and moves as
 * they trade share while the total stays put (4 flows on a 10 Mbit/s x 150 ms lab path:
 * the sum rose 10.7 -> 11.9 Mbit/s over 3 s at a rate flat at 9.6). */
static int bw_rising(const qw_window *w)
{
    uint64_t from = w->s[w->first].bw_bps, to = w->s[w->n - 1].bw_bps;
    double bytes = 0, secs = 0;

    if (!w->p.bbr || from == 0 || w->n <= w->first ||
        (double)to <= (1.0 + w->p.tolerance) * (double)from)
        return 0;
    unit_sum(w, w->first, w->n, &bytes, &secs);
    return secs > 0 && (double)from <= (1.0 + w->p.tolerance) * 8.0 * bytes / secs;
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

/* The standing queue in BDPs that a smoothed RTT of srtt_us shows: (srtt - min RTT) / min
 * RTT (a queue only builds at a full link, whose rate x min RTT is the BDP); 0 without a
 * min RTT. */
static double queue_at(const qw_window *w, uint32_t srtt_us)
{
    if (!w->min_rtt_us || srtt_us <= w->min_rtt_us)
        return 0;
    return (double)(srtt_us - w->min_rtt_us) / w->min_rtt_us;
}

/* The standing queue in BDPs at s, from the largest smoothed RTT over the streams. */
static double queue_bdps(const qw_window *w, const qw_sample *s)
{
    return queue_at(w, s->rtt_us);
}

/* ... from the smallest smoothed RTT over the streams: the queue at its least. */
static double queue_lo_bdps(const qw_window *w, const qw_sample *s)
{
    return queue_at(w, s->rtt_lo_us ? s->rtt_lo_us : s->rtt_us);
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
 * to be PROBE_BW's own. */
static int recovery_blocks(const qw_window *w, const qw_sample *s)
{
    double bound_s = QW_BBR_GAIN_CYCLE * w->min_rtt_us / 1e6;

    if (!s->in_recovery)
        return 0;
    if (!w->p.bbr || s->bbr_mode != QW_BBR_PROBE_BW)
        return 1;
    return s->overshoot_recovery && s->t_s - w->open_t < bound_s;
}

/* Start measuring at s if it is a steady moment; 1 if started. */
static int try_start(qw_window *w, const qw_sample *s)
{
    if (recovery_blocks(w, s) || s->bbr_mode == QW_BBR_DRAIN || s->bbr_mode == QW_BBR_PROBE_RTT)
        return 0;
    w->started = 1;
    w->start_t = w->slice_t0 = s->t_s;
    w->slice_bytes0 = w->est.start_bytes = s->delivered_bytes;
    w->slice_cwnd0 = s->cwnd_bytes;
    w->slice_rtt_us = s->rtt_us;
    w->prev_retrans = s->retrans;
    w->prev_recovery = 0;
    w->limited_us0 = s->limited_us;
    w->clean_from_bytes = s->delivered_bytes;
    w->slice_qmin = w->slice_qlo_min = INFINITY;
    w->slice_not_bw = s->bbr_mode != QW_BBR_PROBE_BW;
    return 1;
}

/* Count a congestion event at its first sample: entering recovery, or retransmissions
 * that came and went between two samples. */
static void count_events(qw_window *w, const qw_sample *s)
{
    double q = queue_bdps(w, s), q_lo = queue_lo_bdps(w, s);

    if (q > w->max_queue)
        w->max_queue = q;
    if (q < w->slice_qmin)
        w->slice_qmin = q;
    if (q_lo < w->slice_qlo_min)
        w->slice_qlo_min = q_lo;
    if ((s->in_recovery && !w->prev_recovery) ||
        (!s->in_recovery && !w->prev_recovery && s->retrans != w->prev_retrans)) {
        w->events++;
        if (w->events == 1 || q < w->loss_queue)
            w->loss_queue = q;
        /* the first event can come at the window's first sample: the cycle it ends began
         * before the window, and its peak is unknown (0), not a peak of 0 */
        if (w->npeaks < QW_MAX_PEAKS && w->run_peak > 0) {
            w->peak[w->npeaks] = w->run_peak;
            w->peak_slice[w->npeaks++] = w->n;
        }
        w->run_peak = 0;
    }
    if (s->cwnd_bytes > w->run_peak)
        w->run_peak = s->cwnd_bytes;
    if (s->in_recovery || s->retrans != w->prev_retrans)
        w->clean_from_bytes = s->delivered_bytes;
    w->prev_recovery = s->in_recovery;
    w->prev_retrans = s->retrans;
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
    double mss = w->mss_bytes ? w->mss_bytes : 1448, win = s->cwnd_bytes / mss;
    double need = fmin(QW_CLEAN_PACKETS, 5.0 / 1.5 * win * win);

    /* delivered counts SACKed segments x MSS, which can step back a little as they are
     * cumulatively acked: never let that wrap */
    if (s->delivered_bytes <= w->clean_from_bytes)
        return 0;
    return (double)(s->delivered_bytes - w->clean_from_bytes) >= need * mss;
}

/* 1 if the standing queue proves the link is full and stays full through a cut now: the
 * queue in BDPs is at least (1 - beta) / beta. The proof assumes cuts come from a full
 * buffer; a loss seen at a queue clearly below one the buffer has held (less than
 * QW_QUEUE_SAME of it) is a random loss, which cuts again at any cwnd: the proof is void. */
static int link_full(const qw_window *w, const qw_sample *s)
{
    if (w->p.beta <= 0 || (w->events && w->loss_queue < QW_QUEUE_SAME * w->max_queue))
        return 0;
    return queue_bdps(w, s) >= (1.0 - w->p.beta) / w->p.beta;
}

/* 1 if the buffer has been seen to hold (1 - beta) / beta BDP: the largest standing queue
 * seen, slow-start's overshoot before the window opened included, was that deep. Every
 * queue seen is a depth the buffer holds, so a cut from a full buffer leaves cwnd at beta
 * x (1 + that depth) BDP or more, still the BDP: the link stays full through it, as
 * link_full's proof says of the queue seen now. Slow-start's overshoot is the usual
 * witness, as it ends on a full buffer: Reno at 100 Mbit/s x 140 ms, 2-BDP buffer, 4
 * streams showed 419 ms of smoothed RTT at its loss (2 BDP of queue), then cut to 1.5 BDP
 * and climbs back by one packet per round a stream, so that its queue reaches link_full's
 * 1 BDP only seconds later and a whole sawtooth cycle takes longer than a 20 s run.
 * Void, as link_full's proof is, once a loss came at a queue clearly below that depth. */
static int buffer_deep(const qw_window *w)
{
    double seen = fmax(w->max_queue, queue_at(w, w->seen_rtt_us));

    if (w->p.beta <= 0 || (w->events && w->loss_queue < QW_QUEUE_SAME * seen))
        return 0;
    return seen >= (1.0 - w->p.beta) / w->p.beta;
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
static int peaks_level(const qw_window *w)
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
 * QW_HOLD_LOSS_FREE when only the loss-free packets are missing). A cut sets cwnd to beta x cwnd, and the link stays full only
 * if that is still at least the BDP, i.e. if the queue at the cut is at least
 * (1 - beta) / beta x BDP (0.43 BDP for CUBIC, 1 BDP for Reno). So the window may stop when
 * - it holds whole sawtooth cycles (three or more, cut to cut: the loss-cycle basis) whose
 *   cwnd peaks do not fall (peaks_level: not slow-start's level falling to where random
 *   loss holds cwnd);
 * - or the standing queue proves a full buffer's cut now would leave the link full
 *   (link_full: a full buffer holds at least the queue seen now), or a deeper queue seen
 *   before did (buffer_deep) and a standing queue kept the link full throughout the
 *   counted part (link_busy), and enough packets went by without a loss to rule out random
 *   loss that would matter (loss_free);
 * - or cwnd does not matter: the stream spent most of the window limited by the
 *   receiver's window or its send buffer (no sawtooth then: cwnd stops growing). */
static qw_hold sawtooth_known(const qw_window *w, const qw_sample *s)
{
    double span_us = (s->t_s - w->start_t) * 1e6;

    if (w->p.bbr)
        return QW_HOLD_NONE;
    if (w->est.basis == QW_BASIS_LOSS_CYCLES && peaks_level(w))
        return QW_HOLD_NONE;
    if (span_us > 0 && (double)(s->limited_us - w->limited_us0) >= 0.5 * span_us)
        return QW_HOLD_NONE;
    if (!link_full(w, s) && !(buffer_deep(w) && link_busy(w)))
        return QW_HOLD_SAWTOOTH;
    return loss_free(w, s) ? QW_HOLD_NONE : QW_HOLD_LOSS_FREE;
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
    if (half_diff > w->p.tolerance)
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
     * larger cwnd only lengthens the queue): now and through a cut (link_full), or in
     * every counted slice (link_busy), so that no part of the estimate was read below it */
    if (e->basis != QW_BASIS_LOSS_CYCLES && w->climbing && !link_full(w, s) && !link_busy(w))
        return QW_HOLD_CLIMBING;
    if (w->bw_rising)
        return QW_HOLD_BW_RISING;
    saw = sawtooth_known(w, s);
    if (saw != QW_HOLD_NONE)
        return saw;
    return s->bbr_mode == QW_BBR_PROBE_RTT ? QW_HOLD_PROBE_RTT : QW_HOLD_NONE;
}

/* 1 if a disagreement of the halves (the second starting at slice mid) may be read as a
 * transient: on whole cycles, or with no congestion event in the second half (else the
 * halves are parts of a sawtooth cycle, and the cycles, once there are enough, decide). */
static int transient_may_go(const qw_window *w, int mid)
{
    return w->est.basis == QW_BASIS_LOSS_CYCLES || w->p.bbr ||
           w->s[w->n - 1].events == w->s[mid - 1].events;
}

/* 1 if the halves disagree (beyond the batches' scatter) while the flow was taking what
 * the path gives it throughout. Then a change of level is the path's doing (cross traffic
 * starting or stopping), not a transient of the flow's own, and it may come back at any
 * time; the window cannot know the schedule, so it does not converge.
 * - Loss-based cc: a standing queue of (1 - beta) / beta BDP in most slices of each half
 *   (mostly_full): the link is full, and the flow's rate is what the link gives it,
 *   whatever its cwnd does. Most, not every: when cross traffic stops, the queue it held
 *   drains for a round or two before the flow's cwnd refills it, and that dip is the
 *   change itself (an off-matrix path, 40 % cross traffic 2 s on / 3 s off, CUBIC: the
 *   queue fell to 0.3 BDP for one slice as the flow went from 30 to 50 Mbit/s; the window
 *   dropped the 30 as a transient three times and converged on the 50, +16 %). The flow's
 *   own transients (cwnd climbing back after HyStart, a sawtooth falling from slow-start's
 *   level, an overshoot's recovery) run without a standing queue for most of one half.
 * - BBR: PROBE_BW in every counted slice (PROBE_RTT left out). Its rate there is its
 *   bandwidth estimate x the gain cycle, and the estimate (a max over 10 rounds) moves
 *   only when the path's delivery rate does: a rise or fall of several tolerances between
 *   whole gain cycles is bandwidth that other traffic freed or took (an off-matrix path with
 *   40 % on / off cross traffic went from 150 to 250 Mbit/s a second into the window, and
 *   the window, after dropping the low part as a transient, read +23 %). With only three
 *   or so batches early on their scatter cannot be estimated; the caller's magnitude test
 *   (QW_LEVEL_CHANGE tolerances) stands alone then, as whole gain cycles of a steady BBR
 *   flow agree within a fraction of one. */
static int level_changed_at_full_link(const qw_window *w, int mid)
{
    if (w->p.bbr) {
        if (!w->halves_differ && w->est.batches >= 4)
            return 0;
        return all_probe_bw(w, w->first, w->n);
    }
    if (w->p.beta <= 0 || !w->halves_differ)
        return 0;
    return mostly_full(w, w->first, mid) && mostly_full(w, mid, w->n);
}

/* The two halves of the window disagree: the first half was still a transient (cwnd
 * climbing, a queue filling or draining), not steady state. Measure from the second half
 * on (it starts a batch, so on the loss-cycle basis it starts a cycle). */
static void drop_transient(qw_window *w, int mid)
{
    if (mid <= w->first || mid >= w->n)
        return;
    w->drops++;
    for (int i = w->first; i < mid; i++)
        w->est.start_bytes += w->s[i].bytes;
    w->first = mid;
    w->start_t = w->s[mid].t0;
    w->start_after_loss = w->est.basis == QW_BASIS_LOSS_CYCLES;
    w->est.excluded_s = 0;
    for (int i = mid; i < w->n; i++)
        if (w->s[i].excluded)
            w->est.excluded_s += w->s[i].t1 - w->s[i].t0;
}

/* Feed the next sample; returns the state after it (QW_OPEN while measuring). */
qw_state qw_feed(qw_window *w, const qw_sample *s)
{
    double half_diff = INFINITY;
    int full = 0, mid = 0;

    if (w->state != QW_OPEN)
        return w->state;
    if (s->min_rtt_us && (w->min_rtt_us == 0 || s->min_rtt_us < w->min_rtt_us))
        w->min_rtt_us = s->min_rtt_us;
    if (s->mss_bytes > w->mss_bytes)
        w->mss_bytes = s->mss_bytes;
    if (!w->started) {
        if (try_start(w, s))
            w->hold = QW_HOLD_FEW_BATCHES;
        else if (s->t_s - w->open_t >= w->p.max_s * QW_SLACK)
            qw_stop(w);
        return w->state;
    }
    count_events(w, s);
    if (s->bbr_mode == QW_BBR_PROBE_RTT)
        w->slice_probe_rtt = 1;
    if (s->bbr_mode != QW_BBR_PROBE_BW)
        w->slice_not_bw = 1;
    if (s->t_s - w->slice_t0 >= slice_len(w) * QW_SLACK) {
        close_slice(w, s);
        full = estimate(w, &half_diff, &mid);
        w->bw_rising = bw_rising(w);
        w->hold = converged(w, s, full, half_diff);
        if (w->hold == QW_HOLD_NONE) {
            w->state = QW_CONVERGED;
            w->end_t = s->t_s;
            return w->state;
        }
        if (full && half_diff > QW_LEVEL_CHANGE * w->p.tolerance && mid > w->first &&
            level_changed_at_full_link(w, mid))
            w->varying = 1;
        else if (w->bw_rising)
            drop_transient(w, climb_end(w));
        else if (full && half_diff > w->p.tolerance && mid > w->first &&
                 transient_may_go(w, mid))
            drop_transient(w, mid);
    }
    if (s->t_s - w->open_t >= w->p.max_s - 1e-9 || w->n >= QW_MAX_SLICES)
        qw_stop(w);
    return w->state;
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
    if (w->n && estimate(w, &half_diff, &mid) == 0 && w->est.batches == 0) {
        /* Too short for batches: the plain mean of what was counted, no interval. */
        double b = 0, t = 0;

        unit_sum(w, w->first, w->n, &b, &t);
        w->est.rate_bps = t > 0 ? b * 8.0 / t : 0;
        w->est.counted_s = t;
        w->est.ci_frac = -1;
    }
}

/* The latest estimate (rate 0 before the first batch). */
const qw_estimate *qw_result(const qw_window *w)
{
    return &w->est;
}

/* The share of the link a PROBE_RTT visit leaves idle. It does not stop the flow: each
 * stream keeps 4 packets in flight (tcp_bbr.c, bbr_cwnd_min_target), which deliver
 * 4 x MSS x streams per min RTT; only the rest of the BDP goes unfilled. With jumbo
 * frames, a short RTT or several streams that is far from all of it (8 streams of 9000
 * bytes on a 150 Mbit/s x 30 ms path kept two thirds of the rate through the visit). With
 * several streams out of step, each visit costs that stream's share less its 4 packets:
 * the same sum. */
static double probe_rtt_shortfall(const qw_window *w, double min_rtt_s)
{
    double bdp = w->est.rate_bps / 8.0 * min_rtt_s;
    double mss = w->mss_bytes ? w->mss_bytes : 1448;
    int streams = w->p.streams > 1 ? w->p.streams : 1;

    if (bdp <= 0)
        return 1;
    return fmax(0, 1 - BBR_CWND_MIN_PACKETS * mss * streams / bdp);
}

/* Seconds a PROBE_RTT visit keeps the flow at 4 packets a stream, plus the round in which
 * the pipe refills after it. tcp_bbr.c holds inflight at 4 packets for "max(200 ms, 1
 * round)", but it checks for the end only when an ACK arrives (bbr_update_min_rtt ->
 * bbr_check_probe_rtt_done), and with 4 packets in flight the ACKs come in one bunch a
 * round: the hold ends at the first bunch after 200 ms, a whole number of min RTTs. On a
 * 180 ms path that is 360 ms, not 200 (a lab run lost 0.55 s of delivery to its visit,
 * where 200 ms + a round predicted 0.38, and read +0.9 % high); below 100 ms the rounding
 * is under a round. */
static double probe_rtt_visit_s(double min_rtt_s)
{
    double hold = min_rtt_s * fmax(1, ceil(BBR_PROBE_RTT_S / min_rtt_s - 1e-6));

    return hold + min_rtt_s;
}

/* The prediction's 95 % half-width, as a fraction of p->rate_bps. Its parts, in quadrature:
 * - the rest of the run is a new stretch of the same process, whose own mean varies too
 *   (batch variance x batch length / its length, next to the window's counted_s): the
 *   window's variance grows by 1 + counted / rest;
 * - the end, which the window cannot see: the model drains the last bytes in one smoothed
 *   RTT, but recorded runs took one to four (a loss among the last bytes, a PROBE_RTT that
 *   falls in the drain; 5.5 with a tail loss's RTO on a 150 ms path, which this does not
 *   cover), the link idle for part of it: one RTT of the steady rate. With several streams,
 *   two: they finish unevenly (each drains what it still holds), and the last ones alone
 *   may not fill the pipe. In one bench run the 15 multi-stream validate runs left the link
 *   idle for 0 to 2.1 srtt of their drain (4 BBR streams at 10 Mbit/s x 150 ms: 0.5, 1.6
 *   and 2.1, 0.4-1.9 % of the run, against intervals of 1-2.5 %), the single-stream runs
 *   for none: a lone stream drains at the full rate;
 * - several BBR streams' PROBE_RTT visits: out of step, the other streams take up part of
 *   the share a visiting stream leaves, from none of it to nearly all (8 streams on a
 *   100 Mbit/s x 90 ms path lost a third of the cost the model counts): half that cost.
 * (Off the bench's matrix, 4- and 8-stream BBR runs read 0.2-1.1 % from their 20 s figure
 * with intervals of 0.06-0.24 %: 7 of 10 such converged runs fell outside.) */
static double prediction_ci(const qw_window *w, const qw_prediction *p, double full_s,
                            double rest, double steady)
{
    double fig = p->rate_bps * full_s / 8.0, rate = w->est.rate_bps / 8.0;
    double sampling = w->est.ci_frac * sqrt(1.0 + (rest > 0 ? w->est.counted_s / rest : 0)) *
                      steady / 8.0 / fig;
    double end = (w->p.streams > 1 ? 2 : 1) * rate * (w->slice_rtt_us / 1e6) / fig;
    double visits = w->p.streams > 1 ? 0.5 * rate * p->probe_rtt_s / fig : 0;

    return sqrt(sampling * sampling + end * end + visits * visits);
}

/* The figure a full run of full_s seconds would report (see quickwin.h). */
qw_prediction qw_predict(const qw_window *w, double full_s)
{
    qw_prediction p = { 0, -1, 0 };
    double rest, steady;

    if (w->start_t < 0 || w->est.rate_bps <= 0 || full_s <= 0)
        return p;
    /* The full run's figure is over its bytes' time: they are written until full_s and
     * the last is acked about one smoothed RTT later, the link busy all the while. */
    full_s += w->slice_rtt_us / 1e6;
    rest = fmax(0, full_s - w->start_t);
    /* BBR re-probes its min RTT when the estimate is 10 s old (4 packets a stream for
     * probe_rtt_visit_s), and the 10 s start again after it; the window left it out. */
    if (w->p.bbr) {
        double mrtt = (w->min_rtt_us ? w->min_rtt_us : w->slice_rtt_us) / 1e6;
        double prt = probe_rtt_visit_s(mrtt);

        p.probe_rtt_s = floor(full_s / (BBR_MIN_RTT_WIN_S + prt)) * prt *
                        probe_rtt_shortfall(w, mrtt);
    }
    p.probe_rtt_s = fmin(p.probe_rtt_s, rest);
    steady = w->est.rate_bps * (rest - p.probe_rtt_s);
    p.rate_bps = ((double)w->est.start_bytes * 8.0 + steady) / full_s;
    if (w->est.ci_frac >= 0 && p.rate_bps > 0)
        p.ci_frac = prediction_ci(w, &p, full_s, rest, steady);
    return p;
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
