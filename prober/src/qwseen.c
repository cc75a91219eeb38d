/* qwseen.c: what the quick window learns outside its own slices (quickwin.h): what slow-start
 * witnessed before it opened (the overshoot's queue, a bound on the BDP, BBR's plateau) and
 * BBR's state from TCP_CC_INFO's gains. */
#include "qwint.h"

#include <math.h>
#include <stddef.h>

#define BBR_UNIT 256
#define QW_PLATEAU_SAMPLES 3    /* STARTUP's plateau spans at least this many samples */

/* Record the largest smoothed RTT seen before the window opened (see quickwin.h). */
void qw_seen_rtt(qw_window *w, uint32_t rtt_us)
{
    w->seen_rtt_us = rtt_us;
}

/* The RTT with no queue (see quickwin.h). */
uint32_t qw_no_queue_rtt_us(uint32_t srtt_floor_us, uint32_t min_rtt_us)
{
    return srtt_floor_us > min_rtt_us ? srtt_floor_us : min_rtt_us;
}

/* The standing queue over the smoothed RTT's floor (see quickwin.h). */
double qw_queue_over(uint32_t srtt_us, uint32_t srtt_floor_us, uint32_t min_rtt_us)
{
    uint32_t base = qw_no_queue_rtt_us(srtt_floor_us, min_rtt_us);

    if (base == 0 || srtt_us <= base)
        return 0;
    return ((double)srtt_us - base) / base;
}

/* The least smoothed RTT over the streams at s (0: none). */
uint32_t qw_srtt_lo(const qw_sample *s)
{
    return s->rtt_lo_us ? s->rtt_lo_us : s->rtt_us;
}

/* Lower *floor_us to s's least smoothed RTT if that is smaller. */
void qw_srtt_floor(uint32_t *floor_us, const qw_sample *s)
{
    uint32_t rtt = qw_srtt_lo(s);

    if (rtt && (*floor_us == 0 || rtt < *floor_us))
        *floor_us = rtt;
}

/* The BDP bound slow-start's queue at s gives, 0 if none (see quickwin.h). After a loss
 * cwnd is cut while the smoothed RTT still shows the queue the larger flight built, so
 * only samples before one count. */
uint64_t qw_slow_start_bdp(const qw_sample *s, uint32_t srtt_floor_us)
{
    double q;

    if (s->retrans != 0 || s->in_recovery || s->min_rtt_us == 0)
        return 0;
    q = qw_queue_over(s->rtt_us, srtt_floor_us, s->min_rtt_us);
    if (q < QW_BUSY_QUEUE)
        return 0;
    return (uint64_t)((double)s->cwnd_bytes / fmin(1.0, 2.0 * q));
}

/* Record slow-start's bound on the BDP (see quickwin.h). */
void qw_seen_bdp(qw_window *w, uint64_t bdp_bytes)
{
    w->ss_bdp_bytes = bdp_bytes;
}

/* Keep the largest smoothed RTT and the least BDP bound of the samples before the window. */
void qw_ss_see(qw_ss_seen *seen, const qw_sample *s)
{
    uint64_t bdp;

    qw_srtt_floor(&seen->srtt_floor_us, s);
    bdp = qw_slow_start_bdp(s, seen->srtt_floor_us);
    if (s->rtt_us > seen->peak_rtt_us)
        seen->peak_rtt_us = s->rtt_us;
    if (bdp && (seen->bdp_bytes == 0 || bdp < seen->bdp_bytes))
        seen->bdp_bytes = bdp;
    seen->t_s[seen->n % QW_SS_RING] = s->t_s;
    seen->delivered_bytes[seen->n % QW_SS_RING] = s->delivered_bytes;
    seen->limited_us[seen->n % QW_SS_RING] = s->limited_us;
    seen->queue[seen->n % QW_SS_RING] = qw_queue_over(qw_srtt_lo(s), seen->srtt_floor_us,
                                                       s->min_rtt_us);
    seen->min_rtt_us = s->min_rtt_us ? s->min_rtt_us : s->rtt_us;
    seen->n++;
}

/* Record STARTUP's plateau (see quickwin.h): the streams' delivery over the last two min
 * RTTs before slow-start ended, and at least QW_PLATEAU_SAMPLES sampling periods (an ACK's
 * jitter moves a span's ends: 2 ms at each end of 60 ms is 6.7 %, under a change of level).
 * With 20 ms samples and a min RTT under 20 ms that span reaches back past the plateau's
 * three rounds into the ramp, and may read it low (0.83-0.92 of the link on the large
 * matrix's 10 ms rows over 100 ms), or when no standing queue showed the link full
 * throughout it (a held-out 180 ms path with 0.2 % loss, whose recoveries slowed STARTUP's
 * ramp, read 109 Mbit/s of 150 with queues of 0-0.12 BDP): then it only bounds the rate the
 * path gave from below (ss_rate_top 0). The receive window or the socket buffer holding the
 * streams back for a share of the span reads it low by at most that share: 8 BBR streams on
 * 300 Mbit/s x 50 ms with 75 Mbit/s of cross traffic on, held back 7 % of the span, read
 * 223 Mbit/s, and a window in the off phase that followed 298. */
