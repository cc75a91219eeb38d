/* qwlevel.c: changes of level in the quick window (quickwin.h, qwint.h), and which of them are
 * the flow's own transients. A window whose halves disagree either saw the flow settle (cwnd
 * climbing back after slow-start, a queue filling or draining, BBR's bandwidth estimate still
 * rising), which it drops and measures on from, or saw the path change under a flow that
 * was taking all the link gave it (cross traffic starting or stopping), which may come back
 * at any time: that one holds the window open (varying) and its interval spans the levels
 * (qwbound.c). Also BBR's long-term bandwidth mode (qw_track_cruise) and STARTUP's plateau as
 * a level (qw_plateau_differs). */
#include "qwint.h"

#include <math.h>

#define QW_LT_ROUNDS 16         /* PROBE_BW at pacing gain 1 this many rounds (of the min RTT,
                                   or of the sampling period if longer: a phase shorter than a
                                   sample can fall between two; at 10 ms such gaps read up to
                                   8 periods of "cruise") is no gain cycle, whose cruise lasts
                                   6: tcp_bbr.c's long-term bandwidth mode, which holds for
                                   bbr_lt_bw_max_rtts = 48 */

/* Share of the counted slices [from, to) that held a standing queue (QW_BUSY_QUEUE BDP
 * through the slice, read from the smallest smoothed RTT over the streams); -1 for none. */
double qw_queued_share(const qw_window *w, int from, int to)
{
    int queued = 0, all = 0;

    for (int i = from; i < to; i++) {
        if (w->s[i].excluded)
            continue;
        all++;
        queued += w->s[i].q_lo_min >= QW_BUSY_QUEUE;
    }
    return all > 0 ? (double)queued / all : -1;
}

/* 1 if BBR was in PROBE_BW in every counted slice of [from, to) (PROBE_RTT left out). */
int qw_all_probe_bw(const qw_window *w, int from, int to)
{
    for (int i = from; i < to; i++)
        if (!w->s[i].excluded && !w->s[i].probe_bw)
            return 0;
    return 1;
}

/* The first counted slice at whose end BBR's bandwidth estimate was within QW_STATIONARY
 * of its latest value: where its climb ended (w->first when it did not climb). */
static int climb_end(const qw_window *w)
{
    double to = (double)w->s[w->n - 1].bw_bps;
    int k = w->first;

    while (k < w->n - 1 && (1.0 + QW_STATIONARY) * (double)w->s[k].bw_bps < to)
        k++;
    return k;
}

/* 1 if BBR's bandwidth estimate rose by more than QW_STATIONARY from the counted part's
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
 * the sum rose 10.7 -> 11.9 Mbit/s over 3 s at a rate flat at 9.6). Nor where the filter
 * is shorter than the sampling period (qw_bw_filter_smooth): two reads there are no trend. */
