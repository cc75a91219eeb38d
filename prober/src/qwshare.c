/* qwshare.c: whether the standing queue is the flow's own (Reno, CUBIC). The interval's
 * upper side stops at the capacity seen because a queue builds only at a full link, so a
 * flow that kept one had the link. That holds when the queue is the flow's own. With other
 * traffic through the same bottleneck the queue stands while the flow has only its share,
 * and the share moves for tens of seconds after a flow starts (a CUBIC flow against BBR on
 * 150 Mbit/s x 30 ms read 9.7 Mbit/s in its window, capped at 11.8, and 13.2 over 20 s).
 *
 * The queue tells which. Alone at a full link the queue holds what the flow has in flight
 * beyond the BDP and drains at the flow's own rate R, so between two congestion events its
 * smoothed RTT rises 1 / R for every byte cwnd grows (RTT = cwnd / R). With others in the
 * queue it drains at the link's rate C > R, and the RTT rises only 1 / C a byte (less still
 * while the others shrink, more while they grow as well). So R times the slope of the RTT
 * against cwnd, fitted within each growth period (the periods' levels apart), reads about 1
 * for a flow alone and the flow's share of the drain with others steady beside it. */
#include "qwint.h"

#include <math.h>

#define SHARE_MIN_ROUNDS 8 /* a period spans this many smoothed RTTs at least: the smoothed
                              RTT trails the queue by a few rounds (a 1/8 gain an ACK), and
                              a shorter sawtooth (10 Mbit/s x 10 ms with 9000-byte frames:
                              140 ms cycles) reads it flat */
#define SHARE_MIN_GROWTH 8 /* ... and cwnd grew by this many packets a stream in it: a
                              few packets' growth is within the RTT's own noise */
#define SHARE_MIN_POINTS 4

/* Fold the open growth period into the pooled fit if it qualifies (long and grown enough). */
static void fold_period(qw_share *sh, uint32_t mss_bytes, int streams)
{
    qw_share_period *p = &sh->open;
    double mean_rtt = p->n ? p->y0_s + p->sy / p->n : 0;
    double growth = (double)SHARE_MIN_GROWTH * qw_mss(mss_bytes) * streams;

    if (p->n >= SHARE_MIN_POINTS && p->t1 - p->t0 >= SHARE_MIN_ROUNDS * mean_rtt &&
        (double)(p->x_hi - p->x_lo) >= growth) {
        sh->sxx += p->sxx - p->sx * p->sx / p->n;
        sh->sxy += p->sxy - p->sx * p->sy / p->n;
        sh->syy += p->syy - p->sy * p->sy / p->n;
        sh->points += p->n;
        sh->rounds += fmin(p->n, (p->t1 - p->t0) / mean_rtt + 1);
        sh->periods++;
    }
}

/* Start a period at s's (cwnd, smoothed RTT). */
static void start_period(qw_share_period *p, double t_s, uint64_t cwnd_bytes, double rtt_s)
{
    *p = (qw_share_period){ .n = 1, .t0 = t_s, .t1 = t_s, .x0 = cwnd_bytes, .y0_s = rtt_s,
                            .x_lo = cwnd_bytes, .x_hi = cwnd_bytes };
}

/* Follow s (before qw_count_events sees it): a congestion event or a recovery closes the
 * growth period; a round after it, samples with a standing queue join it from the smoothed
 * RTT's lowest on (after a cut the queue drains while the flight falls to the new cwnd, and
 * the RTT falls with cwnd flat: that is not the queue following cwnd). */
void qw_track_share(qw_window *w, const qw_sample *s)
{
    qw_share *sh = &w->share;
    qw_share_period *p = &sh->open;
    uint32_t rtt_us = qw_srtt_lo(s);
    double rtt = rtt_us * 1e-6, x, y;

    if (w->p.bbr || w->p.beta <= 0)
        return;
    if (s->in_recovery || s->retrans != w->prev_retrans) {
        fold_period(sh, w->mss_bytes, qw_streams(w));
        p->n = 0;
        return;
    }
    if (rtt_us == 0 || s->t_s - w->event_t < 2.0 * rtt || qw_queue_at(w, rtt_us) < QW_BUSY_QUEUE)
        return;
    if (p->n == 0 || rtt <= p->y0_s) {
        start_period(p, s->t_s, s->cwnd_bytes, rtt);
        return;
    }
    x = (double)s->cwnd_bytes - (double)p->x0;
    y = rtt - p->y0_s;
    p->n++;
    p->t1 = s->t_s;
    p->sx += x;
    p->sy += y;
    p->sxx += x * x;
    p->sxy += x * y;
    p->syy += y * y;
    if (s->cwnd_bytes < p->x_lo)
        p->x_lo = s->cwnd_bytes;
    if (s->cwnd_bytes > p->x_hi)
        p->x_hi = s->cwnd_bytes;
}