void qw_seen_plateau(qw_window *w, const qw_ss_seen *seen)
{
    int last = seen->n - 1, j;
    double rtt = seen->min_rtt_us / 1e6, span, held;

    if (!w->p.bbr || seen->n < 2 || rtt <= 0)
        return;
    span = fmax(2.0 * rtt, QW_PLATEAU_SAMPLES * w->p.sample_s) * QW_SLACK;
    for (j = last - 1; j > 0 && j > seen->n - QW_SS_RING; j--)
        if (seen->t_s[last % QW_SS_RING] - seen->t_s[j % QW_SS_RING] >= span)
            break;
    span = seen->t_s[last % QW_SS_RING] - seen->t_s[j % QW_SS_RING];
    if (span <= 0)
        return;
    w->ss_rate = (double)(seen->delivered_bytes[last % QW_SS_RING] -
                          seen->delivered_bytes[j % QW_SS_RING]) / span;
    /* held back for a share of the span, the streams delivered at most that share less */
    held = (double)(seen->limited_us[last % QW_SS_RING] - seen->limited_us[j % QW_SS_RING]) /
           (span * 1e6);
    /* (held back half the span or more, it says nothing: the window would have to double
     * it, and the limited time's counters are read once a sampling period) */
    w->ss_rate_top = span <= 3.0 * rtt && held < 0.5 ? w->ss_rate / (1.0 - held) : 0;
    for (int k = j; k <= last && w->ss_rate_top > 0; k++)
        if (seen->queue[k % QW_SS_RING] < QW_BUSY_QUEUE)
            w->ss_rate_top = 0;
}

/* The fastest delivery between two consecutive samples slow-start kept, bytes/s (0: fewer
 * than two): a rate the path carried, before any stall. */
static double ss_peak_rate(const qw_ss_seen *seen)
{
    double best = 0;

    for (int k = seen->n - 1; k > 0 && k > seen->n - QW_SS_RING; k--) {
        double dt = seen->t_s[k % QW_SS_RING] - seen->t_s[(k - 1) % QW_SS_RING];

        if (dt > 0)
            best = fmax(best, (double)(seen->delivered_bytes[k % QW_SS_RING] -
                                       seen->delivered_bytes[(k - 1) % QW_SS_RING]) / dt);
    }
    return best;
}

/* Tell a window just opened everything slow-start's samples witnessed (see quickwin.h). */
void qw_seen(qw_window *w, const qw_ss_seen *seen)
{
    w->ss_peak_rate = ss_peak_rate(seen);
    qw_seen_rtt(w, seen->peak_rtt_us);
    qw_seen_bdp(w, seen->bdp_bytes);
    qw_seen_plateau(w, seen);
    w->srtt_floor_us = seen->srtt_floor_us;
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

/* 1 if the gains are PROBE_BW's cruise: pacing gain 1, cwnd gain 2 (see quickwin.h). */
int qw_bbr_cruising(uint32_t pacing_gain, uint32_t cwnd_gain)
{
    return pacing_gain == BBR_UNIT && cwnd_gain == 2 * BBR_UNIT;
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
int qw_overshoot_step(int prev, int in_recovery, qw_bbr_mode mode, uint64_t ssthresh_prev_bytes)
{
    int in_ss = mode != QW_BBR_NONE ? mode == QW_BBR_STARTUP || mode == QW_BBR_DRAIN
                                    : ssthresh_prev_bytes == 0;

    return in_recovery && (prev || in_ss);
}

/* 1 if a stream's ssthresh is set anew: now differs from prev (quickwin.h). */
int qw_ssthresh_set(uint64_t prev, uint64_t now)
{
    return now > 0 && now != prev;
}

/* 1 if retransmissions between two samples are a loss the cc answered (qwint.h). */
int qw_loss_answered(int prev_rec, int rec, uint32_t prev_retrans, uint32_t retrans,
                     int ssthresh_set, int bbr)
{
    return retrans != prev_retrans && (bbr || rec || prev_rec || ssthresh_set);
}

/* 1 if one stream began a congestion event between two samples (see quickwin.h). */
int qw_stream_event(int prev_rec, int rec, uint32_t prev_retrans, uint32_t retrans,
                    int ssthresh_set, int bbr)
{
    return (rec && !prev_rec) ||
           (!rec && !prev_rec &&
            qw_loss_answered(prev_rec, rec, prev_retrans, retrans, ssthresh_set, bbr));
}