int qw_bw_rising(const qw_window *w)
{
    uint64_t from = w->s[w->first].bw_bps, to = w->s[w->n - 1].bw_bps;
    double bytes = 0, secs = 0;

    if (!w->p.bbr || from == 0 || w->n <= w->first || !qw_bw_filter_smooth(w) ||
        (double)to <= (1.0 + QW_STATIONARY) * (double)from)
        return 0;
    qw_unit_sum(w, w->first, w->n, &bytes, &secs);
    return secs > 0 && (double)from <= (1.0 + QW_STATIONARY) * 8.0 * bytes / secs;
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
 *   (qw_mostly_full): the link is full, and the flow's rate is what the link gives it,
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
 *   (QW_LEVEL_CHANGE) stands alone then, as whole gain cycles of a steady BBR
 *   flow agree within a fraction of one. */
static int level_changed_at_full_link(const qw_window *w, int mid)
{
    if (w->p.bbr) {
        if (!w->halves_differ && w->est.batches >= 4)
            return 0;
        return qw_all_probe_bw(w, w->first, w->n);
    }
    if (w->p.beta <= 0 || !w->halves_differ)
        return 0;
    return qw_mostly_full(w, w->first, mid) && qw_mostly_full(w, mid, w->n);
}

/* Count the slices from k on, those before it as delivered before the counted part;
 * after_loss: the counted part begins right after a cwnd reduction. */
void qw_count_from(qw_window *w, int k, int after_loss)
{
    w->est.start_bytes = w->start_delivered;
    for (int i = 0; i < k; i++)
        w->est.start_bytes += w->s[i].bytes;
    w->first = k;
    w->start_t = w->s[k].t0;
    w->start_after_loss = after_loss;
    w->est.excluded_s = 0;
    for (int i = k; i < w->n; i++)
        if (w->s[i].excluded)
            w->est.excluded_s += w->s[i].t1 - w->s[i].t0;
}

/* Loss-based cc: 1 if the counted slices [from, to) were the flow's own climb: cwnd grew
 * across them with no congestion event, and most held no standing queue (the link not
 * full), so the rate rose with cwnd, not with what the path gave. */
static int own_climb(const qw_window *w, int from, int to)
{
    double queued;

    if (w->p.bbr || w->p.beta <= 0 || to - from < 2 ||
        w->s[to - 1].events != (from > 0 ? w->s[from - 1].events : 0) ||
        w->s[to - 1].cwnd_bytes <= w->s[from].cwnd0_bytes)
        return 0;
    queued = qw_queued_share(w, from, to);
    return queued >= 0 && queued < 0.5;
}

/* 1 if every transient the window dropped was the flow's own climb (own_climb), the rate
 * never changed level with the link full, and the climb reached the link: most of the
 * counted slices after the drops held a standing queue. A HyStart exit that jitter brought
 * early does it: CUBIC on 150 Mbit/s x 70 ms left slow-start at 313 kB of a 1.3 MB BDP and
 * climbed to the link over 2.6 s, a change of level at every check; counting the climb as
 * levels the path set read 99.9 (44.8-146.9) against 138.4, where the link's rate with the
 * climb as slow-start's reads 138.2. What was dropped is no level the rest of the run
 * returns to. A climb that a random loss cut before the link filled is the sawtooth's, which
 * the rest of the run repeats: that one stays. */
int qw_only_own_climbs(const qw_window *w)
{
    return w->drops > 0 && w->climb_drops == w->drops && !w->varying &&
           qw_queued_share(w, w->first, w->n) > 0.5;
}

/* The two halves of the window disagree: the first half was still a transient (cwnd
 * climbing, a queue filling or draining), not steady state. Measure from the second half
 * on (it starts a batch, so on the loss-cycle basis it starts a cycle). */
static void drop_transient(qw_window *w, int mid)
{
    if (mid <= w->first || mid >= w->n)
        return;
    w->drops++;
    w->climb_drops += own_climb(w, w->first, mid);
    qw_count_from(w, mid, w->est.basis == QW_BASIS_LOSS_CYCLES);
}

/* BBR: keep the largest bandwidth estimate, and mark the long-term bandwidth mode when every
 * stream has paced at gain 1 for QW_LT_ROUNDS rounds (tcp_bbr.c, bbr_lt_bw_sampling: after
 * losses in several sampling intervals it pins its rate to the delivery rate averaged over
 * them, pacing gain 1, no gain cycle, for 48 rounds; lossy shallow buffers and cross traffic
 * trigger it as a policer does). */
void qw_track_cruise(qw_window *w, const qw_sample *s)
{
    double round_s = fmax((w->min_rtt_us ? w->min_rtt_us : s->rtt_us) / 1e6, w->p.sample_s);

    if (!w->p.bbr)
        return;
    if (s->bw_bps > w->bw_max_bps)
        w->bw_max_bps = s->bw_bps;
    if (!s->bbr_cruising) {
        w->cruise_t = -1;
        return;
    }
    if (w->cruise_t < 0)
        w->cruise_t = s->t_s;
    if (s->t_s - w->cruise_t >= QW_LT_ROUNDS * round_s)
        w->lt_bw = 1;
}

/* BBR: 1 if the window's counted slices, in PROBE_BW throughout (not the long-term
 * bandwidth mode) and half a gain cycle or more long (its one probe at 1.25 or drain at
 * 0.75 then moves their mean by at most a quarter round in four, 6 %), ran a change of
 * level away from STARTUP's plateau (ss_rate). In PROBE_BW the rate is the bandwidth
 * estimate x the gain cycle, and the estimate is the delivery rate the path gives the flow,
 * as the plateau was at STARTUP's end: a rate below it is bandwidth that other traffic took
 * since (a held-out run with 40 % cross traffic 2 s on / 3 s off converged inside an on
 * phase at -25 %), one above it bandwidth that other traffic freed (the default matrix's
 * cross-traffic row converged in off phases at +6.3 to +6.9 %, held-out runs read +15 % and
 * +17 %). The rest of the run may return to that level: the window does not converge
 * (varying), and its interval spans it (qw_bound). A rise counts above the most the
 * plateau can have read low (ss_rate_top; none when it may have read the ramp). */
int qw_plateau_differs(const qw_window *w)
{
    double bytes = 0, secs = 0, rate, round_s = w->min_rtt_us / 1e6;

    if (!w->p.bbr || w->ss_rate <= 0 || w->lt_bw || w->n == 0 ||
        !qw_all_probe_bw(w, w->first, w->n))
        return 0;
    qw_unit_sum(w, w->first, w->n, &bytes, &secs);
    if (secs < QW_BBR_GAIN_CYCLE / 2 * round_s * QW_SLACK || secs <= 0)
        return 0;
    rate = bytes / secs;
    if (w->ss_rate - rate > QW_LEVEL_CHANGE * rate)
        return 1;
    return w->ss_rate_top > 0 && rate - w->ss_rate_top > QW_LEVEL_CHANGE * rate;
}

/* After a slice whose gates held the window open: mark a change of level at a full link
 * (varying), or drop what the halves show was a transient (bw_rising: BBR's climb). */
void qw_follow_level(qw_window *w, int full, double half_diff, int mid)
{
    if (full && half_diff > QW_LEVEL_CHANGE && mid > w->first &&
        level_changed_at_full_link(w, mid))
        w->varying = 1;
    else if (w->bw_rising)
        drop_transient(w, climb_end(w));
    else if (full && half_diff > QW_STATIONARY && mid > w->first && transient_may_go(w, mid))
        drop_transient(w, mid);
}