/* The window's fit with its open growth period folded in, if that qualifies. */
static qw_share pooled(const qw_window *w)
{
    qw_share sh = w->share;

    if (sh.open.n)
        fold_period(&sh, w->mss_bytes, qw_streams(w));
    return sh;
}

/* The flow's rate times the slope of the pooled fit sh; NAN when no period qualified. */
static double share_of(const qw_window *w, const qw_share *sh)
{
    if (w->p.bbr || w->p.beta <= 0 || w->est.rate_bps <= 0)
        return NAN;
    if (sh->periods == 0 || sh->sxx <= 0)
        return NAN;
    return w->est.rate_bps / 8.0 * sh->sxy / sh->sxx;
}

/* The flow's share of the queue's drain (quickwin.h): its rate times the slope of the
 * smoothed RTT against cwnd over the growth periods; NAN when no period qualified. */
double qw_queue_share(const qw_window *w)
{
    qw_share sh = pooled(w);

    return share_of(w, &sh);
}

/* 1 if the pooled fit's slope is above 0 at one-sided 95 %: the smoothed RTT rose with cwnd
 * by more than its scatter about the fit explains. The samples come faster than the round
 * trips on long paths, and the smoothed RTT of one round trip is one reading of the queue,
 * so the slope's standard error counts the rounds the samples span, not the samples. */
static int slope_rose(const qw_share *sh)
{
    int dof = (int)sh->rounds - (int)sh->periods - 1;
    int dof_fit = (int)sh->points - (int)sh->periods - 1;
    double slope, resid, se;

    if (sh->periods == 0 || sh->sxx <= 0 || dof < 1 || dof_fit < 1)
        return 0;
    slope = sh->sxy / sh->sxx;
    resid = fmax(0, sh->syy - slope * sh->sxy);
    se = sqrt(resid / dof_fit / sh->sxx * sh->points / sh->rounds);
    return slope - qw_t_quantile(dof, 0.10) * se > 0;
}

/* 1 if the standing queue was shown shared (quickwin.h: QW_SHARED). */
int qw_queue_shared(const qw_window *w)
{
    double share = qw_queue_share(w);

    return !isnan(share) && share < QW_SHARED;
}

/* The flow's share of a queue shown shared (qw_queue_shared) whose slope rose, so that its
 * drain names a rate (qw_shared_ceiling); 0 otherwise. A slope within the smoothed RTT's
 * scatter names none: under delay jitter the RTT moves with the jitter, not with cwnd, and
 * a flow whose cwnd does not build the queue reads a slope near 0 either side of it, whose
 * inverse is no rate of the link's (a Reno flow at 46 Mbit/s on 150 Mbit/s x 15 ms with
 * 3 ms jitter read shares of 0.06 and 0.09, and upper ends of 742 and 533 Mbit/s). */
double qw_drained_share(const qw_window *w)
{
    qw_share sh = pooled(w);
    double share = share_of(w, &sh);

    /* NAN (no reading) compares false */
    return share > 0 && share < QW_SHARED && slope_rose(&sh) ? share : 0;
}

/* Where the standing queue was shown shared (qw_queue_shared), the upper side of the steady
 * rate over the run pr predicts: the counted part at the rate measured, then the link's rate
 * as the queue drained (the flow's rate over its share: 1 / the slope of the RTT against
 * cwnd); 0 where the queue was not shown shared. The flow had a share of the link, and a new
 * flow's share moves for tens of seconds (loss-based flows converge by their cuts, BBR by
 * its probes) or jumps when the others stop: a CUBIC flow against CUBIC on 100 Mbit/s x
 * 40 ms read 41.3 Mbit/s, flat, for 2 s while both grew, and made 43.6 over 20 s, 45-49 a
 * second from 7 s on. Nothing in a window of seconds says where the share settles, only
 * what the link drains. With the others growing as well the drain reads below the link's
 * rate (the RTT rises for their bytes too), at it while they hold steady, and above it only
 * while they leave; a slope that did not rise (share 0 or less: the others left as fast as
 * the flow grew) names no rate. */
double qw_shared_ceiling(const qw_window *w, const qw_prediction *pr)
{
    double share = qw_drained_share(w), rate = w->est.rate_bps / 8.0;
    double done = qw_counted_s(w), to_go = pr->rest_s - done;

    if (share == 0 || rate <= 0 || to_go <= 0)
        return 0;
    return (rate * done + rate / share * to_go) / pr->rest_s;
}
